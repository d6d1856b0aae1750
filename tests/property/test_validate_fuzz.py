"""validate_run never raises on bad data: arbitrary bytes, and random mutations of valid files."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio.findings import CATALOGUE, Report
from rlio.validate import validate_run

STEP = {"step_idx": 0, "ob_len": 10, "ac_len": 3, "reward": 1.0, "episode_done": True,
        "metrics": {"m": 1.0}, "logs": {}}
VALID: dict[str, bytes] = {
    "metrics.jsonl": b"".join(json.dumps({"step": i, "progress/batch": i, "optim/lr": 1e-5,
                                          "env/all/reward/total": float("nan")}).encode() + b"\n"
                              for i in range(3)),
    "config.json": json.dumps({"lr": 1e-5, "path": "<class 'pathlib.PosixPath'>"}, indent=2
                              ).encode(),
    "checkpoints.jsonl": b'{"name": "000001", "batch": 1, "state_path": "tinker://r/w/1", '
                         b'"rolling": true, "extra": {"a": [1]}}\n',
    "code.diff": b"diff --git a/x b/x\n",
    "timing_spans.jsonl": b'{"step": 0, "spans": [{"name": "s", "duration": 1.0, '
                          b'"wall_start": 0.0, "wall_end": 1.0}]}\n',
    "trace_events.jsonl": b'{"name": "f", "ph": "B", "pid": 0, "tid": 1, "ts": 1.0, '
                          b'"args": {}}\n',
    "train_iteration_000000_rollout_summaries.jsonl": b"".join(json.dumps({
        "schema_version": 1, "split": "train", "iteration": 0, "group_idx": 0, "traj_idx": t,
        "tags": ["x"], "sampling_client_step": 0, "total_reward": 1.0, "final_reward": 0.0,
        "trajectory_metrics": {}, "steps": [STEP], "final_ob_len": 0}).encode() + b"\n"
        for t in range(3)),
    "train_iteration_000000_logtree.json": json.dumps({
        "title": "t", "started_at": "2025-03-01T12:00:00", "path": "train_iteration_000000.html",
        "root": {"tag": "body", "attrs": {}, "children": ["x", {
            "tag": "div", "attrs": {}, "children": [],
            "data": {"type": "conversation", "messages": [{"role": "user", "content": "hi"}]}}]},
    }, indent=2).encode(),
    "train_iteration_000000.html": b"<!doctype html>\n<html><body></body></html>\n",
}
KINDS = sorted(VALID)


def validate_with(replaced: dict[str, bytes]) -> Report:
    """Validate the valid run with some files replaced; checks the report's shape."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, data in {**VALID, **replaced}.items():
            (root / name).write_bytes(data)
        report = validate_run(root)
    doc = orjson.loads(orjson.dumps(report.to_dict()))
    assert list(doc) == ["version", "run", "ok", "counts", "findings"]
    for f in report.findings:
        assert f.code in CATALOGUE
        assert f.line is None or f.line >= 1
        assert f.pointer == "" or f.pointer.startswith("/")
        assert f.message and "\n" not in f.message
    return report


def test_valid_base_run_has_no_error() -> None:
    """The fuzzing base run is itself valid (so mutations are what the tests exercise)."""
    assert validate_with({}).ok


@settings(max_examples=120)
@given(kind=st.sampled_from(KINDS), data=st.binary(max_size=600))
def test_arbitrary_bytes_in_any_file(kind: str, data: bytes) -> None:
    """Arbitrary bytes written into any file kind give a Report, never an exception."""
    validate_with({kind: data})


json_ish = st.lists(st.sampled_from([b"{", b"}", b"[", b"]", b'"', b":", b",", b"\n", b"NaN",
                                     b"-Infinity", b"1e999", b"null", b"\\u", b"\xff", b"\x00",
                                     b'"step"', b"0", b"-1", b" "]), max_size=80).map(b"".join)


@settings(max_examples=80)
@given(kind=st.sampled_from(KINDS), data=json_ish)
def test_json_like_garbage_in_any_file(kind: str, data: bytes) -> None:
    """JSON-looking token soup (unbalanced, non-finite, bad escapes) gives a Report."""
    validate_with({kind: data})


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid file with byte flips, a truncation or an insertion."""
    kind = draw(st.sampled_from(KINDS))
    data = bytearray(VALID[kind])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[pos] ^= draw(st.integers(1, 255))
        elif op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            del data[pos:pos + draw(st.integers(1, 8))]
    return kind, bytes(data)


@settings(max_examples=200)
@given(case=mutated())
def test_mutated_valid_files(case: tuple[str, bytes]) -> None:
    """Random mutations of a valid file give a Report, never an exception."""
    kind, data = case
    validate_with({kind: data})
