"""``write_rollout_summaries`` on larger damaged batches, judged against the validator.

Batches of up to 515 records, with damage of every kind (numpy scalars, NaN, swapped step keys of
one type, duplicate ids far apart, reward sums about the tolerance, missing keys, wrong types):
the writer refuses a batch exactly when the validator reports an error in the same records
written with ``check=False``, and writes what the unchecked writer writes when it accepts.
"""

from __future__ import annotations

import copy
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from factories import ordered_record, rollout_write_outcome, set_at, writer_agrees_with_validator
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import RecordError, RunWriter, validate_run
from rlio.findings import Severity
from rlio.rules import REWARD_TOLERANCE
from rlio.schema import load_schema

ROLLOUT = load_schema("rollout-summary-line")
STEP_KEYS = tuple(ROLLOUT["$defs"]["step"]["properties"])
FILE = "train_iteration_000004_rollout_summaries.jsonl"
#: A batch size of the tests (twice it and more: batches of several hundred records).
BATCH = 256


def agree(recs: list[Any]) -> bool | None:
    """Whether the writer accepted ``recs``, once it was seen to agree with the validator."""
    return writer_agrees_with_validator(
        lambda run: run.write_rollout_summaries(4, copy.deepcopy(recs)), (FILE,))


#: Damage at one place: (path, value). Wrong types, NaN, numpy scalars, ranges, extra keys.
DAMAGE: list[tuple[list[Any], Any]] = [
    (["group_idx"], -1), (["group_idx"], True), (["group_idx"], 1.0), (["traj_idx"], 2.5),
    (["group_idx"], np.int64(0)), (["schema_version"], 2), (["schema_version"], 1.0),
    (["schema_version"], True), (["schema_version"], np.int64(1)), (["split"], "eval/x"),
    (["split"], 3), (["iteration"], 5), (["iteration"], 4.0), (["iteration"], np.int64(4)),
    (["tags"], ["a", 1]), (["tags"], ("a",)), (["tags"], []), (["tags"], [np.str_("a")]),
    (["sampling_client_step"], None), (["sampling_client_step"], -1),
    (["sampling_client_step"], 4.0), (["total_reward"], None), (["total_reward"], math.nan),
    (["total_reward"], math.inf), (["total_reward"], 99.0), (["total_reward"], np.float64(1.75)),
    (["total_reward"], np.float32(1.75)), (["total_reward"], 1.75 + 5e-7),
    (["total_reward"], 1.75 + 2e-6), (["total_reward"], 2), (["final_reward"], None),
    (["final_reward"], "1"), (["final_reward"], math.nan), (["final_reward"], True),
    (["trajectory_metrics"], {"x": [1]}), (["trajectory_metrics"], {"x": None}),
    (["trajectory_metrics"], {"x": np.float64(1.0)}), (["trajectory_metrics"], {1: 1.0}),
    (["trajectory_metrics"], {"x": math.nan}), (["trajectory_metrics"], []),
    (["final_ob_len"], -3), (["final_ob_len"], 2**64), (["final_ob_len"], 2**63),
    (["steps"], []), (["steps"], ()), (["steps", 0, "step_idx"], 1),
    (["steps", 1, "step_idx"], 1.0), (["steps", 1, "step_idx"], True),
    (["steps", 0, "ob_len"], "10"), (["steps", 0, "ob_len"], np.int32(10)),
    (["steps", 0, "ac_len"], -1), (["steps", 0, "reward"], None),
    (["steps", 0, "reward"], math.inf), (["steps", 0, "reward"], math.nan),
    (["steps", 0, "reward"], np.float32(0.25)), (["steps", 0, "reward"], 0),
    (["steps", 0, "episode_done"], 0), (["steps", 0, "episode_done"], np.bool_(False)),
    (["steps", 0, "metrics"], {"k": {"n": 1}}), (["steps", 0, "metrics"], {"k": math.nan}),
    (["steps", 0, "logs"], None), (["steps", 0, "stop_reason"], "stop"),
    (["steps", 0, "trace"], {"any": [1, {"x": None}]}), (["steps", 0, "extra"], 1),
    (["extra"], 1), (["steps", 0], [1, 2]), (["steps", 0], None),
]


