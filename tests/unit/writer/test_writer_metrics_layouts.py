"""log_metrics' last-layout shortcut gives the general path's verdict when layouts alternate.

The hot path reuses the compiled check of the last key layout when the keys' list is equal; a
sequence of records over a few layouts (equal keys as distinct objects, keys equal across types
such as ``1`` and ``True``, a layout changed by one key) with random values is logged through one
writer's hot path and through the general path (a read-only mapping): each call must be refused
or written alike, with the same error and the same bytes. Where the C extension is built, the
same sequences in every call form give the same errors and bytes with it and without it.
"""

from __future__ import annotations

import math
import pathlib
import tempfile
import types
from typing import Any

import numpy as np
import pytest
from factories import pure_python
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import RunWriter
from rlio.writer.support import metrics_layouts

LAYOUTS: list[list[Any]] = [
    ["progress/batch", "optim/lr", "env/all/reward", "time/train:count"],
    ["progress/batch", "optim/lr", "env/all/reward", "name"],
    ["optim/lr", "progress/batch", "env/all/reward", "time/train:count"],
    ["env/a", 1, "x"],
    ["env/a", True, "x"],
    ["env/a", 1.0, "x"],
    [],
]

VALUES = (st.none() | st.booleans() | st.integers(-3, 3) | st.integers(2**63 - 1, 2**64)
          | st.floats() | st.sampled_from([math.nan, 1.0, 0.5, np.float32(0.5), np.int64(-2),
                                           np.bool_(True), np.float64(math.inf)])
          | st.text(max_size=2) | st.lists(st.integers(), max_size=1)
          | st.dictionaries(st.text(max_size=1), st.integers(), max_size=1))


def fresh(key: Any) -> Any:
    """An equal key that is a distinct object (a str built anew), as f-strings make them."""
    return "".join(list(key)) if type(key) is str else key


@st.composite
def sequences(draw: st.DrawFn) -> list[tuple[dict[Any, Any], int]]:
    out = []
    for step in range(draw(st.integers(3, 12))):
        keys = LAYOUTS[draw(st.integers(0, len(LAYOUTS) - 1))]
        out.append(({fresh(k): draw(VALUES) for k in keys}, step))
    return out


def outcomes(root: str, calls: list[tuple[Any, int]]) -> tuple[list[Any], bytes]:
    """Each call's error as (type, message, pointer) or None, and the file's bytes."""
    errors: list[Any] = []
    with RunWriter(root) as run:
        for metrics, step in calls:
            try:
                run.log_metrics(metrics, step=step)
                errors.append(None)
            except (ValueError, TypeError) as exc:
                errors.append((type(exc).__name__, str(exc), getattr(exc, "pointer", None)))
    return errors, pathlib.Path(root, "metrics.jsonl").read_bytes()


@settings(max_examples=150, deadline=None)
@given(sequences())
def test_alternating_layouts_are_judged_as_the_general_path_judges(
        calls: list[tuple[dict[Any, Any], int]]) -> None:
    """Every call of a sequence over alternating layouts: the same refusal or the same bytes."""
    with tempfile.TemporaryDirectory() as hot, tempfile.TemporaryDirectory() as general:
        proxied = [(types.MappingProxyType(m), s) for m, s in calls]
        assert outcomes(hot, list(calls)) == outcomes(general, proxied)  # type: ignore[arg-type]


def test_equal_keys_of_another_type_are_judged_as_the_general_path_judges() -> None:
    """Layouts with keys ``1``, ``True``, ``1.0`` after one another, each seen three times,
    and a bad value in a repeated layout: refused or written as the general path does."""
    calls: list[tuple[Any, int]] = []
    for key in [1, True, 1.0, "x", fresh("x")]:
        calls += [({"env/a": 0.5, key: 1.0}, len(calls)) for _ in range(3)]
    calls.append(({"env/a": "bad", "x": 1.0}, len(calls)))
    calls.append(({"env/a": 0.25, "x": 1.0}, len(calls)))
    with tempfile.TemporaryDirectory() as hot, tempfile.TemporaryDirectory() as general:
        proxied = [(types.MappingProxyType(m), s) for m, s in calls]
        hot_out, general_out = outcomes(hot, calls), outcomes(general, proxied)
    assert hot_out == general_out
    assert hot_out[0][-2] is not None and hot_out[0][-1] is None  # the bad value is refused


