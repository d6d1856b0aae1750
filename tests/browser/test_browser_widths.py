"""Every page rlio writes, in headless Chromium at 390, 1280 and 1920 px: nothing overflows
sideways and no header, run name or metric key breaks in the middle of a word."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from browser_runs import file_url
from realistic import realistic_run
from rlio_cdp import Page

from rlio.logtree import LogTree
from rlio.report import write_run_report
from rlio.report.sweep import write_comparison

pytestmark = pytest.mark.browser

#: Words (split at spaces and after a /) of headers, names and keys drawn on two lines.
_BROKEN_JS = r"""(() => {
  const bad = [];
  const sel = 'th, h1, h2, h3, dt, dd, .run, td[data-col=name], .legend-runs span, nav a';
  for (const el of document.querySelectorAll(sel)) {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walk.nextNode())) {
      const re = /[^\s\/]+/g;
      let m;
      while ((m = re.exec(node.data))) {
        const r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0)
                                                     .map(x => Math.round(x.top)));
        if (tops.size > 1) bad.push(m[0]);
      }
    }
  }
  return bad;
})()"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A report (with its iteration and prompt pages), a compare page of two sweep runs named
    like hyper-parameters, and a logtree page as a writer writes it."""
    root = tmp_path_factory.mktemp("widths")
    sweep = root / "sweep"
    runs = [realistic_run(sweep, "math", seed=s, iterations=3) for s in (0, 1)]
    named = [sweep / "lr1e-4", sweep / "lr3e-5_group_size16"]
    for run, name in zip(runs, named, strict=True):
        run.rename(name)
    async_run = realistic_run(root, "async", iterations=3)
    write_run_report(async_run)
    out, _ = write_comparison([str(p) for p in named], str(root / "compare.html"), jobs=1)
    lt = LogTree("A logtree page with a long title that must wrap at spaces only")
    with lt.section("Group Rollout"):
        lt.table({"reward": 1.0, "kl_sample_train_v1": 0.01}, caption="Reward components")
    (root / "logtree.html").write_text(lt.to_html())
    prompt = sorted((async_run / "report" / "prompts").glob("*.html"))[0]
    return {"report": async_run / "report.html",
            "iteration": async_run / "train_iteration_000002.html", "prompt": prompt,
            "compare": Path(out), "logtree": root / "logtree.html"}


def test_no_page_overflows_or_breaks_a_word(pages: dict[str, Path], page: Page) -> None:
    """At 390, 1280 and 1920 px each page fits the window (wide tables scroll in their own box)
    and its headers, run names and keys wrap only between words or after a "/"."""
    shots = os.environ.get("RLIO_SCREENSHOTS")
    for width in (390, 1280, 1920):
        page.send("Emulation.setDeviceMetricsOverride", width=width, height=900,
                  deviceScaleFactor=1, mobile=width < 600)
        for name, path in pages.items():
            page.navigate(file_url(path), settle=0.05)
            assert page.record.errors() == [], name
            scroll, inner = page.evaluate(
                "[document.scrollingElement.scrollWidth, window.innerWidth]")
            assert scroll <= inner, (name, width, scroll, inner)
            assert page.evaluate(_BROKEN_JS) == [], (name, width)
            if shots:  # for a person to look at: RLIO_SCREENSHOTS=folder
                png = page.screenshot(full_page=False)
                Path(shots, f"{name}-{width}.png").write_bytes(
                    png if isinstance(png, bytes) else base64.b64decode(png))


def test_the_check_sees_a_word_broken_in_two(tmp_path: Path, page: Page) -> None:
    """The broken-word check flags a header squeezed until a word splits (it can fail)."""
    html = tmp_path / "squeezed.html"
    html.write_text('<!doctype html><h3 style="width:40px;overflow-wrap:anywhere">iterations '
                    "status</h3>")
    page.navigate(file_url(html))
    assert "iterations" in page.evaluate(_BROKEN_JS)
