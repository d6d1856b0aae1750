"""The C value checker's specs (``rlio._schema.shape``): a value a spec shows valid is valid.

For every node of the rollout-summary schema with a spec, random values (numbers at the edges,
NaN, numpy scalars, bools, strings, nested containers) that ``rlio._accel.Shape`` accepts are
accepted by jsonschema as the writer encodes them (a non-finite float written as null); and the
documented record shapes are accepted, so the scan does not send them all to the general path.
"""

from __future__ import annotations

import math
from typing import Any

import jsonschema
import numpy as np
import pytest
from factories import ordered_record, pure_python
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import _native
from rlio._schema.blocks import BlockCompiler
from rlio._schema.loader import load_schema
from rlio._schema.shape import value_spec

accel = _native._module
pytestmark = pytest.mark.skipif(accel is None, reason="rlio._accel is not built here")
SCHEMA = load_schema("rollout-summary-line")
COMP = BlockCompiler(SCHEMA)
NODES = {**{k: v for k, v in SCHEMA["properties"].items()},
         **{f"step/{k}": v for k, v in SCHEMA["$defs"]["step"]["properties"].items()}}
SCALAR = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3)
          | st.sampled_from([2**63, -1, 0, np.int64(3), np.float32(0.5), np.bool_(True),
                             math.nan, -math.inf, 1.0, -0.0]))
VALUES = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=2) | st.integers(0, 2), inner, max_size=3), max_leaves=6)


def as_written(v: Any) -> Any:
    """``v`` as the strict encoder writes it: non-finite floats as null, containers inside."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [as_written(x) for x in v]
    if isinstance(v, dict):
        return {k: as_written(x) for k, x in v.items()}
    return v


def resolved(node: Any) -> Any:
    return {"$defs": SCHEMA["$defs"], **COMP.resolve(node)} if isinstance(node, dict) else node


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(NODES)), VALUES)
def test_a_value_the_shape_accepts_is_valid(name: str, value: Any) -> None:
    """Shape(spec)(value) implies jsonschema accepts the value as written."""
    spec = value_spec(COMP.resolve, NODES[name])
    if spec is None or not accel.Shape(spec)(value):
        return
    assert jsonschema.Draft202012Validator(resolved(NODES[name])).is_valid(as_written(value)), (
        name, value)


def test_the_documented_record_is_accepted_in_c() -> None:
    """Every key of a documented record has a spec but split (a pattern) and steps (the scan
    builds their spec from the step layouts), and accepts its value; so does every step key."""
    rec = ordered_record(0, 1)
    specs = {k: value_spec(COMP.resolve, node) for k, node in NODES.items()}
    assert sorted(k for k, s in specs.items() if s is None) == ["split", "steps"]
    for key, value in rec.items():
        if key != "steps" and specs[key] is not None:
            assert accel.Shape(specs[key])(value), key
    for step in rec["steps"]:
        for key, value in step.items():
            assert accel.Shape(specs[f"step/{key}"])(value), key


def test_step_sum_adds_rewards_in_order_and_checks_positions() -> None:
    """step_sum: start plus each reward in order (None after a None), Ellipsis for a step_idx
    that is not its position (or not an int)."""
    steps = [{"step_idx": 0, "reward": 0.1}, {"step_idx": 1, "reward": 0.2}]
    assert accel.step_sum(steps, 1.0, "step_idx", "reward") == (1.0 + 0.1) + 0.2
    assert accel.step_sum(steps, None, "step_idx", "reward") is None
    assert accel.step_sum([*steps, {"step_idx": 2, "reward": None}], 0, "step_idx",
                          "reward") is None
    assert accel.step_sum([steps[1]], 0, "step_idx", "reward") is ...
    assert accel.step_sum([{"step_idx": True, "reward": 1}], 0, "step_idx", "reward") is ...
    assert accel.step_sum([{"step_idx": 0}], 0, "step_idx", "reward") is ...


def test_the_scan_with_c_checks_takes_documented_records_in_one_go() -> None:
    """The scan compiled with the extension passes a batch of documented records to the end
    (none handed to the general path) and writes what the Python scan writes."""
    from rlio._schema.rollout_scan import compile_rollout_scan

    recs = [ordered_record(i // 4, i % 4, n=1 + i % 3) for i in range(40)]
    out = []
    for native in (accel, None):
        scan = compile_rollout_scan(SCHEMA, native)
        assert scan is not None
        buf, seen = bytearray(), set()
        assert scan.scan(recs, 0, 4, "train", seen, buf, 1 << 30) == len(recs)
        out.append(bytes(buf))
    assert out[0] == out[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["ok", "split", "iteration", "order", "float-it", "sub"]),
                min_size=1, max_size=6))
def test_in_order_in_c_takes_only_batches_the_python_passes_take(changes: list[str]) -> None:
    """The unchecked writer's in-order test gives the Python passes' verdict with the C
    extension and without it, on batches with a wrong split or iteration, keys out of order,
    an iteration of another type, a str subclass split."""
    from rlio.writer.rollouts import in_order

    class Named(str):
        """A str subclass."""

    recs: list[Any] = []
    for n, change in enumerate(changes):
        rec = ordered_record(0, n)
        if change == "split":
            rec["split"] = "eval/x"
        elif change == "iteration":
            rec["iteration"] = 5
        elif change == "float-it":
            rec["iteration"] = 4.0
        elif change == "sub":
            rec["split"] = Named("train")
        elif change == "order":
            rec = dict(reversed(list(rec.items())))
        recs.append(rec)
    with pure_python(True):
        expected = in_order(recs, 4, "train")
    assert in_order(recs, 4, "train") == expected
