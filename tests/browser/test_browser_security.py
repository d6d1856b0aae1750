"""Hostile model text in iteration pages and in the report is shown as text and never runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_runs import file_url
from rlio_cdp import Page

from rlio.findings import Report, finding
from rlio.logtree import LogTree
from rlio.report import reading, write_run_report

pytestmark = pytest.mark.browser

PAYLOADS = [
    "<script>document.title='pwned';window.__pwned=1</script>",
    "</script><script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    '<a href="javascript:window.__pwned=1">x</a>',
    "<svg onload=window.__pwned=1>",
    "javascript:window.__pwned=1",
]
ALL = " ".join(PAYLOADS)

# What the page must prove: no script ran, nothing became markup, the text is all there.
_PROBE = """(() => ({
  pwned: typeof window.__pwned,
  title: document.title,
  scripts: document.scripts.length,
  handlers: Array.from(document.querySelectorAll('*')).filter(
      e => Array.from(e.attributes).some(a => a.name.toLowerCase().startsWith('on'))).length,
  scriptLinks: Array.from(document.querySelectorAll('[href],[src]')).filter(
      e => /^\\s*javascript:/i.test(e.getAttribute('href') || e.getAttribute('src') || '')).length,
  foreignImages: Array.from(document.images).filter(i => !i.src.startsWith('data:')).length,
  text: document.body.textContent,
}))()"""


def _assert_inert(page: Page, title: str, *, min_copies: int) -> None:
    state = page.evaluate(_PROBE)
    assert state["pwned"] == "undefined"
    assert state["title"] == title
    assert (state["scripts"], state["handlers"], state["scriptLinks"], state["foreignImages"]) \
        == (0, 0, 0, 0)
    for payload in PAYLOADS:
        assert state["text"].count(payload) >= min_copies, payload
    assert page.record.foreign_requests(page.url) == []


def _click_payload_text(page: Page) -> None:
    """Click the visible ``<a href="javascript:...">`` text, as a curious reader would."""
    found = page.evaluate("""(() => {
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) {
        const n = walker.currentNode;
        const i = n.data.indexOf('<a href="javascript:');
        if (i >= 0) {
          const span = document.createElement('span');
          span.id = '__probe_target';
          const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 8);
          r.surroundContents(span);
          return true;
        }
      }
      return false;
    })()""")
    assert found
    page.click("#__probe_target")
    page.pump(0.3)


def test_hostile_logtree_page_renders_payloads_as_text(tmp_path: Path, page: Page) -> None:
    """Payloads in message content, thinking, tool calls, tables and titles stay inert text."""
    lt = LogTree(f"Iteration {ALL}")
    with lt.section(f"Section {ALL}"):
        lt.text(ALL)
        lt.details(ALL, summary=ALL)
        lt.table({ALL: ALL, "reward": 1.0}, caption=ALL)
        lt.table([{"cell": ALL}], caption="rows")
        lt.conversation([
            {"role": "system", "content": ALL},
            {"role": "user", "content": [{"type": "text", "text": ALL}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": ALL},
                                              {"type": "text", "text": ALL}],
             "tool_calls": [{"type": "function", "id": ALL,
                             "function": {"name": ALL, "arguments": json.dumps({"q": ALL})}}]},
            {"role": "tool", "content": ALL, "tool_call_id": ALL, "name": ALL},
            {"role": "assistant", "content": [{"type": "image", "image": PAYLOADS[5]}],
             "unparsed_tool_calls": [{"raw_text": ALL, "error": ALL}]},
        ])
        try:
            raise ValueError(ALL)
        except ValueError as exc:
            lt.exception(exc)
    path = tmp_path / "train_iteration_000000.html"
    path.write_text(lt.to_html(), encoding="utf-8")
    page.navigate(file_url(path))
    assert page.record.errors() == []
    page.send("Runtime.evaluate", expression="document.querySelectorAll('details')"
              ".forEach(d => d.open = true)")
    _assert_inert(page, f"Iteration {ALL}", min_copies=10)
    roles = page.evaluate("Array.from(document.querySelectorAll('.msg')).map(m => m.dataset.role)")
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    _click_payload_text(page)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.title") == f"Iteration {ALL}"


def test_csp_stops_script_even_in_opted_in_raw_html(tmp_path: Path, page: Page) -> None:
    """Raw HTML a producer opted into cannot run script: the page's CSP blocks it."""
    lt = LogTree("raw")
    lt.html('<script>window.__pwned=1</script><a id="js" href="javascript:window.__pwned=1">'
            "click me</a>")
    path = tmp_path / "page.html"
    path.write_text(lt.to_html(), encoding="utf-8")
    page.navigate(file_url(path))
    assert page.evaluate("typeof window.__pwned") == "undefined"
    if page.evaluate("!!document.getElementById('js')"):
        page.click("#js")
        page.pump(0.3)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.record.foreign_requests(page.url) == []


def _hostile_run(root: Path) -> Path:
    run = root / f"run {PAYLOADS[2]}"  # a directory name is run text too
    run.mkdir()
    lines = [{"step": i, "env/all/reward/total": i / 4, ALL: float(i), PAYLOADS[1]: 1.0,
              f"{PAYLOADS[0]}/env/all/reward/total": 0.5} for i in range(5)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (run / "config.json").write_text(json.dumps({"model": ALL}))
    (run / "checkpoints.jsonl").write_text(
        json.dumps({"name": ALL, "batch": 2, "state_path": ALL, "sampler_path": ALL}) + "\n")
    (run / "train_iteration_000000.html").write_text("<!doctype html><title>t</title><p>ok")
    (run / f"eval_{PAYLOADS[2]}_iteration_000000.html").write_text(
        "<!doctype html><title>e</title><p>eval page")
    return run


def test_hostile_report_renders_payloads_as_text(
    tmp_path: Path, page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Payloads in metric names, checkpoints, config, findings and file names stay inert text."""
    run = _hostile_run(tmp_path)
    monkeypatch.setattr(reading, "validate_run", lambda r, **_: Report.build(str(r), [
        finding("RL201", ALL, file=ALL, line=3, pointer="/" + ALL),
        finding("RL301", ALL, file=PAYLOADS[2]),
    ]))
    report = Path(write_run_report(run, metrics=[ALL, PAYLOADS[1]]))
    page.navigate(file_url(report))
    assert page.record.errors() == []
    page.send("Runtime.evaluate", expression="document.querySelectorAll('details')"
              ".forEach(d => d.open = true)")
    _assert_inert(page, f"Run report: run {PAYLOADS[2]}", min_copies=5)
    assert page.evaluate("document.querySelectorAll('#validation tbody tr').length") == 2
    # the hostile-named evaluator page (not rlio's) gets rlio's page beside the report: a plain
    # link that opens it, nothing more
    hrefs = page.evaluate("Array.from(document.querySelectorAll('#iterations a')).map(a => a.href)")
    hostile = file_url(run / "report" / f"eval_{PAYLOADS[2]}_iteration_000000.html")
    assert hostile in hrefs
    _click_payload_text(page)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    page.click('#iterations details[data-split^="eval/"] a')
    page.wait_event("Page.loadEventFired")
    assert page.evaluate("location.href") == hostile
    assert page.evaluate("typeof window.__pwned") == "undefined"
