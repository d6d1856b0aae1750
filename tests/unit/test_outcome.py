"""The outcome (total_reward), the failing rule and GRPO's group diagnostics."""

from __future__ import annotations

import math

import pytest

from rlio.outcome import group_stats, is_failing, iteration_stats, trajectory


def _rec(group: int, traj: int, step_rewards: list[float], final: float | None,
         total: float | None = None, *, done: bool = True, scs: int | None = None) -> dict:
    steps = [{"step_idx": i, "ob_len": 10, "ac_len": 5, "reward": r,
              "episode_done": done and i == len(step_rewards) - 1, "metrics": {}, "logs": {}}
             for i, r in enumerate(step_rewards)]
    if total is None:
        total = sum(step_rewards) + (final or 0.0)
    return {"group_idx": group, "traj_idx": traj, "sampling_client_step": scs,
            "total_reward": total, "final_reward": final, "steps": steps, "final_ob_len": 0}


@pytest.mark.parametrize(("total", "done", "fails"), [
    (1.0, True, False), (0.0, True, True), (0.3, True, False), (-0.1, True, True),
    (math.nan, True, True), (None, True, True), (1.0, False, True), (math.inf, True, False),
])
def test_failing_rule(total: float | None, done: bool, fails: bool) -> None:
    """Failing is total reward <= 0, NaN or missing, or an unfinished episode."""
    assert is_failing(total, done) is fails


def test_outcome_is_total_reward_with_step_rewards() -> None:
    """A math-style record (reward in the step, final_reward 0.0) has outcome 1, not failing."""
    t = trajectory(_rec(0, 0, [1.0], 0.0), "train", 3)
    assert t.reward == 1.0 and not t.failing and t.final_reward == 0.0


def test_group_advantages_spread_and_all_equal() -> None:
    """Advantage is reward minus the group's mean; a group of equal rewards is all equal."""
    trajs = [trajectory(r, "train", 5) for r in (
        _rec(0, 0, [1.0], 0.0), _rec(0, 1, [0.0], 0.0), _rec(0, 2, [0.5], 0.0),
        _rec(1, 0, [0.0], 1.0), _rec(1, 1, [0.0], 1.0),
        _rec(2, 0, [0.0], 1.0), _rec(2, 1, [0.0], None, total=math.nan, scs=3))]
    g0, g1, g2 = group_stats(trajs)
    assert g0.mean == pytest.approx(0.5) and g0.advantages == pytest.approx(
        {0: 0.5, 1: -0.5, 2: 0.0})
    assert g0.spread == pytest.approx(math.sqrt(1 / 6)) and not g0.all_equal
    assert g1.all_equal and g1.advantages == {0: 0.0, 1: 0.0} and g1.spread == 0.0
    assert not g2.all_equal and g2.advantages == {0: 0.0, 1: None} and g2.failing == 1
    st = iteration_stats(trajs)
    assert (st.groups, st.equal_groups, st.failing, st.trajectories) == (3, 1, 2, 7)
    assert st.equal_share == pytest.approx(1 / 3) and st.ac_tokens == 5.0
    assert st.staleness_max == 2 and st.staleness_mean == 2.0
