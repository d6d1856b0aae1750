"""The writer refuses a record exactly when the validator reports an error on it.

Records are generated around every rule of the shipped schemas (each documented key set to an
edge value: wrong types, bounds, NaN and infinities, numpy scalars, patterns, missing keys) and
of docs/format.md §9 (reward sums about the tolerance, step_idx, repeated ids). Each is written
by a checked writer and, in another run, by a writer with ``check=False``; the validator's
verdict on the second run must be the first writer's: no error iff accepted, and then both
writers wrote the same bytes.
"""

from __future__ import annotations

import collections
import copy
import enum
import math
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from factories import ordered_record, set_at, writer_agrees_with_validator
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st

from rlio import RecordError, RunWriter
from rlio.rules import REWARD_TOLERANCE
from rlio.schema import error_schema

NAN, INF = math.nan, math.inf
EXAMPLES = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

#: Values about every kind of rule: types, integer bounds at 0, integral floats, non-finite
#: floats (written as null), 64-bit limits, strings for patterns and minLength, containers, and
#: numpy scalars (judged as the values they are written as).
EDGES: list[Any] = [
    None, True, False, 0, 1, -1, 7, 1.0, 0.0, -0.0, 1.5, -2.5, 1e300, NAN, INF, -INF,
    2**63 - 1, 2**64 - 1, 2**64, -(2**63) - 1, "", "x", "train", "eval/a", "eval/", "1",
    [], [1], ["a"], ("a",), {}, {"a": 1}, {"a": [1]}, {"a": None}, {"a": NAN}, {1: 1.0},
    np.int64(3), np.int64(-3), np.uint8(200), np.float32(0.5), np.float32(3.0),
    np.float64(NAN), np.float64(-1.0), np.bool_(True), np.str_("s"), object(),
]
#: Half edge values, half values most rules accept (so that both outcomes are common).
VALUES = st.sampled_from(EDGES) | st.sampled_from([0, 3, 0.25, 12.5, "name", "/ckpt/1"])


def agree(write: Callable[[RunWriter], None], files: tuple[str, ...]) -> None:
    """``factories.writer_agrees_with_validator``, its outcome counted in hypothesis' statistics."""
    accepted = writer_agrees_with_validator(write, files)
    if currently_in_test_context():
        event({True: "accepted", False: "refused", None: "not writable"}[accepted])


# -- metrics.jsonl ------------------------------------------------------------------------------

METRICS = error_schema("metrics-line")
METRIC_KEYS = [*METRICS["properties"], "time/total", "time/x:count", "env/all/reward", "loss",
               "name"]


@EXAMPLES
@given(st.dictionaries(st.sampled_from(METRIC_KEYS), VALUES, max_size=4),
       st.none() | VALUES)
def test_metrics_lines(metrics: dict[str, Any], step: Any) -> None:
    """A metrics line with edge values under every kind of key, and an edge step."""
    agree(lambda run: run.log_metrics(metrics, step=step), ("metrics.jsonl",))


# -- checkpoints.jsonl --------------------------------------------------------------------------

CHECKPOINT_KEYS = [k for k in error_schema("checkpoint-line")["properties"] if k != "name"]


@EXAMPLES
@given(st.sampled_from(["000010", "final", "000010", "", 3, None]),
       st.dictionaries(st.sampled_from([*CHECKPOINT_KEYS, "rolling"]),
                       VALUES | st.sampled_from([True, "tinker://r/w/1"]), max_size=3))
def test_checkpoint_records(name: Any, fields: dict[str, Any]) -> None:
    """A checkpoint record with edge values in each documented field (and an extra key)."""
    agree(lambda run: run.record_checkpoint(name, **fields), ("checkpoints.jsonl",))


# -- timing_spans.jsonl -------------------------------------------------------------------------

SPAN = {"name": "sample", "duration": 0.5, "wall_start": 100.0, "wall_end": 100.5}


@EXAMPLES
@given(VALUES, st.dictionaries(st.sampled_from([*SPAN, "extra"]), VALUES, max_size=2),
       st.lists(st.sampled_from(list(SPAN)), max_size=1))
def test_timing_span_lines(step: Any, changes: dict[str, Any], removed: list[str]) -> None:
    """A timing line with an edge step and edge values in (or a key missing from) a span."""
    span = {**SPAN, **changes}
    for key in removed:
        span.pop(key, None)
    agree(lambda run: run.log_timing_spans(step, [dict(SPAN), span]), ("timing_spans.jsonl",))


# -- rollout summaries --------------------------------------------------------------------------

ROLLOUT_FILE = "train_iteration_000004_rollout_summaries.jsonl"
STEP_PATHS = [["steps", 1, k] for k in error_schema("rollout-summary-line")["$defs"]["step"][
    "properties"]]
ROLLOUT_PATHS = [[k] for k in error_schema("rollout-summary-line")["properties"]] + STEP_PATHS + [
    ["trajectory_metrics", "x"], ["steps", 0, "metrics", "m"], ["steps", 0, "logs", "t"],
    ["extra"], ["steps", 0, "extra"], ["tags", 0]]


def _off_by(rec: dict[str, Any], off: float) -> None:
    """Set ``total_reward`` to the exact sum of its parts plus ``off`` tolerances."""
    parts = [rec["final_reward"], *(s["reward"] for s in rec["steps"])]
    rec["total_reward"] = math.fsum(parts) + off * REWARD_TOLERANCE * (
        1.0 + math.fsum(map(abs, parts)))


