"""Cross-record rules of docs/format.md §3, §5 and §9: one owner for the writer and validator.

``RULES`` is the table: one function per rule, keyed by the finding code the validator reports
when a record breaks it. The writer (``rlio.writer.summaries``, ``rlio.writer.support``), the
validator's checks (``rlio.validate.checks``) and resume (``rlio.resume``) decide with these
functions, so the writer refuses exactly what the validator reports as an error. Each rule reads
plain values (numbers, sequences) and never raises for odd data: a value it cannot compare
(None, non-finite, beyond floats) is "nothing to compare".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final

from rlio import layout

#: ``total_reward`` may differ from the step rewards plus ``final_reward`` by
#: ``REWARD_TOLERANCE * (1 + sum of their magnitudes)``: an absolute floor for small sums and a
#: relative bound for large ones, where float summation order alone moves the last digits.
REWARD_TOLERANCE: Final = 1e-6

#: Metrics keys that mark a training line; other lines are eval/sampler lines (docs/format.md §3).
TRAINING_KEYS: Final = ("progress/batch", "training_client/step", "progress/done_frac",
                        "progress", "optim/lr")


#: The keys a metrics line's x axis comes from, in order of preference (docs/format.md §3):
#: ``step``, else the loop's own counters.
X_AXIS_KEYS: Final = ("step", "progress/batch", "training_client/step")


#: Key prefixes of the step-stamped totals a loop logs at its end (cookbook 0.6.1: cost and token
#: counts): a line holding only such keys is a summary row, not an eval line.
SUMMARY_PREFIXES: Final = ("cost/", "tokens/", "usage/", "time/")


def is_summary_line(record: dict[str, Any]) -> bool:
    """Whether a metrics line without training keys holds only summaries (docs/format.md §3)."""
    keys = [k for k in record if k != "step"]
    return bool(keys) and all(isinstance(k, str) and k.startswith(SUMMARY_PREFIXES) for k in keys)


def iteration_mismatch(value: Any, file_iteration: int | None) -> bool:
    """Whether a record's ``iteration`` is not its file name's (RL401); a file whose name holds
    no iteration (None) is not judged. A bool is never an iteration."""
    if file_iteration is None:
        return False
    return isinstance(value, bool) or value != file_iteration


def file_splits(label: str | None) -> frozenset[str]:
    """The ``split`` values a per-iteration file of evaluator ``label`` may carry (None:
    training): from the label as given or as the file name sanitizes it."""
    if label is None:
        return frozenset({layout.split_name(None)})
    return frozenset({layout.split_name(label), layout.split_name(layout.sanitize_label(label))})


def split_mismatch(value: Any, splits: frozenset[str]) -> bool:
    """Whether a record's ``split`` is not one its file's name allows (RL402, ``file_splits``); a
    value that is no string (any JSON value can reach the writer) is not one."""
    return not isinstance(value, str) or value not in splits


def reward_mismatch(total: Any, final: Any, rewards: Sequence[Any]) -> float | None:
    """The exact sum of ``rewards`` and ``final`` when ``total`` differs from it beyond tolerance.

    Returns None when the record satisfies the rule, and when there is nothing to compare: a
    None among the values (a NaN written as null), a non-finite value, or a sum beyond floats.
    The sum is exactly rounded (``math.fsum``), so the verdict does not depend on the order.
    """
    parts = [final, *rewards]
    try:  # a None or a non-number raises TypeError, a sum beyond floats OverflowError
        if not math.isfinite(total):
            return None
        expected = math.fsum(parts)
        if abs(total - expected) <= REWARD_TOLERANCE:  # within the least tolerance (scale 0)
            return None
        scale = math.fsum(map(abs, parts))
    except (TypeError, OverflowError, ValueError):
        return None
    # an infinite part makes both sides infinite: the comparison below is then false (no mismatch)
    if abs(total - expected) > REWARD_TOLERANCE * (1.0 + scale):
        return expected
    return None


def trajectory_id(group_idx: Any, traj_idx: Any) -> tuple[int, int] | None:
    """The ``(group_idx, traj_idx)`` pair that must not repeat in one file (RL403), or None when
    either is not an int (nothing to compare: the schema judges such a value)."""
    if type(group_idx) is int and type(traj_idx) is int:
        return group_idx, traj_idx
    return None


def bad_step_index(step_indices: Sequence[Any]) -> int | None:
    """The first position whose ``step_idx`` is not the position; None when they run 0..n-1."""
    for position, value in enumerate(step_indices):
        if value != position:
            return position
    return None


def step_after_done(dones: Sequence[Any]) -> int | None:
    """The position of an ``episode_done: true`` that a later step follows, else None (RL406)."""
    for position, done in enumerate(dones[:-1]):
        if done is True:
            return position
    return None


#: The key making a checkpoint record resumable (docs/format.md §5; ``sampler_path``: other uses).
RESUME_KEY: Final = "state_path"


def resume_problem(record: Any, required_key: str = RESUME_KEY, *,
                   null_batch: bool = False) -> str | None:
    """What a checkpoint record carrying ``required_key`` lacks for a restart (RL501), else None.

    A resumable record (``required_key`` non-null) must carry ``batch``: RL restarts at iteration
    ``batch``, SL/DPO at ``(epoch, batch)``, so an epoch-only record cannot restart either. The
    writer refuses such a record at the call; the validator reports it as an error. A ``null``
    batch or epoch is the schema's error (RL201), not this rule's, unless ``null_batch`` (resume
    itself: it cannot restart from a null batch either).
    """
    if not isinstance(record, dict) or record.get(required_key) is None:
        return None
    if "batch" not in record or (null_batch and record["batch"] is None):
        if "epoch" in record:
            return (f"has {required_key} and epoch but no batch: a restart needs batch "
                    "(SL/DPO restart at (epoch, batch))")
        return f"has {required_key} but no batch: a restart needs the iteration to restart at"
    for key in ("batch", "epoch"):
        value = record.get(key)
        if value is not None and not is_restart_index(value):  # null: the schema's RL201
            return (f"has {key} {value!r}: a restart needs an int from 0 to 2**63 - 1 "
                    "(not a float, not a bool)")
    return None


#: The largest ``batch`` or ``epoch`` a restart uses: the largest iteration a file name holds
#: (a signed 64-bit integer, which every JSON reader keeps exactly).
MAX_RESTART_INDEX: Final = layout.MAX_ITERATION


def is_restart_index(value: Any) -> bool:
    """Whether ``value`` can be where a restart begins (``batch``, ``epoch``): an ``int`` from 0
    to ``MAX_RESTART_INDEX``; an integral float (``5.0``, ``1e30``) or a bool is not."""
    return type(value) is int and 0 <= value <= MAX_RESTART_INDEX


#: The cross-record rules, keyed by the finding code a record breaking one gets.
RULES: Final[dict[str, Callable[..., Any]]] = {
    "RL401": iteration_mismatch,
    "RL402": split_mismatch,
    "RL403": trajectory_id,
    "RL404": bad_step_index,
    "RL405": reward_mismatch,
    "RL406": step_after_done,
    "RL501": resume_problem,
}
