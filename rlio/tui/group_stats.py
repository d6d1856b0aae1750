"""What ``rlio top`` shows of one iteration's GRPO numbers, as rows in display order.

Every number is ``rlio.outcome``'s (the one owner of the outcome, the advantage, a group's mean
and spread and the share of all-equal groups: docs/format.md §7); this module only orders the
rows for the drill-down, gives each group's range and bins the rewards for the histogram.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rlio import layout
from rlio.outcome import (
    GroupStats,
    IterationStats,
    Trajectory,
    finite,
    group_stats,
    iteration_stats,
    trajectory,
)

__all__ = ["GroupRow", "IterationRows", "TrajectoryRow", "histogram", "iteration_rows"]


@dataclass(frozen=True, slots=True)
class TrajectoryRow:
    """One trajectory as the drill-down lists it: its row and its advantage."""

    trajectory: Trajectory
    advantage: float | None


@dataclass(frozen=True, slots=True)
class GroupRow:
    """One group: its statistics and its trajectories by trajectory index."""

    stats: GroupStats
    trajectories: tuple[TrajectoryRow, ...]

    @property
    def low(self) -> float | None:
        """The lowest finite reward (None: none)."""
        return min(finite(t.trajectory.reward for t in self.trajectories), default=None)

    @property
    def high(self) -> float | None:
        """The highest finite reward (None: none)."""
        return max(finite(t.trajectory.reward for t in self.trajectories), default=None)


@dataclass(frozen=True, slots=True)
class IterationRows:
    """One iteration of one split: its diagnostics and its groups by group index."""

    iteration: int
    stats: IterationStats
    groups: list[GroupRow]

    def rewards(self) -> list[float | None]:
        """Every trajectory's reward, group by group."""
        return [t.trajectory.reward for g in self.groups for t in g.trajectories]


def iteration_rows(records: Iterable[Mapping[str, Any]], iteration: int,
                   label: str | None = None) -> IterationRows:
    """The rows of one iteration's rollout summaries (``label``: an evaluator's, None for the
    training rollouts)."""
    trajs = [trajectory(rec, layout.split_name(label), iteration) for rec in records]
    stats = group_stats(trajs)
    members: dict[int, list[Trajectory]] = {}
    for t in trajs:
        members.setdefault(t.group, []).append(t)
    groups = [GroupRow(g, tuple(TrajectoryRow(t, g.advantages.get(t.traj))
                                for t in sorted(members[g.group], key=lambda t: t.traj)))
              for g in stats]
    return IterationRows(iteration, iteration_stats(trajs, stats), groups)


def histogram(values: Iterable[float | None], bins: int) -> tuple[list[int], float, float]:
    """Counts of the finite ``values`` in ``bins`` equal bins, with the range ``(lo, hi)``;
    all in the middle bin when every value is the same."""
    xs = finite(values)
    counts = [0] * max(1, bins)
    if not xs:
        return counts, 0.0, 0.0
    lo, hi = min(xs), max(xs)
    for v in xs:
        k = len(counts) // 2 if hi == lo else min(len(counts) - 1,
                                                   int((v - lo) / (hi - lo) * len(counts)))
        counts[k] += 1
    return counts, lo, hi
