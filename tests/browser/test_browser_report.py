"""The run report in headless Chromium: long runs, cookbook runs, colour schemes and print."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from browser_runs import expected_points, file_url, html_pages, linked_pages
from rlio_cdp import Page

from rlio.report import write_run_report

pytestmark = pytest.mark.browser

_CHARTS_JS = """Array.from(document.querySelectorAll('figure[data-metric]')).map(f => {
    const line = f.querySelector('polyline');
    return [f.dataset.metric, Number(line.dataset.points), Number(line.dataset.total),
            line.points.numberOfItems, f.querySelectorAll('circle').length];
})"""
_CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "cases"


def test_long_run_report_draws_at_most_a_thousand_points(tmp_path: Path, page: Page) -> None:
    """A 5,000-step run is drawn downsampled: <= 1,000 points per chart, the total declared."""
    run = tmp_path / "long"
    run.mkdir()
    with (run / "metrics.jsonl").open("w") as f:
        for i in range(5000):
            f.write(json.dumps({"step": i, "env/all/reward/total": math.sin(i / 300),
                                "progress/done_frac": (i + 1) / 5000}) + "\n")
    page.navigate(file_url(write_run_report(run, validate=False)))
    assert page.record.errors() == []
    charts = {c[0]: c[1:] for c in page.evaluate(_CHARTS_JS)}
    declared, total, drawn, markers = charts["env/all/reward/total"]
    assert 900 <= declared <= 1000 and drawn == declared and total == 5000 and markers == 0
    assert "optim/entropy" not in charts  # not logged: no empty chart
    notes = page.evaluate("document.querySelector('figure[data-metric=\"env/all/reward/total\"]')"
                          ".textContent")
    assert "downsampled" in notes


@pytest.mark.parametrize("case", ["cookbook_quirks_flat", "cookbook_quirks_nested",
                                  "resumed_run", "torn_metrics"])
def test_cookbook_runs_report_loads_clean(tmp_path: Path, page: Page, case: str) -> None:
    """Reports of cookbook-written runs (NaN tokens, torn tails, resumes) load clean and count."""
    source = _CORPUS / case / "run"
    if not source.is_dir():
        pytest.fail(f"conformance case {case} is missing from {_CORPUS}")
    run = tmp_path / case
    shutil.copytree(source, run, symlinks=True)
    report = write_run_report(run)
    page.navigate(file_url(report))
    assert page.record.errors() == []
    assert page.record.foreign_requests(page.url) == []
    for key, declared, _total, drawn, markers in page.evaluate(_CHARTS_JS):
        want = expected_points(run, key)
        assert (declared, drawn, markers) == (want, want, want), key
    hrefs = page.evaluate("Array.from(document.querySelectorAll('#iterations a')).map(a => a.href)")
    assert sorted(hrefs) == sorted(file_url(p) for p in linked_pages(run))
    for path in html_pages(run):  # the cookbook's own pages open without errors too
        page.navigate(file_url(path))
        assert page.record.errors() == [], path.name
        assert page.record.foreign_requests(page.url) == [], path.name


def _luminance(css_colour: str) -> float:
    inner = css_colour[css_colour.index("(") + 1:css_colour.index(")")]
    r, g, b = (float(v) for v in inner.split(",")[:3])
    return 0.299 * r + 0.587 * g + 0.114 * b


def test_report_follows_colour_scheme_and_prints(tmp_path: Path, page: Page) -> None:
    """The report is light or dark with the reader's setting and prints without navigation."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0, "env/all/reward/total": 1}\n')
    page.navigate(file_url(write_run_report(run, validate=False)))
    colours = {}
    for scheme in ("light", "dark"):
        page.send("Emulation.setEmulatedMedia",
                  features=[{"name": "prefers-color-scheme", "value": scheme}])
        colours[scheme] = page.evaluate(
            "[getComputedStyle(document.body).backgroundColor,"
            " getComputedStyle(document.body).color]")
    assert _luminance(colours["light"][0]) > 200 > 60 > _luminance(colours["dark"][0])
    assert _luminance(colours["dark"][1]) > 150
    page.send("Emulation.setEmulatedMedia", media="print",
              features=[{"name": "prefers-color-scheme", "value": "dark"}])
    assert page.evaluate("getComputedStyle(document.querySelector('.toc')).display") == "none"
    assert _luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")) > 200
