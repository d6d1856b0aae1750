"""A trajectory's outcome and GRPO's diagnostics, as plain functions over rollout summaries.

The outcome of a trajectory is its ``total_reward``: the step rewards plus ``final_reward``
(docs/format.md §6). Math-style environments put the reward in the step and leave
``final_reward`` at 0.0, so the final reward alone is not the outcome.

A trajectory is **failing** (docs/format.md §7) when its total reward is not above 0 (≤ 0), NaN
or missing (``null``: a NaN written under the default non-finite policy), or when its episode
never finished (no steps, or the last step is not ``episode_done``). Success is a strictly
positive outcome: a 0/1 reward fails at 0, a graded reward fails only at 0 or below, a penalty
that takes the total below 0 fails.

GRPO centres rewards within a group: a trajectory's **advantage** is its total reward minus the
mean of its group's finite total rewards; a group whose rewards are all the same finite number
gives every trajectory advantage 0 (no learning signal). These functions are what every page
(and ``rlio top``) shows, so they hold no markup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

#: What "failing" means, as the pages say it.
FAILING_RULE: Final = ("failing: total reward (step rewards + final reward) ≤ 0, NaN or missing, "
                       "or the episode never finished")


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One rollout summary line, as the pages show it."""

    split: str
    iteration: int
    group: int
    traj: int
    total_reward: float | None
    final_reward: float | None
    steps: int
    turns: int
    ob_tokens: int
    ac_tokens: int
    done: bool
    sampling_client_step: int | None = None

    @property
    def reward(self) -> float | None:
        """The outcome: ``total_reward`` (None when it was not logged as a number)."""
        return self.total_reward

    @property
    def failing(self) -> bool:
        """See ``is_failing``."""
        return is_failing(self.total_reward, self.done)

    @property
    def staleness(self) -> int | None:
        """``iteration - sampling_client_step`` (async training), None when not logged."""
        scs = self.sampling_client_step
        return None if scs is None else self.iteration - scs

    @property
    def anchor(self) -> str:
        """The id of this trajectory's transcript on its iteration page."""
        return f"traj-{self.group}-{self.traj}"


def _num(v: Any) -> float | None:
    return float(v) if type(v) in (int, float) else None


def _int(v: Any) -> int:
    return v if type(v) is int and v >= 0 else 0


def is_failing(total_reward: float | None, done: bool) -> bool:
    """The failing rule (module docstring): total reward ≤ 0, NaN or None, or not done."""
    return total_reward is None or not total_reward > 0 or not done


def trajectory(rec: Mapping[str, Any], split: str, iteration: int) -> Trajectory:
    """The row of one rollout summary record (tolerant: odd values show as empty or 0)."""
    steps = rec.get("steps")
    steps = [s for s in steps if isinstance(s, Mapping)] if isinstance(steps, list) else []
    tm = rec.get("trajectory_metrics")
    turns = tm.get("turns") if isinstance(tm, Mapping) else None
    done = bool(steps) and steps[-1].get("episode_done") is True
    scs = rec.get("sampling_client_step")
    return Trajectory(
        split=split, iteration=iteration, group=_int(rec.get("group_idx")),
        traj=_int(rec.get("traj_idx")), total_reward=_num(rec.get("total_reward")),
        final_reward=_num(rec.get("final_reward")), steps=len(steps),
        turns=turns if type(turns) is int else len(steps),
        ob_tokens=sum(_int(s.get("ob_len")) for s in steps) + _int(rec.get("final_ob_len")),
        ac_tokens=sum(_int(s.get("ac_len")) for s in steps), done=done,
        sampling_client_step=scs if type(scs) is int else None,
    )


def finite(values: Iterable[float | None]) -> list[float]:
    """The finite numbers among ``values``."""
    return [v for v in values if v is not None and math.isfinite(v)]


def mean(values: Sequence[float]) -> float | None:
    """The mean, None for no values."""
    return sum(values) / len(values) if values else None


def spread(values: Sequence[float]) -> float | None:
    """The population standard deviation, None for no values."""
    m = mean(values)
    if m is None:
        return None
    return math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


@dataclass(frozen=True, slots=True)
class GroupStats:
    """One GRPO group of an iteration: its finite rewards' mean and spread, and each
    trajectory's advantage (None where its reward is not finite)."""

    group: int
    size: int
    failing: int
    mean: float | None
    spread: float | None
    all_equal: bool  # every reward the same finite number: no learning signal
    advantages: Mapping[int, float | None]  # traj index -> reward minus the group's mean


def group_stats(trajs: Iterable[Trajectory]) -> list[GroupStats]:
    """The groups of one iteration's trajectories, in group order."""
    by_group: dict[int, list[Trajectory]] = {}
    for t in trajs:
        by_group.setdefault(t.group, []).append(t)
    out = []
    for g in sorted(by_group):
        rows = by_group[g]
        rewards = finite(t.reward for t in rows)
        m = mean(rewards)
        equal = len(rewards) == len(rows) and max(rewards) == min(rewards)
        adv = {t.traj: (t.reward - m if m is not None and t.reward is not None
                        and math.isfinite(t.reward) else None) for t in rows}
        out.append(GroupStats(g, len(rows), sum(t.failing for t in rows), m, spread(rewards),
                              equal, adv))
    return out


@dataclass(frozen=True, slots=True)
class IterationStats:
    """One iteration's outcome and GRPO diagnostics (one split)."""

    trajectories: int
    failing: int
    mean: float | None  # of the finite total rewards
    groups: int
    equal_groups: int  # groups whose rewards are all equal (no learning signal)
    ac_tokens: float | None  # mean sampled tokens per trajectory
    ob_tokens: float | None  # mean observation tokens per trajectory
    staleness_max: int | None  # None where sampling_client_step is not logged
    staleness_mean: float | None

    @property
    def equal_share(self) -> float | None:
        """The share of groups with all-equal rewards, None without groups."""
        return self.equal_groups / self.groups if self.groups else None


def iteration_stats(trajs: Sequence[Trajectory],
                    groups: Sequence[GroupStats] | None = None) -> IterationStats:
    """The diagnostics of one iteration's trajectories (``groups``: their ``group_stats``)."""
    gs = group_stats(trajs) if groups is None else groups
    stale = [s for t in trajs if (s := t.staleness) is not None]
    n = len(trajs)
    return IterationStats(
        trajectories=n, failing=sum(t.failing for t in trajs),
        mean=mean(finite(t.reward for t in trajs)), groups=len(gs),
        equal_groups=sum(g.all_equal for g in gs),
        ac_tokens=sum(t.ac_tokens for t in trajs) / n if n else None,
        ob_tokens=sum(t.ob_tokens for t in trajs) / n if n else None,
        staleness_max=max(stale) if stale else None,
        staleness_mean=mean([float(s) for s in stale]),
    )
