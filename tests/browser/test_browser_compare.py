"""The comparison page of ``rlio compare`` in headless Chromium: links, safety and widths."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

import factories
import pytest
from browser_runs import file_url
from rlio_cdp import Page

from rlio.report.sweep import write_comparison

pytestmark = pytest.mark.browser

_LINKS_JS = "Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"


def test_compare_page_links_resolve_and_load_clean(tmp_path: Path, page: Page) -> None:
    """With --reports, every link of the page (run reports, transcripts of both runs) opens an
    existing page with its anchor present, and neither page logs an error or makes a request."""
    sweep = factories.seeded_sweep(tmp_path)
    out, _ = write_comparison([str(sweep / "lr-1e-5"), str(sweep / "lr-4e-5")],
                              str(tmp_path / "compare.html"), jobs=1, reports=True)
    url = file_url(out)
    page.navigate(url)
    assert page.record.errors() == []
    assert page.record.foreign_requests(url) == []
    assert page.evaluate("document.querySelectorAll('svg.overlay').length") == 2
    links = [h for h in page.evaluate(_LINKS_JS) if not h.startswith(url + "#")]
    reports = [h for h in links if h.endswith("/report.html")]
    transcripts = [h for h in links if "#traj-" in h]
    assert len(reports) == 2 and len(transcripts) == 12
    for href in links:
        parsed = urlparse(href)
        assert parsed.scheme == "file" and Path(unquote(parsed.path)).is_file(), href
    for href in transcripts[:4]:  # the anchor exists on the rewritten iteration page
        page.navigate(href)
        assert page.record.errors() == [], href
        anchor = unquote(urlparse(href).fragment)
        assert page.evaluate(f"document.getElementById({anchor!r}) !== null"), href


def test_compare_page_fits_desktop_and_phone_widths(tmp_path: Path, page: Page) -> None:
    """At 1280 and 390 px the page of the whole seeded sweep never scrolls sideways (wide tables
    scroll inside their own box) and its charts are drawn within the window."""
    sweep = factories.seeded_sweep(tmp_path)
    out, _ = write_comparison([str(sweep)], str(tmp_path / "compare.html"), jobs=1,
                              baseline="lr-1e-5/base")
    for width in (1280, 390):
        page.send("Emulation.setDeviceMetricsOverride", width=width, height=900,
                  deviceScaleFactor=1, mobile=width < 600)
        page.navigate(file_url(out))
        assert page.record.errors() == []
        scroll, inner = page.evaluate(
            "[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert scroll <= inner, (width, scroll, inner)
        widths = page.evaluate("Array.from(document.querySelectorAll('svg.overlay'))"
                               ".map(s => s.getBoundingClientRect().width)")
        assert widths and all(0 < w <= inner for w in widths), (width, widths)
