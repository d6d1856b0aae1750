"""The iteration page's pieces: sanitizer, failing rule, transcript anchors, written links."""

from __future__ import annotations

import math

import pytest

from rlio.logtree import LogTree
from rlio.logtree.iteration_page import (
    Trajectory,
    find_transcripts,
    render_iteration_page,
    table_html,
    written_nav,
)
from rlio.logtree.sanitize import sanitize_html


@pytest.mark.parametrize("raw", [
    '<meta http-equiv="refresh" content="0;url=http://x.invalid">',
    '<base href="http://x.invalid/">',
    '<form action="http://x.invalid"><input></form>',
    '<iframe src="http://x.invalid"></iframe>',
    '<object data="http://x.invalid"></object>',
    '<embed src="http://x.invalid">',
    "<script>alert(1)</script>",
    "<style>@import 'http://x.invalid';</style>",
    '<img src="http://x.invalid/p.png">',
    '<a href="javascript:alert(1)">x</a>',
    '<a href="data:text/html,x">x</a>',
    '<b onclick="alert(1)" style="background:url(http://x.invalid)">x</b>',
])
def test_sanitizer_removes_everything_that_acts_or_loads(raw: str) -> None:
    """No tag, handler or URL that could run, navigate or load survives html()."""
    lt = LogTree("t")
    lt.html(raw)
    body = lt.to_html().split("</head>", 1)[1].lower()
    for banned in ("<meta", "<base", "<form", "<iframe", "<object", "<embed", "<script",
                   "<style", "onclick", "javascript:", "data:text", "x.invalid"):
        assert banned not in body, (raw, banned)


def test_sanitizer_keeps_formatting_and_data_images() -> None:
    """Formatting markup, https links and base64 raster images stay as given."""
    img = '<img src="data:image/png;base64,iVBORw0KGgo=">'
    out = sanitize_html(f'<b class="k">bold</b><a href="https://e.org/">l</a>{img}')
    assert '<b class="k">bold</b>' in out and 'href="https://e.org/"' in out and img in out
    assert sanitize_html("a &lt; b") == "a &lt; b"


def _t(total: float | None, final: float | None, done: bool = True) -> Trajectory:
    return Trajectory("train", 0, 0, 0, total, final, 1, 1, 1, 1, done)


def test_failing_means_total_reward_not_positive_nan_or_not_done() -> None:
    """Total reward <= 0, NaN, or an unfinished episode fails; final_reward plays no part
    (a math environment's step reward of 1 with final_reward 0.0 passes)."""
    assert _t(0.0, 1.0).failing and _t(0.0, None).failing and _t(-0.1, 0.9).failing
    assert _t(math.nan, 1.0).failing and _t(1.0, 1.0, done=False).failing
    assert not _t(1.0, 0.0).failing and not _t(0.3, None).failing
    assert not _t(0.9, 1.0).failing and not _t(math.inf, 0.0).failing


def test_a_null_total_reward_fails_as_nan_does() -> None:
    """A NaN total written as null (the default nonfinite policy) fails, as the NaN token does:
    a sum of rewards is a number, so null can only be a non-finite one."""
    assert _t(None, 1.0).failing and _t(None, None).failing and _t(math.nan, None).failing


def test_table_marks_failing_rows_and_links_logged_transcripts() -> None:
    """Each row carries its group/traj; failing rows get the class and the marker."""
    rows = [Trajectory("train", 0, 0, 0, 1.0, 1.0, 1, 1, 5, 5, True),
            Trajectory("train", 0, 0, 1, 0.0, 0.0, 1, 1, 5, 5, True)]
    html = table_html(rows, {(0, 0)})
    assert html.count("<tr data-group=") == 1 and html.count('<tr class="fail"') == 1
    assert html.count('class="fail-mark"') == 1
    assert '<a href="#traj-0-0">' in html and "#traj-0-1" not in html


def test_transcripts_are_found_by_group_and_trajectory_heading() -> None:
    """The k-th Group section is group k; a Trajectory <i> heading names the trajectory."""
    lt = LogTree("t")
    for _g in range(2):
        with lt.section("Group Rollout"):
            for i in (1, 0):
                with lt.section(f"Trajectory {i} Episode"), lt.section("Prompt"):
                    lt.conversation([{"role": "user", "content": f"q{i}"}])
    found = find_transcripts(lt.to_json()["root"])
    assert sorted(found.messages) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert found.messages[(1, 0)][0]["content"] == "q0"
    page = render_iteration_page(lt.to_json(), written_nav("train_iteration_000002.html")
                                 or pytest.fail("no nav"), [], title="t")
    assert page.count('<details class="lt-section lt-group"') == 2
    assert 'id="traj-1-1"' in page


def test_written_nav_predicts_links_from_the_naming_contract() -> None:
    """A written page links the report and neighbouring iterations, relative in both layouts."""
    flat = written_nav("eval_test_iteration_000003.html")
    assert flat is not None and flat.report == "report.html"
    assert flat.splits[0] == ("train", "train_iteration_000003.html")
    nested = written_nav("iteration_000003/train.html")
    assert nested is not None and nested.report == "../report.html"
    assert nested.prev == ("iteration 2", "../iteration_000002/train.html")
    assert written_nav("notes.html") is None
