"""open_run on runs written as the cookbook writes them: layouts, NaN, torn tails, sidecars."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from factories import (
    checkpoint_line,
    cookbook_run,
    jsonl,
    metrics_line,
    trajectory,
    write,
    write_jsonl,
)

import rlio
from rlio import layout
from rlio.errors import NotARunError, RunNotFoundError
from rlio.reader import Conversation, IterationInfo, open_run


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with the hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("layout_name", ["flat", "nested"])
def test_both_layouts_read_the_same_records(tmp_path: Path, layout_name: layout.Layout) -> None:
    """A cookbook run reads the same metrics, rollouts and logtrees in either layout."""
    run = open_run(cookbook_run(tmp_path / "run", 3, layout_name=layout_name))
    assert run.layout == layout_name
    assert [m.get("step") for m in run.metrics()] == [0, 1, 2, 3]
    assert [it.index for it in run.iterations()] == [0, 1, 2]
    assert run.iterations()[0].evaluators == ("test",)
    assert isinstance(run.iterations()[0], IterationInfo)
    rollouts = list(run.rollouts(1))
    assert [(r["group_idx"], r["traj_idx"]) for r in rollouts] == [
        (g, t) for g in range(2) for t in range(3)]
    assert list(run.rollouts(0, evaluator="test")) == []  # the 0-byte evaluator file
    assert len(list(run.rollouts())) == 12  # every iteration that has summaries
    doc = run.logtree(1)
    assert doc is not None and doc["title"] == "RL Iteration 1"
    assert run.logtree(2) is None  # an HTML-only iteration
    assert run.logtree(0, evaluator="test") is not None
    convs = list(run.conversations(0))
    assert convs == [Conversation(("Group Rollout",), doc["root"]["children"][1]["children"][1]
                                  ["data"]["messages"])]
    assert convs[0].messages[0]["content"] == "What is 6*7? \u00e9"


def test_nan_tokens_become_float_nan_everywhere(tmp_path: Path) -> None:
    """NaN tokens in config, metrics and rollout summaries read as float NaN."""
    run = open_run(cookbook_run(tmp_path / "run", 2))
    config = run.config()
    assert config is not None and math.isnan(config["kl_coef"])
    assert math.isnan(run.metrics()[0]["env/all/reward/total"])
    assert math.isnan(next(run.rollouts(0))["trajectory_metrics"]["kl"])


def test_torn_last_line_is_skipped_and_left_on_disk(tmp_path: Path) -> None:
    """A torn last line (no final newline) is not a record, and the reader leaves it on disk."""
    root = tmp_path / "run"
    write(root, "config.json", "{}")
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(3)) + '{"step": 3, "x": 1')
    write(root, layout.CHECKPOINTS, jsonl([checkpoint_line("000001", 1)]) + '{"name": "0000')
    before = _snapshot(root)
    run = open_run(root)
    assert [m["step"] for m in run.metrics()] == [0, 1, 2]
    assert [c["name"] for c in run.checkpoints()] == ["000001"]
    assert list(run.follow_metrics(poll=0, idle_timeout=0)) == run.metrics()
    state = run.resume_state()
    assert state is not None and state.next_batch == 1
    run.metrics_frame()
    assert _snapshot(root) == before  # read-only: nothing repaired, nothing written


def test_a_parseable_unterminated_last_line_is_torn_too(tmp_path: Path) -> None:
    """A last line without its newline is torn even when it parses (the write may be cut)."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl([metrics_line(0)]) + json.dumps(metrics_line(1)))
    assert [m["step"] for m in open_run(root).metrics()] == [0]


def test_resume_sidecars_are_not_read_as_metrics(tmp_path: Path) -> None:
    """metrics.jsonl.superseded, .torn and the cookbook's pre_resume copy are never metrics."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(3)))
    write(root, "metrics.jsonl.superseded", jsonl(metrics_line(s) for s in range(3, 9)))
    write(root, "metrics.jsonl.torn", '{"step": 9')
    write(root, "metrics.jsonl.pre_resume_000002", jsonl(metrics_line(s) for s in range(7)))
    write(root, "checkpoints.jsonl.torn", '{"name"')
    run = open_run(root)
    assert [m["step"] for m in run.metrics()] == [0, 1, 2]
    assert run.checkpoints() == []
    assert len(run.metrics_frame()) == 3


def test_blank_and_damaged_lines_mid_file_are_skipped(tmp_path: Path) -> None:
    """Blank lines, non-JSON lines and non-object lines mid-file are skipped, order kept."""
    root = tmp_path / "run"
    write(root, layout.METRICS, b'{"step": 0}\n\n{"step": 1, "x": NaN}{"step"\n[1, 2]\n'
                                b'{"a": "\xff"}\n{"step": 2}\n')
    assert [m["step"] for m in open_run(root).metrics()] == [0, 2]


def test_metrics_stream_is_lazy(tmp_path: Path) -> None:
    """iter_metrics is a generator: a record is read only when asked for."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(5)))
    stream = open_run(root).iter_metrics()
    assert next(stream)["step"] == 0
    stream.close()


def test_rollouts_accept_an_evaluator_name_or_label(tmp_path: Path) -> None:
    """rollouts(i, evaluator=name) finds the file of the sanitized label, in either layout."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl([metrics_line(0)]))
    write_jsonl(root, layout.iteration_path("nested", 4, "rollout_summaries", label="gsm8k_main"),
                [trajectory(4, split="eval/gsm8k_main")])
    run = open_run(root)
    assert [r["split"] for r in run.rollouts(4, evaluator="gsm8k/main")] == ["eval/gsm8k_main"]
    assert [r["split"] for r in run.rollouts([4], evaluator="gsm8k_main")] == ["eval/gsm8k_main"]
    assert run.path_of(4, "rollout_summaries") is None
    with pytest.raises(ValueError, match="iteration must be"):
        list(run.rollouts(-1))


def test_open_run_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    """A missing folder, an empty one, or one holding only config.json (a model folder) is
    NotARunError, named by the one "no run found" message."""
    with pytest.raises(RunNotFoundError):
        open_run(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotARunError, match=r"no run found at .*: the folder is empty"):
        open_run(tmp_path / "empty")
    write(tmp_path / "hf", "config.json", "{}")
    with pytest.raises(NotARunError, match="this folder holds no run files"):
        open_run(tmp_path / "hf")


def test_the_reader_is_exported_from_rlio(tmp_path: Path) -> None:
    """rlio.open_run, rlio.Run and the record types are the reader's own names."""
    run = rlio.open_run(cookbook_run(tmp_path / "run", 1))
    assert isinstance(run, rlio.Run)
    assert rlio.Conversation is Conversation and rlio.IterationInfo is IterationInfo
    assert rlio.RolloutSummary.__required_keys__ >= {"split", "steps"}


def test_a_cookbook_uncut_long_label_is_found_by_listing(tmp_path: Path) -> None:
    """A logtree the cookbook wrote under an uncut 215-character label (rlio would cut it) is
    found by the evaluator's name."""
    name = "z" * 215
    root = cookbook_run(tmp_path / "run")
    write(root, f"eval_{name}_iteration_000000_logtree.json", json.dumps(
        {"title": "t", "started_at": "2025-01-01T00:00:00", "path": "p", "root": {}}))
    run = open_run(root)
    assert layout.sanitize_label(name) != name
    assert run.path_of(0, "logtree", evaluator=name) == f"eval_{name}_iteration_000000_logtree.json"
    assert run.logtree(0, evaluator=name) is not None
