"""The cookbook 0.6.1's token capture (``capture/<kind>.jsonl``): written by its own
``CaptureExporter`` + ``JsonlFileSink`` through its ``LocalStorage`` and through ``RlioStorage``,
validated like every other file, read by ``open_run(...).captures(kind)`` and the ``captures``
view of ``rlio query``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from factories import cookbook_captures, findings, write_json, write_jsonl

from rlio import open_run, validate_run
from rlio.cookbook import RlioStorage

stores = pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook 0.6.1 (.ci/run)")
pytest.importorskip("tinker_cookbook.capture")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same capture written through the cookbook's LocalStorage and through RlioStorage,
    each into a run that holds a metrics line."""
    base = tmp_path_factory.mktemp("capture")
    out = {}
    for name in ("cookbook", "rlio"):
        root = base / name
        write_jsonl(root, "metrics.jsonl", [{"step": 0, "env/all/reward/total": 0.5}])
        write_json(root, "config.json", {"model_name": "Qwen/Qwen3-4B"})
        if name == "rlio":
            with RlioStorage(root) as storage:
                cookbook_captures(storage)
        else:
            cookbook_captures(stores.LocalStorage(root))
        out[name] = root
    return out


@pytest.mark.parametrize("name", ["cookbook", "rlio"])
def test_capture_validates_clean_with_unknown_kind_as_info(runs: dict[str, Path],
                                                           name: str) -> None:
    """No error or warning but the NaN logprob token; the kind without a schema is RL307 info."""
    found = findings(runs[name])
    assert {(c, s, f) for c, s, f, _, _ in found if s != "info"} == {
        ("RL104", "warning", "capture/sample.jsonl")}
    assert [(c, f) for c, s, f, _, _ in found if s == "info" and f.startswith("capture")] == [
        ("RL307", "capture/reward.jsonl")]


def test_both_backends_write_the_same_records(runs: dict[str, Path]) -> None:
    """The records read back equal, but for times and the per-call ids."""
    def strip(run: Path) -> list[dict[str, object]]:
        drop = {"created_at", "latency_sec", "seq_id"}
        return [{k: v for k, v in r.items() if k not in drop}
                for r in open_run(run).captures()]
    assert json.dumps(strip(runs["cookbook"])) == json.dumps(strip(runs["rlio"]))


def test_captures_reads_each_kind_in_file_order(runs: dict[str, Path]) -> None:
    """captures(kind) streams one kind; captures() every kind; an absent kind is empty."""
    run = open_run(runs["rlio"])
    assert run.capture_kinds() == ["reward", "sample", "train_op"]
    samples = list(run.captures("sample"))
    assert [(s["scope"]["iteration"], s["scope"]["group_idx"]) for s in samples] == [
        (0, 0), (0, 1), (1, 0), (1, 1)]
    first = samples[0]
    assert first["prompt_tokens"] == [1, 2, 3] and first["status"] == "ok"
    assert first["samples"][0]["tokens"] == [11, 12, 13]
    assert math.isnan(first["samples"][0]["logprobs"][2])
    ops = [r["op"] for r in run.captures("train_op")]
    assert ops == ["forward_backward", "optim_step", "save_weights_for_sampler"] * 2
    assert len(list(run.captures())) == 1 + 4 + 6
    assert list(run.captures("absent")) == []
    with pytest.raises(ValueError, match="capture kind"):
        run.captures("../metrics")


def test_captures_frame_spreads_scope(runs: dict[str, Path]) -> None:
    """The frame has a row per record and scope/<key> columns."""
    frame = open_run(runs["rlio"]).captures_frame("train_op")
    assert len(frame) == 6 and list(frame["scope/iteration"]) == [0, 0, 0, 1, 1, 1]
    assert frame["metrics/loss:sum"].iloc[0] == 1.5


def test_captures_view_answers_a_query(runs: dict[str, Path]) -> None:
    """rlio query's captures view: sampled tokens per iteration, and the ops by name."""
    from rlio import query

    table = query('SELECT "scope/iteration" AS it, sum(len(samples)) AS n FROM captures '
                  "WHERE kind = 'sample' GROUP BY it ORDER BY it", runs["rlio"])
    assert table.to_pylist() == [{"it": 0, "n": 4}, {"it": 1, "n": 4}]
    ops = query("SELECT op, count(*) AS n FROM captures WHERE kind = 'train_op' "
                "GROUP BY op ORDER BY op", runs["rlio"]).to_pylist()
    assert [o["n"] for o in ops] == [2, 2, 2]


def test_misfiled_and_invalid_capture_records_are_findings(tmp_path: Path) -> None:
    """A record of another kind in a capture file is RL308; a sample without status RL201."""
    write_jsonl(tmp_path, "metrics.jsonl", [{"step": 0}])
    write_jsonl(tmp_path, "capture/sample.jsonl", [
        {"kind": "train_op", "op": "optim_step", "scope": {}, "created_at": 1.0,
         "status": "ok", "latency_sec": 0.1},
        {"kind": "sample", "scope": {}, "created_at": 1.0, "num_samples": 1, "latency_sec": 1},
        {"kind": "sample", "scope": {"iteration": [1]}, "created_at": 1.0, "num_samples": 1,
         "status": "ok", "latency_sec": 1},
    ])
    found = [(c, line, p) for c, _, f, line, p in findings(tmp_path) if f.startswith("capture/")]
    assert ("RL308", 1, "/kind") in found
    assert [line for c, line, _ in found if c == "RL201"] == [1, 2, 3]
    assert validate_run(tmp_path).ok is False


def test_rlio_storage_moves_a_torn_capture_tail_aside(tmp_path: Path) -> None:
    """A capture file cut mid-record by a crash: RlioStorage's owner moves the cut line to
    capture/sample.jsonl.torn on open, and the file validates without RL103."""
    write_jsonl(tmp_path, "metrics.jsonl", [{"step": 0}])
    whole = json.dumps({"kind": "sample", "scope": {}, "created_at": 1.0, "num_samples": 1,
                        "status": "error", "latency_sec": 0.5, "error": "RuntimeError()"})
    (tmp_path / "capture").mkdir()
    (tmp_path / "capture" / "sample.jsonl").write_text(whole + "\n" + whole[:30])
    assert ("RL103", "capture/sample.jsonl") in {(c, f) for c, _, f, _, _ in findings(tmp_path)}
    RlioStorage(tmp_path).close()
    assert (tmp_path / "capture" / "sample.jsonl").read_text() == whole + "\n"
    assert (tmp_path / "capture" / "sample.jsonl.torn").read_text().rstrip("\n") == whole[:30]
    assert "RL103" not in {c for c, *_ in findings(tmp_path)}
