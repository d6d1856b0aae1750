"""log_metrics' compiled layout checks give the general path's verdict on every edge record.

A table of unusual records (non-finite floats under each nonfinite mode, bools, integers past 64
bits, nested values, bad keys, numpy scalars, wrong steps) is logged through the hot path (a plain
dict and an int step, its key layout compiled after it is seen twice) and through the general path
(the same metrics as a read-only mapping, which the hot path never takes): both must refuse the
same records with the same error (type, message, pointer) and write the same bytes otherwise.
"""

from __future__ import annotations

import decimal
import enum
import math
import pathlib
import types
from typing import Any

import jsonschema
import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import RunWriter
from rlio._schema.metrics_check import compile_metrics_check

NAN, INF = math.nan, math.inf

#: Keys with different rules in the metrics schema: a type only, ranges, integers, scalars.
KEYS = ["env/all/x", "progress/done_frac", "optim/lr", "time/total", "progress/batch",
        "time/sample:count", "name", "training_client/step", "optim/entropy"]


class Color(enum.Enum):
    RED = "red"


class Count(enum.IntEnum):
    ONE = 1


class FakeScalar:
    """A torch-like 0-d scalar."""

    ndim = 0

    def __init__(self, v: Any) -> None:
        self.v = v

    def item(self) -> Any:
        return self.v


class Loud(float):
    """A float subclass."""


VALUES: list[Any] = [
    0, 1, -1, 0.0, -0.0, 0.5, 1.0, 1.5, 3.0, -2.5, 1e300, NAN, INF, -INF, None, True, False,
    "x", "", 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1,
    [1], {"a": 1}, (1,), {}, [], Color.RED, Count.ONE, pathlib.Path("/p"), FakeScalar(0.5),
    FakeScalar(-1.0), decimal.Decimal("0.5"), Loud(0.5), Loud(-1.0), Loud(NAN), b"x",
    np.float32(0.5), np.float32(-1), np.float32(NAN), np.float32(INF), np.float32(3.0),
    np.float32(0.1), np.float64(0.5), np.float64(-INF), np.float64(NAN), np.float64(2.0),
    np.float16(1.5), np.int64(3), np.int64(-3), np.int64(2**62), np.int32(7), np.uint8(200),
    np.uint64(2**64 - 1), np.bool_(True), np.bool_(False), np.str_("s"), np.longdouble(0.5),
    np.complex64(1 + 2j), np.array(1.5), np.array([1.0, 2.0]), np.datetime64("2024-01-01"),
]

STEPS: list[Any] = [0, 7, -1, 2**63, 2**64 - 1, 2**64, True, 1.5, 3.0, NAN, "3", np.int64(3)]


def records() -> list[tuple[str, dict[Any, Any], Any]]:
    """(id, metrics, step): every value under every key, then bad keys and wrong steps."""
    out: list[tuple[str, dict[Any, Any], Any]] = []
    for key in KEYS:
        for value in VALUES:
            out.append((f"{key}={type(value).__name__}:{value!r}"[:60],
                        {"optim/kl": 0.25, key: value, "time/train": 1.0}, 5))
    for key in [1, None, 2.5, ("a",), "", "step", Color.RED, np.str_("env/s")]:
        out.append((f"key={key!r}", {"env/all/x": 0.5, key: 1.0}, 5))
    out.append(("step-key-equal", {"step": 5, "env/all/x": 0.5}, 5))
    out.append(("step-key-other", {"step": 6, "env/all/x": 0.5}, 5))
    out.append(("empty", {}, 5))
    for step in STEPS:
        out.append((f"step={type(step).__name__}:{step!r}", {"env/all/x": 0.5, "name": "a"},
                    step))
    wide = {f"env/m{k}": float(k) for k in range(200)}
    out.append(("200-keys", wide, 5))
    out.append(("200-keys-one-bad", {**wide, "env/m150": "bad"}, 5))
    out.append(("numpy-mix", {"env/a": np.float32(0.5), "env/b": np.float64(1.5),
                              "env/c": np.int64(3), "flag": np.bool_(True),
                              "time/t": np.float32(2.0), "progress/batch": np.int64(4)}, 5))
    return out


