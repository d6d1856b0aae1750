"""Iteration and prompt pages in headless Chromium: every link resolves, the trajectory table
matches the rollout files, failures are marked, hostile html() loads nothing, both widths fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from browser_runs import file_url, linked_pages
from rlio_cdp import Page, png_stats

from rlio import RunWriter, layout
from rlio.demo import run_demo
from rlio.logtree.iteration_page import trajectory
from rlio.report import write_run_report

pytestmark = pytest.mark.browser

_CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "cases"
_HREFS_JS = "Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"
_ROWS_JS = """Array.from(document.querySelectorAll('table.traj-table tbody tr')).map(r =>
  [Number(r.dataset.group), Number(r.dataset.traj), r.classList.contains('fail'),
   r.querySelector('.fail-mark') !== null])"""
_HOSTILE_HTML = [
    '<meta http-equiv="refresh" content="0;url=http://example.invalid/meta">',
    '<base href="http://example.invalid/base/"><a href="x.html">relative</a>',
    '<form action="http://example.invalid/form"><input name="q"><button>go</button></form>',
    '<iframe src="http://example.invalid/frame"></iframe>',
    '<img src="http://example.invalid/pixel.png" onerror="document.title=\'pwned\'">',
    '<div onmouseover="document.title=\'pwned\'" style="background:url(http://example.invalid/s)">'
    "hover</div>",
    '<object data="http://example.invalid/obj"></object><embed src="http://example.invalid/e">',
    '<link rel="stylesheet" href="http://example.invalid/css"><style>@import "http://'
    'example.invalid/i";</style><script src="http://example.invalid/js"></script>',
    '<a href="javascript:document.title=\'pwned\'">js</a><a href="data:text/html,x">data</a>',
]


def _local_target(href: str) -> Path | None:
    """The file a ``file://`` link points at (fragment dropped), None for other schemes."""
    url = urlparse(href)
    return Path(unquote(url.path)) if url.scheme == "file" else None


def _crawl(page: Page, start: Path) -> set[Path]:
    """Open every page reachable from ``start`` by links; each loads clean, every link resolves."""
    seen: set[Path] = set()
    todo = [start]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        url = file_url(path)
        page.navigate(url, settle=0.05)
        assert page.record.errors() == [], f"{path}: console errors"
        assert page.record.foreign_requests(url) == [], f"{path}: requests left the page"
        for href in page.evaluate(_HREFS_JS):
            target = _local_target(href)
            assert target is not None, f"{path}: link {href} leaves the run"
            assert target.is_file(), f"{path}: broken link {href}"
            if target.suffix == ".html" and not target.name.startswith("timing_gantt"):
                todo.append(target)
    return seen


def _rollouts(path: Path) -> list[tuple[int, int, bool]]:
    """(group, traj, failing) of each line of a rollout summaries file, in file order."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            t = trajectory(json.loads(line), "", 0)
            out.append((t.group, t.traj, t.failing))
    return out


def _check_tables(page: Page, run: Path) -> int:
    """Every rollout file's rows show on its iteration page, failing ones marked."""
    checked = 0
    for target in linked_pages(run):
        if "timing_gantt" in target.name:
            continue
        rel = target.relative_to(run).as_posix().removeprefix("report/")
        rollouts = run / layout.twin_path(layout.parse_path(rel), "rollout_summaries")
        page.navigate(file_url(target), settle=0.05)
        rows = page.evaluate(_ROWS_JS)
        want = _rollouts(rollouts) if rollouts.is_file() else []
        assert [(g, t) for g, t, _, _ in rows] == [(g, t) for g, t, _ in want], target
        assert [(f, m) for _, _, f, m in rows] == [(f, f) for _, _, f in want], target
        checked += bool(want)
    return checked


# The flat layout's links are also walked on the cookbook's flat run below; its own round is slow.
@pytest.mark.parametrize("run_layout", [pytest.param("flat", marks=pytest.mark.slow), "nested"])
def test_rlio_run_pages_link_and_tables_match(tmp_path: Path, page: Page,
                                              run_layout: layout.Layout) -> None:
    """An rlio-written run: report, iteration and prompt pages all load clean, every link
    resolves, each table has one row per rollout line and every failing row is marked."""
    run = tmp_path / "run"
    run_demo(run, layout=run_layout, iterations=4, seed=3)
    report = Path(write_run_report(run))
    seen = _crawl(page, report)
    assert set(linked_pages(run)) <= seen
    assert any("/prompts/" in p.as_posix() for p in seen)
    assert _check_tables(page, run) >= 4
    page.navigate(file_url(report))
    assert page.evaluate("document.querySelectorAll('#rewards g.box').length") >= 4