def _reorder_step(rec: dict[str, Any], i: int, swap: bool = False) -> None:
    """Step ``i``'s keys reversed, or (``swap``) only ob_len and ac_len swapped: values of the
    same type, so only the key order tells the layout apart."""
    items = list(rec["steps"][i].items())
    if swap:
        items[1], items[2] = items[2], items[1]
    rec["steps"][i] = dict(items if swap else reversed(items))


@st.composite
def damaged_batches(draw: st.DrawFn) -> list[Any]:
    """Batches of 1 to 515 records, a few of them damaged."""
    n = draw(st.sampled_from([1, 2, 5, BATCH - 1, BATCH, BATCH + 1, 2 * BATCH + 3]))
    steps = draw(st.sampled_from([None, 0, 1, 4]))  # None: every record its own count
    recs: list[Any] = []
    for i in range(n):
        count = draw(st.integers(0, 4)) if steps is None and i < 8 else (steps or 0)
        recs.append(ordered_record(i // 16, i % 16, n=count))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, n - 1))
        rec = recs[i]
        kind = draw(st.integers(0, 8))
        try:
            if kind == 0:  # keys out of order
                recs[i] = dict(reversed(list(rec.items())))
            elif kind == 1:  # a step's keys out of order
                _reorder_step(rec, draw(st.integers(0, 3)), swap=draw(st.booleans()))
            elif kind == 2:  # a key missing (from the record or a step)
                target = rec if draw(st.booleans()) else rec["steps"][0]
                target.pop(draw(st.sampled_from(list(target))))
            elif kind == 3:  # a duplicate id, maybe far apart
                j = draw(st.integers(0, n - 1))
                rec["group_idx"], rec["traj_idx"] = recs[j]["group_idx"], recs[j]["traj_idx"]
            elif kind == 4:  # the optional stop_reason on every step of this record
                rec["steps"] = [{k: s.get(k, "stop") for k in STEP_KEYS
                                 if k in s or k == "stop_reason"} for s in rec["steps"]]
            elif kind == 5:  # the keys the call fills in left out
                for k in ("schema_version", "split", "iteration"):
                    rec.pop(k)
            elif kind == 6:  # rewards whose sum is off by about the tolerance
                rewards = [draw(st.floats(-1e12, 1e12)) for _ in rec["steps"]]
                for s, r in zip(rec["steps"], rewards, strict=True):
                    s["reward"] = r
                parts = [rec["final_reward"], *rewards]
                scale = 1.0 + math.fsum(map(abs, parts))
                off = draw(st.sampled_from([0.0, 0.5, 0.999, 1.0, 1.001, 2.0, -1.0, -1.001]))
                rec["total_reward"] = math.fsum(parts) + off * REWARD_TOLERANCE * scale
            elif kind == 7:  # not a dict at all
                recs[i] = draw(st.sampled_from([None, [1], "x", 3]))
            else:
                path, value = draw(st.sampled_from(DAMAGE))
                set_at(rec, path, copy.deepcopy(value))
        except (KeyError, IndexError, TypeError, AttributeError):
            pass  # an earlier change removed what this one would change
    return recs


@settings(max_examples=60, deadline=None)
@given(damaged_batches())
def test_damaged_batches_are_refused_iff_the_validator_finds_an_error(recs: list[Any]) -> None:
    """Generated damaged batches: refused exactly when the validator reports an error."""
    agree(recs)


def _at_iteration(path: list[Any], value: Any, it: int) -> Any:
    """A DAMAGE value for a batch of iteration ``it`` instead of 4: an ``iteration`` damage keeps
    its type and its offset from the file's iteration (5 -> it + 1, 4.0 -> float(it))."""
    if path == ["iteration"] and not isinstance(value, bool):
        return type(value)(value - 4 + it)
    return copy.deepcopy(value)


def _write_each(root: Path, batches: list[list[Any]], *, check: bool) -> list[bool | None]:
    """Write batch k as iteration 10 + k of one run: True (written), False (RecordError) or
    None (another error: not writable at all)."""
    out: list[bool | None] = []
    with RunWriter(root, check=check) as run:
        for k, recs in enumerate(batches):
            try:
                run.write_rollout_summaries(10 + k, copy.deepcopy(recs))
                out.append(True)
            except RecordError:
                out.append(False)
    return out


@pytest.mark.parametrize("at", [1, BATCH + 2])
def test_each_damage_is_refused_iff_the_validator_finds_an_error(tmp_path: Path,
                                                                 at: int) -> None:
    """Every damage in DAMAGE, early or late in a batch of BATCH + 5 records, is refused exactly
    when the validator reports an error in that batch written unchecked; an accepted batch is
    written byte for byte as the unchecked writer writes it. Each damage is its own iteration of
    one run (a finding names its file): two runs per position, not four per damage."""
    batches = []
    for k, (path, value) in enumerate(DAMAGE):
        it = 10 + k
        recs = [ordered_record(i // 8, i % 8, iteration=it) for i in range(BATCH + 5)]
        set_at(recs[at], path, _at_iteration(path, value, it))
        batches.append(recs)
    checked = _write_each(tmp_path / "checked", batches, check=True)
    unchecked = _write_each(tmp_path / "unchecked", batches, check=False)
    errors = [f for f in validate_run(tmp_path / "unchecked", max_findings_per_code=10**6)
              .findings if f.severity == Severity.ERROR]
    bad = {f.file for f in errors}
    for k, (path, value) in enumerate(DAMAGE):
        rel = f"train_iteration_{10 + k:06d}_rollout_summaries.jsonl"
        damage = (path, value, checked[k], unchecked[k])
        if not unchecked[k]:  # not writable even unchecked: refused by the checked writer too
            assert checked[k] is False, damage
            continue
        assert checked[k] == (rel not in bad), damage
        if checked[k]:
            assert (tmp_path / "checked" / rel).read_bytes() == \
                (tmp_path / "unchecked" / rel).read_bytes(), damage
    assert bad <= {f"train_iteration_{10 + k:06d}_rollout_summaries.jsonl"
                   for k in range(len(DAMAGE))}, bad


@pytest.mark.parametrize("at", [(0, 0), (0, 2), (BATCH + 1, 1)])
@pytest.mark.parametrize("swap", [True, False])
def test_step_keys_out_of_order_are_written_in_documented_order(at: tuple[int, int],
                                                                swap: bool) -> None:
    """A step whose keys are out of documented order (even swapped keys of one type) is
    written in documented order, wherever it sits in the batch."""
    recs = [ordered_record(i // 8, i % 8) for i in range(BATCH + 5)]
    expected = b"".join(orjson.dumps(r) + b"\n" for r in recs)
    _reorder_step(recs[at[0]], at[1], swap=swap)
    with tempfile.TemporaryDirectory() as d:
        assert rollout_write_outcome(d, recs) == (expected, None)


@pytest.mark.parametrize("late", [1, BATCH, 2 * BATCH + 1])
def test_duplicate_id_far_apart_is_named(late: int) -> None:
    """A (group_idx, traj_idx) repeated hundreds of records later: a RecordError naming it."""
    recs = [ordered_record(i // 8, i % 8) for i in range(2 * BATCH + 4)]
    recs[late]["group_idx"], recs[late]["traj_idx"] = 0, 0
    with tempfile.TemporaryDirectory() as d:
        data, error = rollout_write_outcome(d, recs)
    assert data == b"<absent>" and error is not None and error[:2] == (late, "/traj_idx")
    assert agree(recs) is False
