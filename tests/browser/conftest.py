"""Fixtures of the browser tests: one headless Chromium per session, a fresh page per test.

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


@pytest.fixture(scope="session")
def _shared_browser() -> Iterator[list[Browser]]:
    """The session's headless Chromium (own profile, own process group), killed at the end;
    started on first use (its start-up is most of a short browser test), restarted if it died."""
    held: list[Browser] = []
    try:
        yield held
    finally:
        for b in held:
            b.close()


@pytest.fixture
def browser(_shared_browser: list[Browser]) -> Browser:
    """The session's headless Chromium (a fresh page per test keeps tests apart)."""
    reason = chromium_missing()
    if reason:
        pytest.skip(reason)
    if _shared_browser and not _shared_browser[0].alive():
        _shared_browser.pop().close()
    if not _shared_browser:
        _shared_browser.append(Browser())
    return _shared_browser[0]


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page (its own tab) with console, log and network recording on; closed after."""
    p = browser.new_page()
    try:
        yield p
    finally:
        browser.close_page(p)
