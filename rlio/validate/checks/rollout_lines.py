"""Per-record checks of rollout-summary files (docs/format.md §6, §9), run in the streaming pass.

``RolloutChecks`` judges each schema-valid trajectory: iteration and split against the file name
(RL401, RL402), ``(group_idx, traj_idx)`` order (uniqueness costs no memory while pairs increase;
``duplicate_pairs`` is the second pass when they do not, RL403), ``step_idx`` (RL404), the
``total_reward`` sum (RL405), steps after ``episode_done`` (RL406) and the key order (RL202).
The §9 rules themselves are ``rlio.rules``'; this module only reports what they find.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from rlio import layout
from rlio.rules import (
    bad_step_index,
    file_splits,
    iteration_mismatch,
    reward_mismatch,
    split_mismatch,
    step_after_done,
    trajectory_id,
)
from rlio.schema import record_schema
from rlio.validate.checks.key_order import order_message
from rlio.validate.scan import Sink, short

#: Records checked for their key order (RL202): writers emit one key order, the first tell.
KEY_ORDER_RECORDS: Final = 100


@dataclass
class PairOrder:
    """How ``(group_idx, traj_idx)`` pairs ran through a byte range: strictly increasing or not.

    Strictly increasing pairs cannot repeat, so uniqueness costs no memory on the usual path; a
    range that breaks the order triggers a second, dictionary-based pass (``duplicate_pairs``).
    """

    ordered: bool = True
    first: tuple[int, int] | None = None
    last: tuple[int, int] | None = None

    def then(self, later: PairOrder) -> PairOrder:
        """The order of this range followed by ``later``."""
        if later.first is None:
            return self
        if self.last is None:
            return later
        ordered = self.ordered and later.ordered and self.last < later.first
        return PairOrder(ordered, self.first, later.last)


class RolloutChecks:
    """Per-record checks of one ``*_rollout_summaries.jsonl`` file (a ``scan_jsonl`` hook),
    named by its ``iteration`` (None: not judged) and evaluator ``label`` (None: training). The
    key order is judged on the first ``KEY_ORDER_RECORDS`` valid records (of each byte range,
    when a large file is split)."""

    def __init__(self, sink: Sink, *, iteration: int | None, label: str | None) -> None:
        self.sink = sink
        self.iteration = iteration
        self.split = layout.split_name(label)
        self.splits = file_splits(label)
        self.keys = record_schema("rollout-summary-line").keys
        self.order = PairOrder()
        self.key_checks = KEY_ORDER_RECORDS

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        """Judge one record the schema accepted (others carry their RL201 already)."""
        if not ok:
            return
        it = rec["iteration"]
        if iteration_mismatch(it, self.iteration):
            self.sink.add("RL401", f"iteration {it} differs from {self.iteration} in the file "
                                   "name", line=line, pointer="/iteration")
        split = rec["split"]
        if split_mismatch(split, self.splits):
            self.sink.add("RL402", f"split {short(split)} differs from the file's split "
                                   f"{self.split!r}", line=line, pointer="/split")
        # the pair order: ordered while pairs strictly increase (a pair that is not two ints
        # identifies nothing: ``rules.trajectory_id``)
        pair = trajectory_id(rec["group_idx"], rec["traj_idx"])
        order = self.order
        if pair is not None:
            if order.last is None or pair > order.last:
                if order.first is None:
                    order.first = pair
                order.last = pair
            else:
                order.ordered = False
        self._steps(rec, line)
        if self.key_checks:
            self._key_order(tuple(rec), line)

    def _steps(self, rec: dict[str, Any], line: int) -> None:
        """RL404 (step_idx), RL406 (steps after episode_done), RL405 (total_reward)."""
        steps = rec["steps"]
        idx = [st["step_idx"] for st in steps]
        at = bad_step_index(idx)
        if at is not None:
            self.sink.add("RL404", f"step_idx {short(idx[at])} at position {at}; step_idx must "
                                   f"run 0..{len(steps) - 1}", line=line,
                          pointer=f"/steps/{at}/step_idx")
        at = step_after_done([st["episode_done"] for st in steps])
        if at is not None:
            self.sink.add("RL406", f"{len(steps) - 1 - at} step(s) after episode_done: true at "
                                   f"step {at}", line=line, pointer=f"/steps/{at + 1}")
        total = rec["total_reward"]
        expected = reward_mismatch(total, rec["final_reward"], [st["reward"] for st in steps])
        if expected is not None:
            self.sink.add("RL405", f"total_reward {short(total)} but the step rewards plus "
                                   f"final_reward sum to {short(expected)}",
                          line=line, pointer="/total_reward")

    def _key_order(self, found: tuple[str, ...], line: int) -> None:
        """RL202 once, at the first record whose keys are out of the documented order."""
        if found != self.keys:
            self.sink.add("RL202", order_message(found, self.keys), line=line)
            self.key_checks = 0
        else:
            self.key_checks -= 1

    def finish(self) -> PairOrder:
        """How the pairs ran through the file (or range)."""
        return self.order


def duplicate_pairs(records: Iterator[tuple[int, Any]], sink: Sink) -> None:
    """Report repeated ``(group_idx, traj_idx)`` pairs (RL403) at their later line."""
    seen: dict[tuple[int, int], int] = {}
    for line, rec in records:
        if not isinstance(rec, dict):
            continue
        pair = trajectory_id(rec.get("group_idx"), rec.get("traj_idx"))
        if pair is None:
            continue
        first = seen.setdefault(pair, line)
        if first != line:
            sink.add("RL403", f"(group_idx, traj_idx) = {pair} repeats line {first}",
                     line=line)
