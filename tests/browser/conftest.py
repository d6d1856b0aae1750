"""Fixtures of the browser tests: one headless Chromium per test, always killed afterwards.

The tests are marked ``browser``; where Debian's ``chromium`` is not installed they are skipped
with a reason saying so (``.ci/run`` installs it, so in CI they run).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from rlio_cdp import CHROMIUM, Browser, Page


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not os.access(CHROMIUM, os.X_OK):
        return (f"headless Chromium not found at {CHROMIUM} (install Debian's package: "
                "apt-get install -y chromium; .ci/run does)")
    return None


@pytest.fixture
def browser() -> Iterator[Browser]:
    """A fresh headless Chromium (own profile, own process group), killed at teardown."""
    reason = chromium_missing()
    if reason:
        pytest.skip(reason)
    b = Browser()
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def page(browser: Browser) -> Page:
    """A blank page of the test's browser, with console, log and network recording on."""
    return browser.new_page()