@EXAMPLES
@given(st.lists(st.tuples(st.sampled_from(ROLLOUT_PATHS), VALUES | st.just(KeyError)),
                max_size=2),
       st.sampled_from([None, 0.0, 0.999, 1.001, -1.001, 5.0]),
       st.sampled_from([None, "repeat", "step_idx"]))
def test_rollout_summaries(changes: list[tuple[list[Any], Any]], off: float | None,
                           cross: str | None) -> None:
    """Two records, the second with edge values (or keys removed), §9 damage on top."""
    recs = [ordered_record(0, 0), ordered_record(0, 1)]
    rec = recs[1]
    if off is not None:
        for s, r in zip(rec["steps"], (1e6, -1e6 + 0.125, 3.5), strict=True):
            s["reward"] = r
        _off_by(rec, off)
    if cross == "repeat":
        rec["traj_idx"] = 0
    elif cross == "step_idx":
        rec["steps"][2]["step_idx"] = 1
    for path, value in changes:
        try:
            if value is KeyError:
                node: Any = rec
                for part in path[:-1]:
                    node = node[part]
                node.pop(path[-1], None)
            else:
                set_at(rec, path, copy.deepcopy(value))
        except (KeyError, IndexError, TypeError, AttributeError):
            pass  # an earlier change removed what this one would change
    agree(lambda run: run.write_rollout_summaries(4, copy.deepcopy(recs)), (ROLLOUT_FILE,))


def _record(rewards: list[float], total: float, *, final: float = 0.0, traj: int = 0,
            step_idx: list[int] | None = None) -> dict[str, Any]:
    """A rollout-summary record of iteration 4 with one step per reward."""
    idx = step_idx if step_idx is not None else list(range(len(rewards)))
    steps = [{"step_idx": i, "ob_len": 3, "ac_len": 2, "reward": r,
              "episode_done": n == len(rewards) - 1, "metrics": {}, "logs": {}}
             for n, (i, r) in enumerate(zip(idx, rewards, strict=True))]
    return {"schema_version": 1, "split": "train", "iteration": 4, "group_idx": 0,
            "traj_idx": traj, "tags": [], "sampling_client_step": None, "total_reward": total,
            "final_reward": final, "trajectory_metrics": {}, "steps": steps, "final_ob_len": 4}


CASES = {
    "relative tolerance, one step": ([_record([1.0], 1.0000015)], True),
    "relative tolerance, cancelling steps": ([_record([1e6, -1e6], 1.5)], True),
    "beyond tolerance": ([_record([1.0], 1.00001)], False),
    "final reward missing from the total": ([_record([1.0], 1.0, final=1.0)], False),
    "step_idx off by one": ([_record([1.0, 0.0], 1.0, step_idx=[0, 2])], False),
    "pair repeated": ([_record([1.0], 1.0), _record([1.0], 1.0)], False),
    "two trajectories": ([_record([1.0], 1.0), _record([0.5], 0.5, traj=1)], True),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reward_and_id_rules(case: str) -> None:
    """The §9 cases named in CASES: accepted as listed, and the validator agrees."""
    records, accepted = CASES[case]
    with tempfile.TemporaryDirectory() as d, RunWriter(d) as run:
        try:
            run.write_rollout_summaries(4, copy.deepcopy(records))
            written = True
        except RecordError:
            written = False
    assert written is accepted
    agree(lambda run: run.write_rollout_summaries(4, copy.deepcopy(records)), (ROLLOUT_FILE,))


# -- the shipped schemas' property the writer relies on -------------------------------------------

def _subschemas(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        out.append(node)
        for value in node.values():
            out += _subschemas(value)
    elif isinstance(node, list):
        for value in node:
            out += _subschemas(value)
    return out


@pytest.mark.parametrize("name", ["metrics-line", "checkpoint-line", "timing-spans-line",
                                  "rollout-summary-line"])
def test_schemas_accept_null_wherever_they_accept_a_number(name: str) -> None:
    """Wherever an error-level rule admits a (non-integer) number it admits null, and number
    bounds sit on integers only: a NaN accepted as given is accepted as the null written, and a
    float32 is judged alike as given and as the shorter float written (see rlio.writer)."""
    for sub in _subschemas(error_schema(name)):
        types = sub.get("type")
        names = [types] if isinstance(types, str) else list(types or [])
        if "number" in names:
            assert "null" in names, sub
        if any(k in sub for k in ("minimum", "maximum", "exclusiveMinimum",
                                  "exclusiveMaximum")):
            assert "number" not in names and "integer" in names, sub


class _Tag(str):
    """A str subclass: orjson writes it as it is, the engine does not know the type."""


class _Group(enum.IntEnum):
    FIRST = 0


@pytest.mark.parametrize("over", [
    {"tags": [_Tag("a")]}, {"tags": ("a",)}, {"group_idx": _Group.FIRST},
    {"trajectory_metrics": collections.OrderedDict(turns=3)}, {"final_reward": NAN},
    {"group_idx": True}, {"tags": [_Tag("a")], "sampling_client_step": -1},
])
def test_records_judged_as_given_agree(over: dict[str, Any]) -> None:
    """A record orjson writes as it is, judged without re-decoding its line, gets the verdict
    of the line the validator reads (types the engine does not know fall back to the line)."""
    rec = ordered_record(0, 0, **over)
    agree(lambda run: run.write_rollout_summaries(4, [copy.deepcopy(rec)]), (ROLLOUT_FILE,))