SEEN_AT_COMPILE = [np.float32(0.5), np.float64(0.5), np.int64(3), np.bool_(True), 0.5, 3, None,
                   True, "s", math.nan]


@pytest.mark.parametrize("first", SEEN_AT_COMPILE, ids=repr)
def test_type_seen_at_compile_time_does_not_change_later_verdicts(first: Any) -> None:
    """A layout compiled while its values had one type judges later values of every other
    type (numpy, plain, bool, str, NaN, nested, a float subclass) as the general path does."""

    class Loud(float):
        """A float subclass."""

    later = [*SEEN_AT_COMPILE, np.float16(1.5), np.uint8(7), Loud(0.5), [1], {"a": 1}, 2**64]
    keys = ["env/all/x", "time/t:count", "optim/lr", "flag", "progress/batch"]
    calls: list[tuple[Any, int]] = [({k: first for k in keys}, 0), ({k: first for k in keys}, 1)]
    calls += [({k: value for k in keys}, 2 + i) for i, value in enumerate(later)]
    calls += [({**{k: first for k in keys}, key: value}, 100 + i)
              for i, (key, value) in enumerate((k, v) for k in keys for v in later)]
    with tempfile.TemporaryDirectory() as hot, tempfile.TemporaryDirectory() as general:
        proxied = [(types.MappingProxyType(m), s) for m, s in calls]
        assert outcomes(hot, calls) == outcomes(general, proxied)


@st.composite
def call_forms(draw: st.DrawFn) -> list[tuple[Any, Any, str]]:
    """A sequence as ``sequences`` draws it, each call in one of the forms a loop may use:
    step by keyword or position, no step (a ``"step"`` key or none), or a ``"step"`` key too."""
    out = []
    for metrics, step in draw(sequences()):
        form = draw(st.sampled_from(["keyword", "keyword", "position", "none", "both"]))
        if form in ("none", "both"):
            metrics = {"step": step, **metrics}
        out.append((metrics, None if form == "none" else step, form))
    return out


def form_outcomes(root: str, calls: list[tuple[Any, Any, str]],
                  pure: bool) -> tuple[list[Any], bytes, int]:
    """Each call's error (or None), the file's bytes, and how many lines the C path wrote
    (from a process without compiled layouts: their number per process is bounded)."""
    metrics_layouts.cache_clear()
    errors: list[Any] = []
    with pure_python(pure), RunWriter(root) as run:
        for metrics, step, form in calls:
            try:
                if form == "position":
                    run.log_metrics(metrics, step)
                elif step is None:
                    run.log_metrics(metrics)
                else:
                    run.log_metrics(metrics, step=step)
                errors.append(None)
            except (ValueError, TypeError) as exc:
                errors.append((type(exc).__name__, str(exc), getattr(exc, "pointer", None)))
        fast = getattr(run.log_metrics, "count", 0)
    return errors, pathlib.Path(root, "metrics.jsonl").read_bytes(), fast


@settings(max_examples=150, deadline=None)
@given(call_forms())
def test_the_c_path_judges_and_writes_every_call_as_the_python_path(
        calls: list[tuple[Any, Any, str]]) -> None:
    """Where the C extension is built, a writer using it and one on the Python path give each
    call of a sequence (every call form, alternating layouts) the same refusal or bytes."""
    with tempfile.TemporaryDirectory() as fast, tempfile.TemporaryDirectory() as pure:
        c_errors, c_bytes, _ = form_outcomes(fast, calls, pure=False)
        p_errors, p_bytes, p_fast = form_outcomes(pure, calls, pure=True)
    assert (c_errors, c_bytes) == (p_errors, p_bytes)
    assert p_fast == 0  # the pure writer never reached C
