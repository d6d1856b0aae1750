"""rlio.rules: the docs/format.md §9 rules at their boundaries (each bound and condition pinned)."""

from __future__ import annotations

import math

import pytest

from rlio import rules
from rlio.rules import REWARD_TOLERANCE, bad_step_index, reward_mismatch, step_after_done


@pytest.mark.parametrize(("total", "final", "rewards"), [
    (1.0, 0.0, [1.0]),
    (1.0000015, 0.0, [1.0]),            # within 1e-6 * (1 + 1)
    (1.5, 0.0, [1e6, -1e6]),            # within 1e-6 * (1 + 2e6)
    (0.0, 0.0, []),
    (3.0, 1.0, [1.0, 1.0]),
    (1e-6, 0.0, []),                    # exactly the absolute floor
    (0.1 + 0.2, 0.0, [0.1, 0.2]),
])
def test_totals_within_tolerance_match(total: float, final: float, rewards: list[float]) -> None:
    """A total within REWARD_TOLERANCE * (1 + sum of magnitudes) of the exact sum is fine."""
    assert reward_mismatch(total, final, rewards) is None


@pytest.mark.parametrize(("total", "final", "rewards", "expected"), [
    (1.0000031, 0.0, [1.0], 1.0),       # just past 1e-6 * (1 + 1)
    (2.1e-6, 0.0, [], 0.0),             # past the absolute floor
    (2.5, 0.0, [1e6, -1e6], 0.0),       # past the relative bound of 2e6 magnitude
    (0.0, 1.0, [], 1.0),                # final_reward counts
    (1.0, 0.0, [1.0, 1.0], 2.0),        # every step counts
])
def test_totals_beyond_tolerance_name_the_sum(
    total: float, final: float, rewards: list[float], expected: float
) -> None:
    """Beyond tolerance the rule returns the exact sum it expected."""
    assert reward_mismatch(total, final, rewards) == expected


@pytest.mark.parametrize(("total", "final", "rewards"), [
    (None, 0.0, [1.0]), (5.0, None, [1.0]), (5.0, 0.0, [1.0, None]),
    (math.nan, 0.0, [1.0]), (math.inf, 0.0, [1.0]), (5.0, 0.0, [math.inf]),
    (5.0, 0.0, [1e308, 1e308]), (5.0, 0.0, ["x"]),
])
def test_nothing_to_compare_is_no_mismatch(
    total: object, final: object, rewards: list[object]
) -> None:
    """A null, non-finite, non-numeric or overflowing value leaves nothing to compare."""
    assert reward_mismatch(total, final, rewards) is None


def test_infinite_parts_are_nothing_to_compare() -> None:
    """An infinite step reward or final reward gives no mismatch (nothing to compare)."""
    assert reward_mismatch(1.0, math.inf, [1.0]) is None
    assert reward_mismatch(1.0, 0.0, [-math.inf]) is None
    assert reward_mismatch(1.0, 0.0, [math.inf, -math.inf]) is None


def test_tolerance_is_one_in_a_million() -> None:
    """The documented tolerance constant."""
    assert REWARD_TOLERANCE == 1e-6


@pytest.mark.parametrize(("indices", "at"), [
    ([], None), ([0], None), ([0, 1, 2], None), ([0, 1.0], None),
    ([1], 0), ([0, 2], 1), ([0, 1, 1], 2), ([0, 0], 1), ([-1], 0),
])
def test_step_indices_run_from_zero(indices: list[object], at: int | None) -> None:
    """step_idx must equal its position; the first position that does not is returned."""
    assert bad_step_index(indices) == at


@pytest.mark.parametrize(("dones", "at"), [
    ([], None), ([True], None), ([False, True], None), ([False, False], None),
    ([True, False], 0), ([False, True, False], 1), ([True, True], 0),
])
def test_steps_after_episode_done(dones: list[bool], at: int | None) -> None:
    """Only a done flag that a later step follows is reported, at its position."""
    assert step_after_done(dones) == at


@pytest.mark.parametrize(("record", "summary"), [
    ({"step": 3, "cost/total": 1.5, "tokens/sampled": 10}, True),
    ({"cost/total": 1.5}, True),
    ({"step": 3}, False),  # nothing but the step: not a summary row
    ({}, False),
    ({"step": 3, "cost/total": 1.5, "env/all/reward": 0.5}, False),  # one non-summary key
    ({"step": 3, "env/all/reward": 0.5, "cost/total": 1.5}, False),
    ({"time/total": 2.0}, True),
])
def test_summary_lines_hold_only_summary_keys(record: dict[str, object], summary: bool) -> None:
    """A line is a summary row exactly when it has keys besides ``step`` and all are summaries."""
    assert rules.is_summary_line(record) is summary


