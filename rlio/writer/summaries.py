"""Rollout-summary records in docs/format.md §6 key order, and the §9 checks across one file.

The documented key orders are the ``properties`` orders of the rollout-summary schema (one owner
per fact). A record already in order is passed through untouched; otherwise its keys (and each
step's: documented ones first, in order, then extra keys as given) are copied into a new dict.
Nothing is filled in except what the call determines (``schema_version``, ``split``,
``iteration``). The §9 rules themselves are ``rlio.rules``'; this module names what breaks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from rlio.errors import RecordError
from rlio.rules import (
    REWARD_TOLERANCE,
    bad_step_index,
    iteration_mismatch,
    reward_mismatch,
    split_mismatch,
    trajectory_id,
)
from rlio.schema import record_schema

_SCHEMA = record_schema("rollout-summary-line")
_STEP = _SCHEMA.part("step")
#: Key order of a rollout-summary record and of one of its steps (docs/format.md §6), from schema.
ROLLOUT_KEYS: Final[tuple[str, ...]] = _SCHEMA.keys
STEP_KEYS: Final[tuple[str, ...]] = _STEP.keys
_ROLLOUT_KEY_SET: Final = frozenset(ROLLOUT_KEYS)
_STEP_RANK: Final = {k: i for i, k in enumerate(STEP_KEYS)}
#: The usual step layout: the required keys in documented order (compared first).
_STEP_REQUIRED: Final = list(_STEP.required)
_ROLLOUT_KEY_LIST: Final = list(ROLLOUT_KEYS)


def record_error(index: int, pointer: str, reason: str) -> RecordError:
    """The ``RecordError`` of rollout summary record ``index`` at ``pointer``."""
    return RecordError(f"rollout summary record {index} at {pointer or '/'}: {reason}",
                       index=index, pointer=pointer)


def records_argument(iteration: Any, records: Any) -> None:
    """Refuse a ``records`` argument that is not a collection of records (a single mapping, a
    string), before its keys or characters are taken for records.

    Raises:
        TypeError: naming the argument and the call.
    """
    if isinstance(records, (Mapping, str, bytes)) or not hasattr(records, "__iter__"):
        raise TypeError(
            f"write_rollout_summaries({iteration!r:.20}, records): the argument `records` must be"
            f" a list of mappings (one rollout summary per trajectory), got "
            f"{type(records).__name__} {records!r:.60}"
            + (" (wrap one record in a list: [record])" if isinstance(records, Mapping) else ""))


def _in_order(rec: Any, iteration: int, split: str) -> bool:
    """Whether ``rec`` needs nothing from ``ordered_rollout``: a dict in documented key order with
    the file's split and an int iteration, its steps dicts with their keys in documented order."""
    if type(rec) is not dict or [*rec] != _ROLLOUT_KEY_LIST:
        return False
    steps = rec["steps"]
    if rec["split"] != split or type(rec["iteration"]) is not int \
            or rec["iteration"] != iteration or type(steps) is not list:
        return False
    for step in steps:
        if type(step) is not dict:
            return False
        keys = [*step]
        if keys != _STEP_REQUIRED and keys != sorted(keys, key=_step_rank):
            return False
    return True


def _step_rank(key: str) -> int:
    return _STEP_RANK.get(key, len(_STEP_RANK))


def ordered_rollout(rec: Any, iteration: int, split: str, index: int) -> Any:
    """``rec`` with keys (and its steps') in documented order; fills version, split, iteration.

    Raises:
        RecordError: ``rec`` is not a mapping, or its split or iteration is not the file's.
    """
    if _in_order(rec, iteration, split):
        return rec
    if not isinstance(rec, Mapping):
        raise record_error(index, "", f"write_rollout_summaries: records[{index}] is "
                                      f"{type(rec).__name__} {rec!r:.40}, not a mapping (records "
                                      f"must be a list of mappings, one per trajectory)")
    given_split = rec.get("split", split)
    if split_mismatch(given_split, frozenset({split})):
        raise record_error(index, "/split", f"split {given_split!r} does not match this file's "
                                            f"split {split!r}")
    given_it = rec.get("iteration", iteration)
    if iteration_mismatch(given_it, iteration):
        raise record_error(index, "/iteration", f"iteration {given_it!r} does not match the "
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
    if not isinstance(step, Mapping):
        return step
    return {k: step[k] for k in sorted(step, key=_step_rank)}  # stable: extras as given


def cross_check(rec: dict[str, Any], index: int, seen: set[tuple[Any, Any]]) -> None:
    """docs/format.md §9 on a schema-valid record (``rlio.rules``): ids, step_idx, rewards.

    ``seen`` holds the ``(group_idx, traj_idx)`` pairs of the file's earlier records
    (``rlio.rules.trajectory_id``). Refuses
    exactly what the validator reports as an error (RL403, RL404, RL405).

    Raises:
        RecordError: naming the record and the pointer of the value breaking a rule.
    """
    pair = trajectory_id(rec["group_idx"], rec["traj_idx"])
    if pair is not None:
        if pair in seen:
            raise record_error(index, "/traj_idx", f"(group_idx, traj_idx) = {pair} appears "
                                                   "twice in this file")
        seen.add(pair)
    steps = rec["steps"]
    at = bad_step_index([step["step_idx"] for step in steps])
    if at is not None:
        raise record_error(index, f"/steps/{at}/step_idx",
                           f"step_idx {steps[at]['step_idx']!r} should be {at} (its position)")
    total = rec["total_reward"]
    expected = reward_mismatch(total, rec["final_reward"], [step["reward"] for step in steps])
    if expected is not None:
        raise record_error(index, "/total_reward",
                           f"total_reward {total!r} differs from the step rewards plus "
                           f"final_reward (sum {expected!r}, tolerance {REWARD_TOLERANCE} "
                           "times 1 + the sum of their magnitudes)")
