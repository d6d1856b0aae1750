"""The writer's fast paths give exactly the general paths' (and python-jsonschema's) verdicts.

``log_metrics`` checks a plain dict apart from its ``step`` (``metrics_step_check``) and splices
the step into the encoded line; ``write_rollout_summaries`` runs a compiled one-pass scan
(``rollout_scan``) and streams lines to the temp file. Differential tests: generated records,
most of them made wrong in one place, are judged by the fast path and by its reference (the
schema through python-jsonschema, or the writer with the fast path switched off); verdicts,
bytes written and errors must be the same.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import re
import tempfile
from collections import OrderedDict
from typing import Any

import jsonschema
import orjson
import pytest
from factories import (
    ordered_record,
    ordered_step,
    rollout_write_outcome,
    set_at,
    strict_json,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import RecordError, RunWriter
from rlio._schema.blocks import compile_key_check
from rlio._schema.loader import load_schema
from rlio._schema.rollout_scan import compile_rollout_scan, rollout_scan
from rlio.schema import error_schema, fast_check
from rlio.storage import TEMP_INFIX, open_storage
from rlio.writer.rollouts import PIECE
from rlio.writer.support import metrics_step_check

METRICS = error_schema("metrics-line")  # the rules the writer refuses (ranges are warnings)
ROLLOUT = load_schema("rollout-summary-line")
STEP_ORDER = list(ROLLOUT["$defs"]["step"]["properties"])
EXAMPLES = settings(max_examples=150, deadline=None)


def is_valid(schema: dict[str, Any], instance: Any) -> bool:
    return bool(jsonschema.validators.validator_for(schema)(schema).is_valid(instance))


# -- metrics: the step apart from the metrics ---------------------------------------------------

KEYS = st.sampled_from(["progress/batch", "progress/done_frac", "optim/lr", "optim/entropy",
                        "time/total", "time/train:count", "env/all/reward", "loss", "name",
                        "training_client/step", "time/x:count", "env/", "x"])
SCALARS = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
           | st.integers(-3, 3) | st.floats() | st.sampled_from([0.0, -0.0, 1.0, 0.5, 1.5, -1.0])
           | st.text(max_size=4))
VALUES = SCALARS | st.lists(SCALARS, max_size=2) | st.dictionaries(st.text(max_size=2), SCALARS,
                                                                     max_size=2)
STEPS = (st.integers(-2, 10**6) | st.sampled_from([2**63, 2**64 - 1, 2**64, 2**70, -(2**63) - 1])
         | st.booleans() | st.floats() | st.none() | st.text(max_size=2))


@EXAMPLES
@given(st.dictionaries(KEYS, VALUES, max_size=6), STEPS)
def test_step_and_metrics_checked_apart_agree_with_the_schema(metrics: dict[str, Any],
                                                              step: Any) -> None:
    """The step's verdict and the metrics' verdict together equal the whole line's verdict."""
    apart = metrics_step_check()
    assert apart is not None
    assert (apart(step) and fast_check("metrics-line")(metrics)) == is_valid(
        METRICS, {"step": step, **metrics})


@EXAMPLES
@given(st.dictionaries(KEYS, VALUES, max_size=6), STEPS)
def test_log_metrics_accepts_exactly_what_the_schema_accepts(metrics: dict[str, Any],
                                                             step: Any) -> None:
    """log_metrics writes a line iff its strict-JSON image is valid and encodable; the bytes
    are orjson's encoding of that image with step first (step None: no step)."""
    record = metrics if step is None else {"step": step, **metrics}
    encodable = all(-(2**63) <= v <= 2**64 - 1 for v in record.values()
                    if type(v) is int) and not any(isinstance(v, (list, dict))
                                                   for v in record.values())
    expected = encodable and is_valid(METRICS, strict_json(record))
    with tempfile.TemporaryDirectory() as d:
        with RunWriter(d) as run:
            try:
                run.log_metrics(metrics, step=step)
                written = True
            except RecordError:
                written = False
        data = pathlib.Path(d, "metrics.jsonl").read_bytes()
    assert written == expected
    assert data == (orjson.dumps(strict_json(record)) + b"\n" if expected else b"")


