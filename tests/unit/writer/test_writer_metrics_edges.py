"""log_metrics on every edge record: refused exactly when the validator finds an error.

A table of unusual records (non-finite floats under each nonfinite mode, bools, integers past 64
bits, nested values, bad keys, numpy scalars, wrong steps) is logged by a checked writer and by
one with ``check=False``: the checked one refuses exactly the records the validator reports as an
error, and a read-only mapping of the same metrics gets the same outcome as the dict. The whole
table goes through one run per writer (a line's findings name its line), so its 600-odd records
cost three runs per mode, not 2,500; a property test then mixes edge values within one record.
"""

from __future__ import annotations

import decimal
import enum
import math
import pathlib
import types
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson
import pytest
from factories import writer_agrees_with_validator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlio import RunWriter, validate_run
from rlio.findings import Severity

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


Outcome = tuple[str, str, Any] | None


def log_all(root: pathlib.Path, table: list[tuple[Mapping[Any, Any], Any]], *, check: bool,
            nonfinite: str) -> list[Outcome]:
    """Log every (metrics, step) of ``table`` into one run at ``root``; each call's error as
    (type, message, pointer), or None when it wrote its line."""
    out: list[Outcome] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the table's steps go backwards on purpose
        with RunWriter(root, check=check, nonfinite=nonfinite) as run:  # type: ignore[arg-type]
            for metrics, step in table:
                try:
                    run.log_metrics(metrics, step=step)
                    out.append(None)
                except (ValueError, TypeError) as exc:
                    out.append((type(exc).__name__, str(exc), getattr(exc, "pointer", None)))
    return out


@pytest.mark.parametrize("nonfinite", ["null", "token"])
def test_edge_records_are_refused_iff_the_validator_finds_an_error(
        tmp_path: pathlib.Path, nonfinite: str) -> None:
    """Each record of the table is refused (RecordError) exactly when the validator reports an
    error on the line an unchecked writer wrote for it; accepted lines are byte-identical; a
    record not writable even unchecked is refused; a read-only mapping gets the dict's outcome."""
    table = [(m, s) for _, m, s in RECORDS]
    checked = log_all(tmp_path / "checked", table, check=True, nonfinite=nonfinite)
    unchecked = log_all(tmp_path / "unchecked", table, check=False, nonfinite=nonfinite)
    mapped = log_all(tmp_path / "mapping", [(types.MappingProxyType(m), s) for m, s in table],
                     check=True, nonfinite=nonfinite)
    assert mapped == checked
    assert (tmp_path / "mapping" / "metrics.jsonl").read_bytes() == \
        (tmp_path / "checked" / "metrics.jsonl").read_bytes()
    errors = [f for f in validate_run(tmp_path / "unchecked", max_findings_per_code=10**6)
              .findings if f.severity == Severity.ERROR]
    assert all(f.file == "metrics.jsonl" and f.line is not None for f in errors), errors
    bad_lines = {f.line for f in errors}
    unchecked_lines = (tmp_path / "unchecked" / "metrics.jsonl").read_bytes().splitlines()
    kept: list[bytes] = []
    line = 0
    for (rid, _, _), ok, raw in zip(RECORDS, checked, unchecked, strict=True):
        if raw is not None:  # not writable at all (an object, an integer beyond 64 bits)
            assert ok is not None and ok[0] in ("RecordError", "TypeError"), rid
            continue
        line += 1
        assert (ok is None) == (line not in bad_lines), (rid, ok)
        assert ok is None or ok[0] == "RecordError", (rid, ok)
        if ok is None:
            kept.append(unchecked_lines[line - 1])
    assert (tmp_path / "checked" / "metrics.jsonl").read_bytes().splitlines() == kept


#: One metric: any key of the table with any value of the table.
ENTRY = st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=st.lists(ENTRY, min_size=1, max_size=4), step=st.sampled_from(STEPS),
       nonfinite=st.sampled_from(["null", "token"]))
def test_a_record_mixing_edge_values_is_refused_iff_the_validator_finds_an_error(
        entries: list[tuple[str, Any]], step: Any, nonfinite: str) -> None:
    """A record holding several edge values at once (and an edge step) is refused exactly when
    the validator reports an error for what the unchecked writer wrote."""
    metrics = {"optim/kl": 0.25, **dict(entries)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        writer_agrees_with_validator(lambda run: run.log_metrics(metrics, step=step),
                                     ("metrics.jsonl",), nonfinite=nonfinite)


def test_numpy_scalars_are_written_natively(tmp_path: pathlib.Path) -> None:
    """numpy scalars are written as orjson writes them natively (a float32 as its shortest
    repr, a NaN as null), step first."""
    rec = {"env/a": np.float32(0.1), "env/b": np.int64(-3), "flag": np.bool_(True),
           "time/t": np.float64(NAN), "progress/batch": np.int64(2)}
    with RunWriter(tmp_path) as run:
        for i in range(3):
            run.log_metrics(rec, step=i)
    lines = (tmp_path / "metrics.jsonl").read_bytes().splitlines()
    body = orjson.dumps(rec, option=orjson.OPT_SERIALIZE_NUMPY)[1:]
    assert lines == [b'{"step":%d,' % i + body for i in range(3)]
    assert orjson.loads(lines[2]) == {"step": 2, "env/a": 0.1, "env/b": -3, "flag": True,
                                      "time/t": None, "progress/batch": 2}
