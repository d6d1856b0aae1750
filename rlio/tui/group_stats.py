"""GRPO's numbers of one iteration, from its rollout summaries: each trajectory's outcome and
advantage, each group's mean and spread, and the share of groups whose rewards are all equal.

The outcome is ``total_reward`` (the step rewards plus ``final_reward``); where it is absent it
is summed from the record. The advantage is the outcome minus its group's mean (GRPO's, before
any normalization). A group whose finite outcomes are all equal gives no learning signal.

Local helpers of ``rlio top``: the run report's own functions may take their place later.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["GroupRow", "TrajectoryRow", "equal_share", "group_rows", "histogram", "outcome"]


def _num(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None


def _count(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def outcome(record: Mapping[str, Any]) -> float | None:
    """A trajectory's outcome: ``total_reward``; where the key is absent, the step rewards plus
    ``final_reward``. None when it cannot be had (a null total is a NaN written as null: not
    summed again); NaN stays NaN."""
    if "total_reward" in record:
        return _num(record.get("total_reward"))
    steps = record.get("steps")
    final = _num(record.get("final_reward"))
    if not isinstance(steps, list) or final is None:
        return None
    rewards = [_num(s.get("reward")) if isinstance(s, Mapping) else None for s in steps]
    if any(r is None for r in rewards):
        return None
    return sum(r for r in rewards if r is not None) + final


@dataclass(frozen=True, slots=True)
class TrajectoryRow:
    """One trajectory as the drill-down lists it."""

    group: int
    traj: int
    reward: float | None
    final_reward: float | None
    advantage: float | None
    steps: int
    ac_tokens: int
    ob_tokens: int
    done: bool
    sampling_client_step: int | None


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One group: its trajectories and their outcomes' mean, spread (population standard
    deviation), range, and whether they are all equal."""

    group: int
    trajectories: tuple[TrajectoryRow, ...]
    mean: float | None
    spread: float | None
    low: float | None
    high: float | None

    @property
    def equal(self) -> bool:
        """All finite outcomes equal (no learning signal), with at least two of them."""
        finite = [t.reward for t in self.trajectories
                  if t.reward is not None and math.isfinite(t.reward)]
        return len(finite) >= 2 and max(finite) == min(finite)


def _stats(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def group_rows(records: Iterable[Mapping[str, Any]]) -> list[GroupRow]:
    """The groups of one iteration's rollout summaries, by group index, each trajectory with its
    outcome and advantage."""
    by_group: dict[int, list[Mapping[str, Any]]] = {}
    for rec in records:
        by_group.setdefault(_count(rec.get("group_idx")), []).append(rec)
    out = []
    for g in sorted(by_group):
        recs = sorted(by_group[g], key=lambda r: _count(r.get("traj_idx")))
        rewards = [outcome(r) for r in recs]
        finite = [r for r in rewards if r is not None and math.isfinite(r)]
        mean, spread = _stats(finite)
        rows = tuple(_trajectory(r, reward, mean) for r, reward in zip(recs, rewards, strict=True))
        out.append(GroupRow(g, rows, mean, spread, min(finite, default=None),
                            max(finite, default=None)))
    return out


def _trajectory(rec: Mapping[str, Any], reward: float | None,
                mean: float | None) -> TrajectoryRow:
    steps = rec.get("steps")
    steps = [s for s in steps if isinstance(s, Mapping)] if isinstance(steps, list) else []
    scs = rec.get("sampling_client_step")
    advantage = (reward - mean if reward is not None and mean is not None
                 and math.isfinite(reward) else None)
    return TrajectoryRow(
        group=_count(rec.get("group_idx")), traj=_count(rec.get("traj_idx")), reward=reward,
        final_reward=_num(rec.get("final_reward")), advantage=advantage, steps=len(steps),
        ac_tokens=sum(_count(s.get("ac_len")) for s in steps),
        ob_tokens=sum(_count(s.get("ob_len")) for s in steps) + _count(rec.get("final_ob_len")),
        done=bool(steps) and steps[-1].get("episode_done") is True,
        sampling_client_step=scs if type(scs) is int else None)


def equal_share(groups: Sequence[GroupRow]) -> float | None:
    """The share of groups (of two or more finite outcomes) whose outcomes are all equal."""
    judged = [g for g in groups if sum(1 for t in g.trajectories if t.reward is not None
                                       and math.isfinite(t.reward)) >= 2]
    if not judged:
        return None
    return sum(g.equal for g in judged) / len(judged)


def histogram(values: Iterable[float | None], bins: int) -> tuple[list[int], float, float]:
    """Counts of the finite ``values`` in ``bins`` equal bins, with the range ``(lo, hi)``;
    all in the middle bin when every value is the same."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    counts = [0] * max(1, bins)
    if not finite:
        return counts, 0.0, 0.0
    lo, hi = min(finite), max(finite)
    for v in finite:
        k = len(counts) // 2 if hi == lo else min(len(counts) - 1,
                                                   int((v - lo) / (hi - lo) * len(counts)))
        counts[k] += 1
    return counts, lo, hi