def test_metrics_layout_repeated_many_times_is_checked_each_time(tmp_path: pathlib.Path) -> None:
    """A key layout logged again and again (compiled and cached) still rejects a bad value."""
    with RunWriter(tmp_path) as run:
        for i in range(20):
            run.log_metrics({"optim/lr": 1e-4, "time/total": 1.0, "loss": 0.5}, step=i)
        with pytest.raises(RecordError) as info:
            run.log_metrics({"optim/lr": "high", "time/total": 1.0, "loss": 0.5}, step=20)
    assert info.value.pointer == "/optim~1lr" and info.value.index == 20
    assert len((tmp_path / "metrics.jsonl").read_bytes().splitlines()) == 20


@pytest.mark.parametrize("step", [2**64, 2**70, -(2**63) - 1])
def test_step_beyond_64_bits_is_an_error(tmp_path: pathlib.Path, step: int) -> None:
    """A step orjson cannot write takes the general path, which names /step; nothing written."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.log_metrics({"x": 1}, step=step)
    assert info.value.pointer == "/step"
    assert (tmp_path / "metrics.jsonl").read_bytes() == b""


def test_short_write_is_completed_not_duplicated(tmp_path: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """When the OS takes only part of a line (a signal, a full disk), the rest follows it."""
    real = os.write
    calls: list[int] = []

    def half_once(fd: int, data: Any) -> int:
        calls.append(len(data))
        return real(fd, bytes(data)[: len(data) // 2] if len(calls) == 1 else data)

    with RunWriter(tmp_path) as run:
        monkeypatch.setattr(os, "write", half_once)
        run.log_metrics({"x": 1, "pad": "p" * 100}, step=0)
        monkeypatch.setattr(os, "write", real)
        run.log_metrics({"x": 2}, step=1)
    lines = (tmp_path / "metrics.jsonl").read_bytes().splitlines()
    assert [json.loads(x) for x in lines] == [{"step": 0, "x": 1, "pad": "p" * 100},
                                              {"step": 1, "x": 2}]
    assert len(calls) == 2


# -- the per-key decomposition on other schemas -------------------------------------------------

SUBSCHEMAS = st.sampled_from([
    True, False, {}, {"type": "integer", "minimum": 0}, {"type": ["number", "null"]},
    {"type": "string", "pattern": "^a"}, {"const": 1}, {"enum": [1, "x", None]},
    {"type": "number", "exclusiveMaximum": 1}, {"not": {"type": "string"}},
])


@st.composite
def per_key_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    props = draw(st.dictionaries(st.sampled_from(["a", "b", "ab", "step"]), SUBSCHEMAS,
                                 max_size=3))
    pats = draw(st.dictionaries(st.sampled_from(["^a", "b$", "^s", "x"]), SUBSCHEMAS,
                                max_size=2))
    if props:
        schema["properties"] = props
    if pats:
        schema["patternProperties"] = pats
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(SUBSCHEMAS)
    return schema


@EXAMPLES
@given(per_key_schemas(), st.dictionaries(st.sampled_from(["a", "b", "ab", "xb", "c"]), SCALARS,
                                          max_size=4),
       st.sampled_from(["a", "b", "ab", "step", "sx", "zz"]), SCALARS)
def test_key_check_decomposes_per_key_schemas(schema: dict[str, Any], rest: dict[str, Any],
                                              key: str, value: Any) -> None:
    """For a per-key schema, valid(d + {key: v}) == valid(d) and key_check(v) (key not in d)."""
    rest.pop(key, None)
    check = compile_key_check(schema, key)
    assert check is not None
    assert (check(value) and is_valid(schema, rest)) == is_valid(schema, {**rest, key: value})


@pytest.mark.parametrize("schema", [
    {"type": "object", "required": ["a"]}, {"type": "object", "minProperties": 1},
    {"type": "object", "propertyNames": {"maxLength": 2}},
    {"$ref": "#/$defs/x", "$defs": {"x": {}}},
    {"type": ["object", "null"]}, {"allOf": [{"type": "object"}]},
])
def test_key_check_refuses_schemas_that_are_not_per_key(schema: dict[str, Any]) -> None:
    """A schema whose verdict is not a conjunction over keys gets no per-key check."""
    assert compile_key_check(schema, "a") is None


# -- rollout summaries: the one-pass scan against the general path ------------------------------


#: One-place changes: (path, value); most make the record wrong, some only unusual.
CHANGES: list[tuple[list[Any], Any]] = [
    (["group_idx"], -1), (["group_idx"], True), (["group_idx"], 1.0), (["traj_idx"], 2.5),
    (["schema_version"], 2), (["schema_version"], 1.0), (["schema_version"], True),
    (["split"], "eval/x"), (["split"], 3), (["iteration"], 5), (["iteration"], 4.0),
    (["iteration"], True), (["tags"], ["a", 1]), (["tags"], ("a",)), (["tags"], "a"),
    (["sampling_client_step"], None), (["sampling_client_step"], -1),
    (["total_reward"], None), (["total_reward"], float("nan")), (["total_reward"], 99.0),
    (["total_reward"], 1.75 + 5e-7), (["final_reward"], None), (["final_reward"], "1"),
    (["trajectory_metrics"], {"x": [1]}), (["trajectory_metrics"], {"x": None}),
    (["trajectory_metrics"], []), (["final_ob_len"], -3), (["final_ob_len"], 2**64),
    (["steps"], []), (["steps"], ()), (["steps", 0, "step_idx"], 1),
    (["steps", 1, "step_idx"], 1.0), (["steps", 0, "ob_len"], "10"),
    (["steps", 0, "reward"], None), (["steps", 0, "reward"], float("inf")),
    (["steps", 0, "episode_done"], 0), (["steps", 0, "metrics"], {"k": {"n": 1}}),
    (["steps", 0, "logs"], None), (["steps", 0, "stop_reason"], "stop"),
    (["steps", 0, "stop_reason"], 3), (["steps", 0, "trace"], {"any": [1, {"x": None}]}),
    (["steps", 0, "extra"], 1), (["extra"], 1), (["steps", 0], OrderedDict(ordered_step(0))),
    (["steps", 0], [1, 2]),
]


@st.composite
def rollout_batches(draw: st.DrawFn) -> list[Any]:
    n = draw(st.integers(1, 6))
    recs: list[Any] = [ordered_record(i // 2, i % 2, n=draw(st.integers(0, 3))) for i in range(n)]
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, n - 1))
        kind = draw(st.integers(0, 7))
        rec = recs[i]
        try:
            if kind == 0:  # keys out of order
                recs[i] = dict(reversed(list(rec.items())))
            elif kind == 1:  # a step's keys out of order
                rec["steps"][0] = dict(reversed(list(rec["steps"][0].items())))
            elif kind == 2:  # a key missing
                rec.pop(draw(st.sampled_from(list(rec))))
            elif kind == 3 and i:  # a duplicate id
                rec["group_idx"], rec["traj_idx"] = recs[0]["group_idx"], recs[0]["traj_idx"]
            elif kind == 4:  # an optional step key in its documented place
                rec["steps"] = [{k: s.get(k, draw(st.sampled_from(["stop", None, 3])))
                                 for k in STEP_ORDER if k in s or k == "stop_reason"}
                                for s in rec["steps"]]
            elif kind == 5:  # the keys the call fills in left out
                for k in ("schema_version", "split", "iteration"):
                    rec.pop(k)
            else:
                path, value = draw(st.sampled_from(CHANGES))
                set_at(rec, path, copy.deepcopy(value))
        except (KeyError, IndexError, TypeError, AttributeError):
            pass  # an earlier change removed what this one would change
    return recs


@settings(max_examples=250, deadline=None)
@given(rollout_batches())
def test_scan_and_general_path_write_the_same(recs: list[Any]) -> None:
    """With and without the scan, the writer writes the same bytes or raises the same error."""
    with tempfile.TemporaryDirectory() as d, pytest.MonkeyPatch.context() as mp:
        fast = rollout_write_outcome(os.path.join(d, "fast"), recs, scan=True, monkeypatch=mp)
        slow = rollout_write_outcome(os.path.join(d, "slow"), recs, scan=False, monkeypatch=mp)
    assert fast == slow


@pytest.mark.parametrize(("path", "value"), CHANGES, ids=[
    f"{'/'.join(map(str, p))}={v!r}"[:40] for p, v in CHANGES])
def test_each_change_same_outcome_with_and_without_scan(tmp_path: pathlib.Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        path: list[Any], value: Any) -> None:
    """Every one-place change in CHANGES: the scan and the general path agree."""
    recs = [ordered_record(0, 0), ordered_record(0, 1), ordered_record(1, 0)]
    set_at(recs[1], path, value)
    fast = rollout_write_outcome(str(tmp_path / "fast"), recs, scan=True, monkeypatch=monkeypatch)
    slow = rollout_write_outcome(str(tmp_path / "slow"), recs, scan=False, monkeypatch=monkeypatch)
    assert fast == slow


def test_scan_accepts_only_schema_valid_records() -> None:
    """Whatever the scan accepts, python-jsonschema accepts (in strict-JSON form)."""
    scan = rollout_scan()
    assert scan is not None
    recs = [ordered_record(0, 0)]
    for i, (path, value) in enumerate(CHANGES):
        rec = ordered_record(1, i)
        set_at(rec, path, copy.deepcopy(value))
        recs.append(rec)
    buf = bytearray()
    seen: set[tuple[Any, Any]] = set()
    accepted = 0
    i = 0
    while i < len(recs):
        stop = scan.scan(recs, i, 4, "train", seen, buf, 1 << 30)
        accepted += stop - i
        for rec in recs[i:stop]:
            assert is_valid(ROLLOUT, strict_json(json.loads(orjson.dumps(rec))))
        i = stop + 1
    assert accepted >= 8  # not vacuous: plain and unusual-but-valid records pass
    assert buf.count(b"\n") == accepted


def test_scan_takes_whole_batches_of_common_records() -> None:
    """Records as training loops build them never leave the scan (it is the hot path)."""
    scan = rollout_scan()
    assert scan is not None and scan.fixed(4, "train")
    recs = [ordered_record(g, t, n=4) for g in range(50) for t in range(8)]
    buf = bytearray()
    assert scan.scan(recs, 0, 4, "train", set(), buf, 1 << 30) == len(recs)
    assert bytes(buf) == b"".join(orjson.dumps(r) + b"\n" for r in recs)


def test_scan_refuses_schemas_it_does_not_specialise() -> None:
    """A schema without the expected shape gets no scan (the general path serves it)."""
    assert compile_rollout_scan({"type": "object"}) is None
    odd = copy.deepcopy(ROLLOUT)
    odd["properties"]["steps"] = {"type": "array", "items": {"type": "object"}, "minItems": 1}
    assert compile_rollout_scan(odd) is None
    assert compile_rollout_scan(ROLLOUT) is not None


# -- rollout summaries: streaming to the temp file ----------------------------------------------

def test_late_bad_record_after_streamed_pieces_leaves_the_file_unchanged(
        tmp_path: pathlib.Path) -> None:
    """A bad record after megabytes of lines went to the temp file: old file kept, temp gone."""
    path = tmp_path / "train_iteration_000004_rollout_summaries.jsonl"
    recs = [ordered_record(g, t, tags=["x" * 500]) for g in range(400) for t in range(8)]
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(4, recs[:2])
        before = path.read_bytes()
        recs[-1] = ordered_record(0, 0)  # a duplicate id, found last
        with pytest.raises(RecordError) as info:
            run.write_rollout_summaries(4, recs)
    assert info.value.index == len(recs) - 1 and info.value.pointer == "/traj_idx"
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if TEMP_INFIX in p.name]


def test_large_batch_is_written_whole_and_exact(tmp_path: pathlib.Path) -> None:
    """Several pieces streamed: the file is the records' lines in order, nothing else."""
    recs = [ordered_record(g, t, tags=[f"t{g}-{t}" * 40]) for g in range(300) for t in range(8)]
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(4, recs)
    data = (tmp_path / "train_iteration_000004_rollout_summaries.jsonl").read_bytes()
    assert len(data) > 4 * PIECE
    assert data == b"".join(orjson.dumps(r) + b"\n" for r in recs)


def test_replacing_streams_and_commits_atomically(tmp_path: pathlib.Path) -> None:
    """LocalStorage.replacing: pieces land in a temp file, renamed over the target on exit."""
    storage = open_storage(str(tmp_path))
    storage.replace("f.jsonl", b"old\n")
    replacing = storage.replacing
    with replacing("f.jsonl") as write:
        write(b"a\n")
        write(bytearray(b"b\n"))
        assert (tmp_path / "f.jsonl").read_bytes() == b"old\n"
        assert [p.name for p in tmp_path.iterdir() if re.search(TEMP_INFIX, p.name)]
    assert (tmp_path / "f.jsonl").read_bytes() == b"a\nb\n"
    with pytest.raises(KeyError), replacing("f.jsonl") as write:
        write(b"c\n")
        raise KeyError("stop")
    assert (tmp_path / "f.jsonl").read_bytes() == b"a\nb\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.jsonl"]
