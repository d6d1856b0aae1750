"""GRPO's numbers of ``rlio top``: rlio.outcome's outcome, advantage, group spread and
equal-reward share, in display order, and the histogram."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from factories import trajectory
from realistic import ENVS, expected, realistic_run

from rlio.tui.group_stats import histogram, iteration_rows


def _rec(group: int, traj: int, total: float | None, final: float = 0.0) -> dict[str, object]:
    rec = trajectory(0, group, traj)
    rec["total_reward"] = total
    rec["final_reward"] = final
    return rec


def test_the_outcome_is_total_reward_not_final_reward() -> None:
    """A math-style trajectory (total reward 1, final_reward 0) shows reward 1."""
    rows = iteration_rows([_rec(0, 0, 1.0, final=0.0)], 0)
    assert rows.rewards() == [1.0]


def test_a_missing_total_is_no_outcome() -> None:
    """Without a number under total_reward (absent, or a NaN written as null) there is no
    outcome: it is not summed from the steps (rlio.outcome's rule)."""
    rec = _rec(0, 0, None)
    del rec["total_reward"]
    rows = iteration_rows([rec, _rec(0, 1, None)], 0)
    assert rows.rewards() == [None, None]
    assert rows.stats.mean is None


def test_advantage_is_reward_minus_the_group_mean_and_equal_groups_are_counted() -> None:
    """Group 0 (1, 0, 0.5) has mean 0.5 and advantages 0.5, -0.5, 0; group 1 (1, 1) is equal;
    so half the groups carry no learning signal."""
    rows = iteration_rows([_rec(0, 0, 1.0), _rec(0, 1, 0.0), _rec(0, 2, 0.5),
                           _rec(1, 1, 1.0), _rec(1, 0, 1.0)], 3)
    assert rows.iteration == 3
    assert [g.stats.group for g in rows.groups] == [0, 1]
    g0, g1 = rows.groups
    assert g0.stats.mean == pytest.approx(0.5)
    assert [t.advantage for t in g0.trajectories] == pytest.approx([0.5, -0.5, 0.0])
    assert g0.stats.spread == pytest.approx(math.sqrt(1 / 6))
    assert (g0.low, g0.high) == (0.0, 1.0)
    assert not g0.stats.all_equal and g1.stats.all_equal
    assert [t.trajectory.traj for t in g1.trajectories] == [0, 1]
    assert rows.stats.equal_share == 0.5


def test_nan_and_missing_rewards_stay_out_of_the_means() -> None:
    """A NaN and a null outcome are shown but neither moves the mean nor has an advantage, and
    their group is not all equal (rlio.outcome: every reward the same finite number)."""
    rows = iteration_rows([_rec(0, 0, float("nan")), _rec(0, 1, None), _rec(0, 2, 2.0)], 0)
    (g,) = rows.groups
    assert g.stats.mean == 2.0
    assert [t.advantage for t in g.trajectories] == [None, None, 0.0]
    assert not g.stats.all_equal
    assert rows.stats.equal_share == 0.0


def test_a_group_of_one_carries_no_learning_signal() -> None:
    """A one-trajectory group has advantage 0: it counts as all equal (rlio.outcome's rule)."""
    rows = iteration_rows([_rec(0, 0, 1.0), _rec(1, 0, 0.0), _rec(1, 1, 1.0)], 0)
    assert [g.stats.all_equal for g in rows.groups] == [True, False]
    assert rows.stats.equal_share == 0.5


def test_histogram_counts_finite_values_into_equal_bins() -> None:
    """0, 0.5 and 1 fall in the first, middle and last of 3 bins; NaN is left out."""
    assert histogram([0.0, 0.5, 1.0, float("nan"), None], 3) == ([1, 1, 1], 0.0, 1.0)
    assert histogram([2.0, 2.0], 4)[0] == [0, 0, 2, 0]


@pytest.mark.parametrize("env", ENVS)
def test_rows_are_what_the_records_say(tmp_path: Path, env: str) -> None:
    """On each realistic run, every iteration's advantages and equal-reward share in ``rlio top``
    are the ones computed from the records (the pages' numbers)."""
    run = realistic_run(tmp_path, env)
    exp = expected(run)
    for (split, it), recs in exp.records.items():
        rows = iteration_rows(recs, it, None if split == "train" else split[len("eval/"):])
        got = {(t.trajectory.group, t.trajectory.traj): t.advantage
               for g in rows.groups for t in g.trajectories}
        assert got == pytest.approx(exp.advantages(split, it))
        assert rows.stats.equal_share == pytest.approx(exp.equal_share(split, it))
        assert {t.trajectory.split for g in rows.groups for t in g.trajectories} == {split}
