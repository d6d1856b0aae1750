"""GRPO's numbers of ``rlio top``: outcome, advantage, group spread, equal-reward share."""

from __future__ import annotations

import math

import pytest
from factories import trajectory

from rlio.tui.group_stats import equal_share, group_rows, histogram, outcome


def _rec(group: int, traj: int, total: float | None, final: float = 0.0) -> dict[str, object]:
    rec = trajectory(0, group, traj)
    rec["total_reward"] = total
    rec["final_reward"] = final
    return rec


def test_the_outcome_is_total_reward_not_final_reward() -> None:
    """A math-style trajectory (step reward 1, final_reward 0) has outcome 1."""
    assert outcome({"total_reward": 1.0, "final_reward": 0.0}) == 1.0


def test_a_missing_total_is_summed_from_the_steps_and_the_final_reward() -> None:
    """Without total_reward the outcome is the step rewards plus final_reward."""
    rec = {"final_reward": 0.5, "steps": [{"reward": 0.25}, {"reward": -0.5}]}
    assert outcome(rec) == pytest.approx(0.25)
    assert outcome({**rec, "total_reward": None}) is None  # a NaN written as null
    assert outcome({"steps": [{"reward": None}], "final_reward": 1.0}) is None


def test_advantage_is_reward_minus_the_group_mean_and_equal_groups_are_counted() -> None:
    """Group 0 (1, 0, 0.5) has mean 0.5 and advantages 0.5, -0.5, 0; group 1 (1, 1) is equal;
    so half the groups carry no learning signal."""
    groups = group_rows([_rec(0, 0, 1.0), _rec(0, 1, 0.0), _rec(0, 2, 0.5),
                         _rec(1, 1, 1.0), _rec(1, 0, 1.0)])
    assert [g.group for g in groups] == [0, 1]
    g0, g1 = groups
    assert g0.mean == pytest.approx(0.5)
    assert [t.advantage for t in g0.trajectories] == pytest.approx([0.5, -0.5, 0.0])
    assert g0.spread == pytest.approx(math.sqrt(1 / 6))
    assert (g0.low, g0.high) == (0.0, 1.0)
    assert not g0.equal and g1.equal
    assert [t.traj for t in g1.trajectories] == [0, 1]
    assert equal_share(groups) == 0.5


def test_nan_and_missing_rewards_stay_out_of_the_means() -> None:
    """A NaN and a null outcome are shown but neither moves the mean nor has an advantage."""
    (g,) = group_rows([_rec(0, 0, float("nan")), _rec(0, 1, None), _rec(0, 2, 2.0)])
    assert g.mean == 2.0
    assert [t.advantage for t in g.trajectories] == [None, None, 0.0]
    assert not g.equal  # one finite outcome: no verdict
    assert equal_share([g]) is None


def test_histogram_counts_finite_values_into_equal_bins() -> None:
    """0, 0.5 and 1 fall in the first, middle and last of 3 bins; NaN is left out."""
    assert histogram([0.0, 0.5, 1.0, float("nan"), None], 3) == ([1, 1, 1], 0.0, 1.0)
    assert histogram([2.0, 2.0], 4)[0] == [0, 0, 2, 0]