@pytest.mark.parametrize("case", ["cookbook_quirks_flat", "cookbook_quirks_nested"])
def test_cookbook_run_pages_link_and_tables_match(tmp_path: Path, page: Page, case: str) -> None:
    """A cookbook-written run gets rlio's pages beside the report: all links resolve (to the
    cookbook's pages too), tables match the rollout files, failing rows are marked."""
    source = _CORPUS / case / "run"
    if not source.is_dir():
        pytest.fail(f"conformance case {case} is missing from {_CORPUS}")
    run = tmp_path / case
    shutil.copytree(source, run, symlinks=True)
    report = Path(write_run_report(run))
    seen = _crawl(page, report)
    assert set(linked_pages(run)) <= seen
    assert any(p.is_relative_to(run / "report") for p in seen)
    _check_tables(page, run)


def test_transcript_links_open_the_trajectory(tmp_path: Path, page: Page) -> None:
    """A row's transcript link lands on that trajectory's conversation, its group expanded."""
    run = tmp_path / "run"
    run_demo(run, iterations=2, seed=4)
    write_run_report(run)
    target = run / "train_iteration_000001.html"
    page.navigate(file_url(target))
    page.click("table.traj-table tbody tr a")
    page.pump(0.3)
    assert page.evaluate("location.hash") == "#traj-0-0"
    assert page.evaluate("document.getElementById('traj-0-0').closest('details').open") is True


def test_hostile_html_never_reaches_the_page(tmp_path: Path, page: Page) -> None:
    """meta refresh, base, forms, frames, handlers and remote URLs given to html() are gone: the
    page stays put, makes no request and logs no error, before and after report rewrites it."""
    run = tmp_path / "run"
    with RunWriter(run) as w:
        w.log_metrics({"step": 0, "env/all/reward/total": 0.0})
        with w.logtree(0, title="hostile") as lt, lt.section("Group Rollout"):
            for raw in _HOSTILE_HTML:
                lt.html(raw)
    html = run / layout.iteration_path("flat", 0, "html")
    for when in ("written", "reported"):
        if when == "reported":
            write_run_report(run)
        url = file_url(html)
        page.navigate(url, settle=1.5)  # a meta refresh of 0 s would have fired by now
        assert page.evaluate("location.href") == url, when
        assert page.evaluate("document.title") == "hostile", when
        assert page.record.errors() == [], when
        assert page.record.foreign_requests(url) == [], when
        body = page.evaluate("document.body.innerHTML")
        for banned in ("<meta", "<base", "<form", "<iframe", "<object", "<embed", "<script",
                       "<style", "onerror", "onmouseover", "javascript:", "example.invalid"):
            assert banned not in body, (when, banned)


# test_browser_widths.py checks every page kind for overflow at 390, 1280 and 1920 px; the
# desktop round of this one (blank-page check too) is slow.
@pytest.mark.parametrize("width", [pytest.param(1280, marks=pytest.mark.slow), 390])
def test_pages_fit_desktop_and_phone_widths(tmp_path: Path, page: Page, width: int) -> None:
    """The report, an iteration page and a prompt page are not blank and never scroll sideways."""
    run = tmp_path / "run"
    run_demo(run, iterations=3, seed=5)
    report = Path(write_run_report(run))
    prompt = next((run / "report" / "prompts").glob("*.html"))
    page.send("Emulation.setDeviceMetricsOverride", width=width, height=900,
              deviceScaleFactor=1, mobile=width < 600)
    for target in (report, run / "train_iteration_000001.html", prompt):
        page.navigate(file_url(target))
        page.send("Runtime.evaluate", expression="document.querySelectorAll('details')"
                  ".forEach(d => d.open = true)")
        page.pump(0.1)
        scroll, inner = page.evaluate(
            "[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert scroll <= inner, (target.name, width, scroll, inner)
        colours, variance = png_stats(page.screenshot(scale=0.5))
        assert colours > 20 and variance > 50, (target.name, width, colours, variance)
