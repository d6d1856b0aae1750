"""Rollout-summary records in docs/format.md §6 order, and the §9 checks a writer can make per file.

The documented key orders are the ``properties`` orders of the rollout-summary schema (one owner
per fact). The writer's fast path: a record already in order is passed through untouched;
otherwise keys (and each step's keys: documented ones first, in order, then extra keys as given)
are reordered into a new dict. Nothing is filled in except what the call determines
(``schema_version``, ``split``, ``iteration``).
"""

from __future__ import annotations

import gc
import operator
from collections.abc import Callable, Mapping
from itertools import repeat
from typing import Any, Final

import orjson

from rlio._codec.jsonl import _LINE_OPTS, normalize_value
from rlio._native import native
from rlio._schema.loader import load_schema
from rlio._schema.rollout_scan import RolloutScan
from rlio.errors import RecordError
from rlio.rules import REWARD_TOLERANCE, bad_step_index, reward_mismatch

_SCHEMA = load_schema("rollout-summary-line")
#: Key order of a rollout-summary record and of one of its steps (docs/format.md §6), from schema.
ROLLOUT_KEYS: Final[tuple[str, ...]] = tuple(_SCHEMA["properties"])
STEP_KEYS: Final[tuple[str, ...]] = tuple(_SCHEMA["$defs"]["step"]["properties"])
_ROLLOUT_KEY_SET: Final = frozenset(ROLLOUT_KEYS)
_STEP_RANK: Final = {k: i for i, k in enumerate(STEP_KEYS)}
#: The most common step layout: the required keys in documented order (compared first: cheap).
_STEP_REQUIRED: Final = tuple(k for k in STEP_KEYS if k in _SCHEMA["$defs"]["step"]["required"])
#: Step key layouts seen -> None when already in order, else the ordered layout (bounded).
_STEP_LAYOUTS: dict[tuple[str, ...], tuple[str, ...] | None] = {}
_STEP_LAYOUTS_MAX: Final = 256


def _record_error(index: int, pointer: str, reason: str) -> RecordError:
    return RecordError(f"rollout summary record {index} at {pointer or '/'}: {reason}",
                       index=index, pointer=pointer)


def ordered_rollout(rec: Any, iteration: int, split: str, index: int) -> dict[str, Any]:
    """``rec`` with keys (and its steps') in documented order; fills version, split, iteration."""
    if type(rec) is dict and tuple(rec) == ROLLOUT_KEYS:
        steps = rec["steps"]
        if (rec["split"] == split and rec["iteration"] == iteration
                and type(rec["iteration"]) is int and type(steps) is list):
            for step in steps:
                if type(step) is not dict:
                    break
                keys = tuple(step)
                if keys != _STEP_REQUIRED and _step_layout(keys) is not None:
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


def _step_layout(keys: tuple[str, ...]) -> tuple[str, ...] | None:
    """None when a step's keys are in documented order, else the order to write them in."""
    try:
        return _STEP_LAYOUTS[keys]
    except KeyError:
        pass
    n = len(_STEP_RANK)
    ordered = tuple(sorted(keys, key=lambda k: _STEP_RANK.get(k, n)))  # stable: extras as given
    found = None if ordered == keys else ordered
    if len(_STEP_LAYOUTS) < _STEP_LAYOUTS_MAX:
        _STEP_LAYOUTS[keys] = found
    return found


def _ordered_step(step: Any) -> Any:
    if not isinstance(step, Mapping):
        return step
    layout = _step_layout(tuple(step))
    if layout is None:
        return step if type(step) is dict else dict(step)
    return {k: step[k] for k in layout}


def cross_check(rec: dict[str, Any], index: int, seen: set[tuple[Any, Any]]) -> None:
    """docs/format.md §9 checks on a schema-valid record (``rlio.rules``): ids, step_idx, rewards.

    Refuses exactly what the validator reports as an error (RL403, RL404, RL405).
    """
    pair = (rec["group_idx"], rec["traj_idx"])
    if pair in seen:
        raise _record_error(index, "/traj_idx", f"(group_idx, traj_idx) = {pair} appears twice "
                                                "in this file")
    seen.add(pair)
    steps = rec["steps"]
    at = bad_step_index([step["step_idx"] for step in steps])
    if at is not None:
        raise _record_error(index, f"/steps/{at}/step_idx",
                            f"step_idx {steps[at]['step_idx']!r} should be {at} (its position)")
    total = rec["total_reward"]
    expected = reward_mismatch(total, rec["final_reward"], [step["reward"] for step in steps])
    if expected is not None:
        raise _record_error(index, "/total_reward",
                            f"total_reward {total!r} differs from the step rewards plus "
                            f"final_reward (sum {expected!r}, tolerance {REWARD_TOLERANCE} "
                            "times 1 + the sum of their magnitudes)")


