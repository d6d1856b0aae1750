"""Rollout-summary records in SPEC §6 order, and the SPEC §9 checks a writer can make per file.

The writer's fast path: a record already in order is passed through untouched; otherwise keys
(and each step's keys) are reordered into a new dict. Nothing is filled in except what the call
determines (``schema_version``, ``split``, ``iteration``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

from .errors import RecordError

#: Key order of a rollout-summary record and of one of its steps (SPEC §6).
ROLLOUT_KEYS: Final = (
    "schema_version", "split", "iteration", "group_idx", "traj_idx", "tags",
    "sampling_client_step", "total_reward", "final_reward", "trajectory_metrics", "steps",
    "final_ob_len",
)
STEP_KEYS: Final = ("step_idx", "ob_len", "ac_len", "reward", "episode_done", "metrics", "logs")
_ROLLOUT_KEY_SET: Final = frozenset(ROLLOUT_KEYS)
_STEP_KEY_SET: Final = frozenset(STEP_KEYS)
#: Relative and absolute tolerance of the total_reward consistency check (SPEC §9).
REWARD_TOLERANCE: Final = 1e-6


def _record_error(index: int, pointer: str, reason: str) -> RecordError:
    return RecordError(f"rollout summary record {index} at {pointer or '/'}: {reason}",
                       index=index, pointer=pointer)


def ordered_rollout(rec: Any, iteration: int, split: str, index: int) -> dict[str, Any]:
    """``rec`` with its keys (and its steps') in SPEC order; fills version, split, iteration."""
    if type(rec) is dict and tuple(rec) == ROLLOUT_KEYS:
        steps = rec["steps"]
        if (rec["split"] == split and rec["iteration"] == iteration
                and type(rec["iteration"]) is int and type(steps) is list):
            for step in steps:
                if type(step) is not dict or tuple(step) != STEP_KEYS:
                    break
            else:
                return rec  # the common case: already in order, nothing to copy
    if not isinstance(rec, Mapping):
        raise _record_error(index, "", f"expected a mapping, got {type(rec).__name__}")
    given_split = rec.get("split", split)
    if given_split != split:
        raise _record_error(index, "/split", f"split {given_split!r} does not match this file's "
                                             f"split {split!r}")
    given_it = rec.get("iteration", iteration)
    if isinstance(given_it, bool) or given_it != iteration:
        raise _record_error(index, "/iteration", f"iteration {given_it!r} does not match the "
                                                 f"file's iteration {iteration}")
    out: dict[str, Any] = {"schema_version": rec.get("schema_version", 1), "split": split,
                           "iteration": iteration}
    for key in ROLLOUT_KEYS[3:]:
        if key in rec:
            out[key] = rec[key]
    out.update((k, v) for k, v in rec.items() if k not in _ROLLOUT_KEY_SET)
    steps = rec.get("steps")
    if isinstance(steps, (list, tuple)):
        out["steps"] = [_ordered_step(s) for s in steps]
    return out


def _ordered_step(step: Any) -> Any:
    if not isinstance(step, Mapping) or (type(step) is dict and tuple(step) == STEP_KEYS):
        return step
    out = {k: step[k] for k in STEP_KEYS if k in step}
    out.update((k, v) for k, v in step.items() if k not in _STEP_KEY_SET)
    return out


def cross_check(rec: dict[str, Any], index: int, seen: set[tuple[Any, Any]]) -> None:
    """SPEC §9 checks on a schema-valid record: unique ids, step_idx order, reward sum."""
    pair = (rec["group_idx"], rec["traj_idx"])
    if pair in seen:
        raise _record_error(index, "/traj_idx", f"(group_idx, traj_idx) = {pair} appears twice "
                                                "in this file")
    seen.add(pair)
    parts = [rec["final_reward"]]
    for i, step in enumerate(rec["steps"]):
        if step["step_idx"] != i:
            raise _record_error(index, f"/steps/{i}/step_idx",
                                f"step_idx {step['step_idx']!r} should be {i} (its position)")
        parts.append(step["reward"])
    total = rec["total_reward"]
    try:
        if total is None or not math.isfinite(total):
            return  # nothing to compare
        expected = math.fsum(parts)  # exactly rounded: independent of summation order
    except (TypeError, OverflowError, ValueError):
        return  # a null reward, or sums beyond floats: nothing to compare against
    if math.isfinite(expected) and not math.isclose(
        total, expected, rel_tol=REWARD_TOLERANCE, abs_tol=REWARD_TOLERANCE
    ):
        raise _record_error(index, "/total_reward",
                            f"total_reward {total!r} differs from the step rewards plus "
                            f"final_reward (sum {expected!r}, tolerance {REWARD_TOLERANCE})")
