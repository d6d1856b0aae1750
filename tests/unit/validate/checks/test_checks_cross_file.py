"""Unit tests of the cross-file checks: RL109, RL116, RL304, RL411, RL409 and started()."""

from __future__ import annotations

from rlio import layout
from rlio.findings import Severity
from rlio.validate.checks.cross_file import (
    checkpoint_beyond_metrics,
    html_twins,
    mixed_layout,
    required_files,
    started,
)
from rlio.validate.checks.view import CheckpointFacts, MetricsFacts, RunView


def view(paths: list[str], present: dict[str, str] | None = None) -> RunView:
    files = {p: layout.parse_path(p) for p in paths}
    shown = dict.fromkeys(paths, "file") if present is None else present
    return RunView(layout.detect_layout(files), files, shown, {p: p for p in shown})


def test_started_by_iteration_files_or_records() -> None:
    """A run has started with a per-iteration file, or a ledger with records or unread."""
    assert not started(view([]))
    assert started(view(["train_iteration_000000.html"]))
    v = view(["metrics.jsonl"])
    assert started(v)  # present but not read: counts
    v.metrics = MetricsFacts(records=0)
    assert not started(v)
    v.metrics = MetricsFacts(records=1)
    assert started(v)
    c = view(["checkpoints.jsonl"])
    c.checkpoints = CheckpointFacts(records=0)
    assert not started(c)
    c.checkpoints = CheckpointFacts(records=1)
    assert started(c)


def test_required_files() -> None:
    """Missing files are RL109 (metrics) / RL118 (config) once the run started, RL116 before; a
    symlink is RL109."""
    found = [(f.code, f.file) for f in required_files(view(["train_iteration_000000.html"]))]
    assert found == [("RL109", "metrics.jsonl"), ("RL118", "config.json")]
    found = [(f.code, f.file) for f in required_files(view([]))]
    assert found == [("RL116", "metrics.jsonl"), ("RL116", "config.json")]
    v = view(["config.json"], present={"config.json": "file", "metrics.jsonl": "symlink"})
    v.metrics = None
    assert [(f.code, f.file) for f in required_files(v)] == [("RL109", "metrics.jsonl")]
    v = view(["config.json"], present={"config.json": "file", "metrics.jsonl": "dir"})
    assert list(required_files(v)) == []


def test_mixed_layout() -> None:
    """Both layouts are one RL304 counting each; one layout is none."""
    [f] = mixed_layout(view(["train_iteration_000000.html", "iteration_000001/train.html",
                             "iteration_000002/train.html"]))
    assert f.code == "RL304" and "flat layout (1 files)" in f.message
    assert "nested layout (2 files)" in f.message
    assert list(mixed_layout(view(["train_iteration_000000.html"]))) == []


def test_html_twins() -> None:
    """An HTML report without its logtree JSON is RL411 in a run with logtree JSON; with its
    twin, or a logtree alone, none; a run with no logtree JSON at all gets one RL413."""
    html = "train_iteration_000000.html"
    other = "train_iteration_000001_logtree.json"
    [f] = html_twins(view([html, other, "metrics.jsonl"]))
    assert (f.code, f.file) == ("RL411", html)
    [f] = html_twins(view([html, "eval_test_iteration_000000.html", "metrics.jsonl"]))
    assert (f.code, f.file, f.severity) == ("RL413", "", Severity.INFO)
    assert "2 HTML report(s)" in f.message
    assert list(html_twins(view([html, "train_iteration_000000_logtree.json"]))) == []
    assert list(html_twins(view(["train_iteration_000000_logtree.json"]))) == []


def test_html_only_nested_run_is_a_stopped_run_not_cookbook_010() -> None:
    """RL413 of a nested run with pages and no logtree JSON (cookbook 0.6.1 killed before its
    first JSON) names the stop, not the HTML-only release; a flat one names cookbook 0.1.0."""
    [f] = html_twins(view(["iteration_000000/train.html", "iteration_000000/timing_gantt.html",
                           "metrics.jsonl"]))
    assert f.code == "RL413" and "0.1.0" not in f.message
    assert "cookbook 0.6.1" in f.message and "stopped" in f.message
    [f] = html_twins(view(["train_iteration_000000.html", "metrics.jsonl"]))
    assert f.code == "RL413" and "cookbook 0.1.0" in f.message


def test_checkpoint_beyond_metrics() -> None:
    """A resumable batch may be the last metrics step + 1 at most; beyond it is RL409."""
    v = view([])
    v.metrics = MetricsFacts(last_train_step=4)
    v.checkpoints = CheckpointFacts(resumable=[(1, 5), (2, 6), (3, 0)])
    found = [(f.code, f.line, f.pointer) for f in checkpoint_beyond_metrics(v)]
    assert found == [("RL409", 2, "/batch")]
    v.metrics = MetricsFacts(last_train_step=None)
    assert list(checkpoint_beyond_metrics(v)) == []
    v.metrics = None
    assert list(checkpoint_beyond_metrics(v)) == []
    v.metrics, v.checkpoints = MetricsFacts(last_train_step=0), None
    assert list(checkpoint_beyond_metrics(v)) == []


def test_only_html_pages_need_a_twin() -> None:
    """Rollout summaries and logtrees without pages are no RL411: only HTML needs its JSON twin."""
    rollouts = layout.iteration_path("flat", 0, "rollout_summaries")
    nested = layout.iteration_path("nested", 0, "rollout_summaries")
    assert list(html_twins(view([rollouts, "metrics.jsonl"]))) == []
    assert list(html_twins(view([nested]))) == []