#: Lines are handed to the temp file in pieces of about this many bytes.
PIECE: Final = 1 << 18


def in_order(recs: list[Any], iteration: int, split: str) -> bool:
    """Whether every record is a dict with the documented keys in order, the file's split and an
    int iteration (nothing to fill in or reorder at the top level), judged in C-level passes
    over the batch (no Python code per record): the unchecked writer's straight path. Step keys
    are not looked at: unchecked, steps are written as given. With the C extension, one pass
    of a Shape (keys in order, the file's split and iteration) shows the usual batch in order;
    a batch it does not take gets the Python passes, which decide."""
    accel = native()
    if accel is not None and type(split) is str and type(iteration) is int:
        from rlio._schema.shape import ANY, K_CONST, K_OBJECTS

        fixed = {"split": (K_CONST, split), "iteration": (K_CONST, iteration)}
        shape = accel.Shape((K_OBJECTS, ((ROLLOUT_KEYS, tuple(
            fixed.get(k, ANY) for k in ROLLOUT_KEYS)),)))
        if all(map(shape, recs)):
            return True
    if set(map(type, recs)) - {dict} or not all(map(ROLLOUT_KEYS.__eq__, map(tuple, recs))):
        return False
    if set(map(operator.itemgetter("split", "iteration"), recs)) - {(split, iteration)}:
        return False
    return not set(map(type, map(operator.itemgetter("iteration"), recs))) - {int}


#: Records encoded per piece on the straight path (about ``PIECE`` bytes for common records).
_STRAIGHT: Final = 256


def stream_straight(recs: list[Any], write: Callable[[bytes], None],
                    general: Callable[[Any, int, set[tuple[Any, Any]]], bytes]) -> None:
    """The unchecked writer's lines of ``recs`` (already ``in_order``): orjson over each slice of
    records in one C-level pass; a slice with a value orjson refuses goes record by record
    through ``general``, which names the problem."""
    seen: set[tuple[Any, Any]] = set()
    for start in range(0, len(recs), _STRAIGHT):
        part = recs[start:start + _STRAIGHT]
        try:
            # orjson.dumps(rec, default, option) positionally: a partial with keywords would
            # build a keyword dict per record
            write(b"".join(map(orjson.dumps, part, repeat(normalize_value, len(part)),
                               repeat(_LINE_OPTS, len(part)))))
        except (TypeError, ValueError, RecursionError):
            write(b"".join([general(rec, start + k, seen) for k, rec in enumerate(part)]))


def stream_rollouts(recs: list[Any], it: int, split: str, write: Callable[[bytearray], None], *,
                    scan: RolloutScan | None,
                    general: Callable[[Any, int, set[tuple[Any, Any]]], bytes]) -> None:
    """Hand ``write`` the JSONL lines of ``recs`` in pieces of about ``PIECE`` bytes.

    Records go through ``scan`` while they need nothing else; a record it stops at takes
    ``general(record, index, seen)`` (reorder, check, cross-check, encode; raising
    ``RecordError`` for a bad one), and the scan resumes after it.
    """
    seen: set[tuple[Any, Any]] = set()
    buf = bytearray()
    i, n = 0, len(recs)
    while i < n:
        if scan is not None:
            i = _scan_paused(scan, recs, i, it, split, seen, buf)
        if len(buf) >= PIECE:
            write(buf)
            buf = bytearray()
        elif i < n:
            buf += general(recs[i], i, seen)
            i += 1
    if buf:
        write(buf)


def _scan_paused(scan: RolloutScan, recs: list[Any], i: int, it: int, split: str,
                 seen: set[tuple[Any, Any]], buf: bytearray) -> int:
    """``scan.scan`` with the collector paused: the scan makes only acyclic objects (id pairs,
    lines), and a collection meanwhile would only traverse the batch the caller holds."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return scan.scan(recs, i, it, split, seen, buf, PIECE)
    finally:
        if enabled:
            gc.enable()
