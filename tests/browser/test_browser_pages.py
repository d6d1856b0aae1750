"""The demo run's pages in headless Chromium: clean loads, every message shown, charts counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_runs import (
    conversation_messages,
    expected_points,
    file_url,
    html_pages,
    linked_pages,
    logtree_twin,
    message_texts,
    read_json,
    squash,
)
from rlio_cdp import Page, png_stats

from rlio import layout
from rlio.demo import run_demo
from rlio.report import write_run_report

pytestmark = pytest.mark.browser

_MESSAGES_JS = """Array.from(document.querySelectorAll('.msg[data-role]'))
  .map(e => [e.dataset.role, e.textContent])"""


def _open_clean(page: Page, path: Path) -> str:
    url = file_url(path)
    page.navigate(url)
    assert page.record.errors() == [], f"{path.name}: console errors"
    assert page.record.foreign_requests(url) == [], f"{path.name}: network requests"
    return url


def _assert_not_blank(page: Page) -> None:
    colours, variance = png_stats(page.screenshot(scale=0.25))
    assert colours > 20 and variance > 50, f"blank screenshot: {colours} colours, var {variance}"


@pytest.mark.parametrize("run_layout", ["flat", "nested"])
def test_demo_iteration_pages_show_every_message(
    tmp_path: Path, page: Page, run_layout: layout.Layout
) -> None:
    """Each iteration page loads with no console error or request and shows every message."""
    run = tmp_path / "run"
    run_demo(run, layout=run_layout, iterations=3, seed=1)
    pages = html_pages(run)
    assert len(pages) >= 4  # 3 training pages and at least one evaluator page
    for i, path in enumerate(pages):
        _open_clean(page, path)
        expected = conversation_messages(read_json(logtree_twin(path)))
        shown = page.evaluate(_MESSAGES_JS)
        assert len(shown) == len(expected), path.name
        assert expected, f"{path.name} has no conversation to check"
        for (role, text), msg in zip(shown, expected, strict=True):
            assert role == msg["role"]
            for piece in message_texts(msg):
                assert squash(piece) in squash(text), (path.name, msg["role"], piece[:80])
        if i == 0:
            _assert_not_blank(page)


@pytest.mark.parametrize("run_layout", ["flat", "nested"])
def test_demo_report_loads_clean_with_counted_charts(
    tmp_path: Path, page: Page, run_layout: layout.Layout
) -> None:
    """The report loads cleanly; each chart draws one point per logged step; links all work."""
    run = tmp_path / "run"
    run_demo(run, layout=run_layout, iterations=6, seed=2)
    report = Path(write_run_report(run))
    _open_clean(page, report)
    _assert_not_blank(page)
    charts = page.evaluate("""Array.from(document.querySelectorAll('figure[data-metric]'))
      .map(f => {
        const line = f.querySelector('polyline');
        return [f.dataset.metric, Number(line.dataset.points), line.points.numberOfItems,
                f.querySelectorAll('circle').length];
    })""")
    keys = [c[0] for c in charts]
    assert keys[:2] == ["env/all/reward/total", "progress/done_frac"]
    assert any(k.startswith("optim/kl_sample_train") for k in keys)
    for key, declared, drawn, markers in charts:
        want = expected_points(run, key)
        assert (declared, drawn, markers) == (want, want, want), key
    assert sum(c[1] for c in charts) > 0
    hrefs = page.evaluate("Array.from(document.querySelectorAll('#iterations a')).map(a => a.href)")
    assert sorted(hrefs) == sorted(file_url(p) for p in linked_pages(run))
    first = page.evaluate("document.querySelector('#iterations a').href")
    page.click("#iterations a")
    page.wait_event("Page.loadEventFired")
    assert page.evaluate("location.href") == first
    assert page.evaluate("document.querySelectorAll('.msg').length") > 0