RECORDS = records()


def outcome(root: pathlib.Path, metrics: Any, step: Any, *, nonfinite: str,
            times: int) -> tuple[Any, bytes]:
    """(the last call's error as (type, message, pointer), or None; the bytes of that call)."""
    error: Any = None
    with RunWriter(root, nonfinite=nonfinite) as run:  # type: ignore[arg-type]
        path = root / "metrics.jsonl"
        for _ in range(times):
            before = path.stat().st_size
            error = None
            try:
                run.log_metrics(metrics, step=step)
            except (ValueError, TypeError) as exc:
                error = (type(exc).__name__, str(exc), getattr(exc, "pointer", None))
    data = path.read_bytes()
    return error, data[before:]


@pytest.mark.parametrize("nonfinite", ["null", "token"])
@pytest.mark.parametrize(("metrics", "step"), [(m, s) for _, m, s in RECORDS],
                         ids=[i for i, _, _ in RECORDS])
def test_hot_and_general_paths_agree_on_edge_records(tmp_path: pathlib.Path, metrics: Any,
                                                     step: Any, nonfinite: str) -> None:
    """Refused or not, with the same error text and key, and the same bytes when written."""
    # Three calls: the layout is compiled on its second sight, so the third is judged by it.
    hot = outcome(tmp_path / "hot", metrics, step, nonfinite=nonfinite, times=3)
    general = outcome(tmp_path / "general", types.MappingProxyType(metrics), step,
                      nonfinite=nonfinite, times=3)
    assert hot == general


def test_hot_path_writes_numpy_scalars_natively(tmp_path: pathlib.Path) -> None:
    """numpy scalars are written as orjson writes them natively (a float32 as its shortest
    repr), step first, by the compiled layout and by the general path alike."""
    rec = {"env/a": np.float32(0.1), "env/b": np.int64(-3), "flag": np.bool_(True),
           "time/t": np.float64(NAN), "progress/batch": np.int64(2)}
    with RunWriter(tmp_path) as run:
        for i in range(3):
            run.log_metrics(rec, step=i)
    lines = (tmp_path / "metrics.jsonl").read_bytes().splitlines()
    body = orjson.dumps(rec, option=orjson.OPT_SERIALIZE_NUMPY)[1:]
    # every line, whichever path wrote it (a layout compiles on its second sighting)
    assert lines == [b'{"step":%d,' % i + body for i in range(3)]
    assert orjson.loads(lines[2]) == {"step": 2, "env/a": 0.1, "env/b": -3, "flag": True,
                                      "time/t": None, "progress/batch": 2}


# -- the layout checks on other per-key schemas ---------------------------------------------------

SUBSCHEMAS = st.sampled_from([
    True, False, {}, {"type": "integer", "minimum": 0}, {"type": ["number", "null"]},
    {"type": "number"}, {"type": "number", "minimum": 0}, {"type": ["string", "boolean"]},
    {"type": ["integer", "null"]}, {"type": "integer"}, {"type": ["number", "boolean", "null"]},
    {"type": "string", "pattern": "^a"}, {"const": 1}, {"enum": [1, "x", None]},
    {"type": "number", "exclusiveMaximum": 1}, {"not": {"type": "string"}}, {"type": "null"},
])
SCALARS = (st.none() | st.booleans() | st.integers(-3, 3) | st.floats()
           | st.sampled_from([0.0, 1.0, 0.5, -1.0, 2**64, np.float32(0.5), np.float32(NAN),
                              np.float64(-1.0), np.int64(2), np.bool_(True)])
           | st.text(max_size=2))


@st.composite
def per_key_schemas(draw: st.DrawFn) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    props = draw(st.dictionaries(st.sampled_from(["a", "b", "ab", "step"]), SUBSCHEMAS,
                                 max_size=3))
    pats = draw(st.dictionaries(st.sampled_from(["^a", "b$", "^s"]), SUBSCHEMAS, max_size=2))
    if props:
        schema["properties"] = props
    if pats:
        schema["patternProperties"] = pats
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(SUBSCHEMAS)
    return schema