@pytest.mark.parametrize(("group", "traj", "expected"), [
    (1, 2, (1, 2)), (0, 0, (0, 0)),
    (1.0, 2, None), (1, 2.0, None), (True, 2, None), (1, None, None), ("1", 2, None),
])
def test_trajectory_ids_are_int_pairs(group: object, traj: object,
                                      expected: tuple[int, int] | None) -> None:
    """Only a pair of plain ints identifies a trajectory (anything else: nothing to compare)."""
    assert rules.trajectory_id(group, traj) == expected


@pytest.mark.parametrize(("record", "problem"), [
    ({"name": "a", "state_path": "s", "batch": 1}, None),
    ({"name": "a", "state_path": None}, None),  # not resumable: nothing lacks
    ({"name": "a"}, None),
    ("not a record", None),
    ({"name": "a", "state_path": "s"}, "no batch"),
    ({"name": "a", "state_path": "s", "epoch": 2}, "epoch but no batch"),
])
def test_resume_problem(record: object, problem: str | None) -> None:
    """A record with a non-null state_path must carry batch; the reason names what it lacks."""
    found = rules.resume_problem(record)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found
        assert found.startswith("has state_path")
        assert ("epoch" in found) is ("epoch" in problem)


def test_resume_problem_other_required_key() -> None:
    """``required_key`` picks the key that makes a record resumable."""
    assert rules.resume_problem({"sampler_path": "p"}, "sampler_path") is not None
    assert rules.resume_problem({"sampler_path": "p"}) is None
    assert rules.resume_problem({"state_path": "p"}, "sampler_path") is None


@pytest.mark.parametrize(("value", "ok"), [
    (0, True), (2**63 - 1, True), (2**63, False), (-1, False), (5.0, False), (1e30, False),
    (True, False), (None, False), ("5", False)])
def test_restart_index_is_an_int64_int(value: object, ok: bool) -> None:
    """A restart index (batch, epoch) is an int from 0 to 2**63 - 1, never a float or bool."""
    assert rules.is_restart_index(value) is ok
    problem = rules.resume_problem({"name": "c", "batch": value, "state_path": "s"})
    assert (problem is None) is (ok or value is None)


def test_rules_table_is_keyed_by_catalogue_codes() -> None:
    """Each rule of ``RULES`` is keyed by a finding code of the catalogue, and the writer's and
    validator's modules decide with the table's functions (no private restatement)."""
    import inspect

    import rlio.resume
    import rlio.validate.checks.checkpoints
    import rlio.validate.checks.rollout_lines
    import rlio.writer.summaries
    import rlio.writer.support
    from rlio.findings import CATALOGUE

    assert set(rules.RULES) <= set(CATALOGUE)
    users = {rlio.writer.summaries: {"RL401", "RL402", "RL403", "RL404", "RL405"},
             rlio.writer.support: {"RL501"}, rlio.resume: {"RL501"},
             rlio.validate.checks.rollout_lines: {"RL401", "RL402", "RL403", "RL404", "RL405",
                                                  "RL406"},
             rlio.validate.checks.checkpoints: {"RL501"}}
    for module, codes in users.items():
        source = inspect.getsource(module)
        for code in codes:
            assert rules.RULES[code].__name__ in source, (module.__name__, code)


def test_iteration_and_split_against_the_file_name() -> None:
    """RL401/RL402: an iteration or split other than the file name's (a bool is no iteration;
    an evaluator's split may come from its raw or sanitized label)."""
    assert not rules.iteration_mismatch(3, 3) and not rules.iteration_mismatch(3.0, 3)
    assert rules.iteration_mismatch(4, 3) and rules.iteration_mismatch(True, 1)
    assert not rules.iteration_mismatch(4, None)
    assert rules.file_splits(None) == {"train"}
    splits = rules.file_splits("math test")
    assert not rules.split_mismatch("eval/math test", splits)
    assert not rules.split_mismatch("eval/math_test", splits)
    assert rules.split_mismatch("train", splits)