def plain(value: Any) -> Any:
    """What the strict-JSON writer puts on disk for a scalar (numpy as its item, NaN as null)."""
    value = value.item() if isinstance(value, np.generic) else value
    return None if isinstance(value, float) and not math.isfinite(value) else value


@settings(max_examples=300, deadline=None)
@given(per_key_schemas(), st.dictionaries(st.sampled_from(["a", "b", "ab", "xb", "c"]), SCALARS,
                                          max_size=4), st.integers(-2, 2))
def test_layout_check_never_accepts_what_the_schema_refuses(schema: dict[str, Any],
                                                            metrics: dict[str, Any],
                                                            step: int) -> None:
    """A compiled layout's True implies python-jsonschema accepts the written line, and plain
    JSON values the schema accepts are accepted (no needless trip to the general path)."""
    check = compile_metrics_check(schema, "step")
    assert check is not None
    keys = tuple(metrics)
    assert check.layout(keys) is None  # first sight
    layout = check.layout(keys)
    assert layout is not None
    line = {"step": step, **{k: plain(v) for k, v in metrics.items()}}
    valid = bool(jsonschema.validators.validator_for(schema)(schema).is_valid(line))
    verdict = layout(metrics, step)
    if verdict:
        assert valid
    elif all(type(v) in (int, float, str, bool, type(None)) for v in metrics.values()):
        assert not valid or any(isinstance(v, float) and not math.isfinite(v)
                                for v in metrics.values())


@pytest.mark.parametrize("value", [NAN, INF, -INF, np.float32(NAN), np.float64(INF)])
@pytest.mark.parametrize("sub", [{"type": "number"}, {"type": "number", "minimum": 0},
                                 {"type": "number", "maximum": 1}])
def test_non_finite_is_judged_as_the_null_written(sub: dict[str, Any], value: Any) -> None:
    """Under a key that refuses null, a NaN or infinity (plain or numpy) is not accepted."""
    check = compile_metrics_check({"properties": {"a": sub, "b": {"type": ["number", "null"]}}},
                                  "step")
    assert check is not None
    check.layout(("a", "b"))
    layout = check.layout(("a", "b"))
    assert layout is not None
    assert layout({"a": 0.5, "b": value}, 0)
    assert not layout({"a": value, "b": 0.5}, 0)


# -- the metrics schema's layouts are judged by the compiled check, not the general path ----------

COMMON = {"progress/batch": 3, "optim/lr": 4e-5, "time/train:count": 1, "time/total": 1.5,
          "env/all/reward": 0.25, "flag": True, "name": "run", "time/x:count": None,
          "env/all/nan": NAN}


@pytest.mark.parametrize("value", [1, None, 1.0, np.int64(2), np.float32(0.5), np.float64(NAN),
                                   np.bool_(False), 7.5])
def test_common_layouts_are_judged_by_their_compiled_check(value: Any) -> None:
    """Under the metrics schema, a layout mixing integer counts (``time/...:count``), numbers,
    flags and names gets python-jsonschema's verdict on its written line from its compiled
    check, before and after numpy types are learned: a valid common record never needs the
    general path."""
    from rlio.schema import error_schema

    schema = error_schema("metrics-line")
    check = compile_metrics_check(schema, "step")
    assert check is not None
    for where in ("time/train:count", "env/all/reward", "flag"):
        metrics = {**COMMON, where: value}
        check.layout(tuple(metrics))
        layout = check.layout(tuple(metrics))
        assert layout is not None
        line = {"step": 5, **{k: plain(v) for k, v in metrics.items()}}
        valid = bool(jsonschema.validators.validator_for(schema)(schema).is_valid(line))
        assert layout(metrics, 5) is valid, (where, value)
        assert layout(metrics, 5) is valid, (where, value)  # again, with numpy types learned
