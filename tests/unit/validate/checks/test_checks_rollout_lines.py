"""Unit tests of the rollout-summary checks: RL401, RL402, RL403, RL404, RL405, RL406, RL202."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from rlio.schema import load_schema
from rlio.validate.checks.rollout_lines import PairOrder, RolloutChecks, duplicate_pairs
from rlio.validate.parallel import RangeTask, scan_range
from rlio.validate.scan import Sink

KEYS = load_schema("rollout-summary-line")["required"]


def rec(g: int = 0, t: int = 0, *, rewards: tuple[Any, ...] = (1.0,), total: Any = None,
        final: Any = 0.0, idx: tuple[int, ...] | None = None,
        dones: tuple[bool, ...] | None = None, split: str = "train",
        iteration: int = 3) -> dict[str, Any]:
    n = len(rewards)
    idx = tuple(range(n)) if idx is None else idx
    dones = tuple(i == n - 1 for i in range(n)) if dones is None else dones
    if total is None:
        total = sum(r for r in rewards if r is not None) + (final or 0.0)
    steps = [{"step_idx": i, "ob_len": 1, "ac_len": 1, "reward": r, "episode_done": d,
              "metrics": {}, "logs": {}} for i, r, d in zip(idx, rewards, dones, strict=True)]
    values = {"schema_version": 1, "split": split, "iteration": iteration, "group_idx": g,
              "traj_idx": t, "tags": [], "sampling_client_step": 0, "total_reward": total,
              "final_reward": final, "trajectory_metrics": {}, "steps": steps,
              "final_ob_len": 0}
    return {k: values[k] for k in KEYS}


def run(*records: dict[str, Any], label: str | None = None,
        iteration: int | None = 3) -> tuple[list[tuple[str, int | None, str]], RolloutChecks]:
    s = Sink("r.jsonl", 100)
    checks = RolloutChecks(s, iteration=iteration, label=label)
    for line, r in enumerate(records, 1):
        checks(r, line, True)
    return [(f.code, f.line, f.pointer) for f in s.items], checks


def test_clean_records() -> None:
    """Well-formed single- and multi-step records in pair order give no finding."""
    found, checks = run(rec(0, 0), rec(0, 1, rewards=(1.0, 2.0)), rec(1, 0, rewards=()))
    assert found == []
    order = checks.finish()
    assert order.ordered and order.first == (0, 0) and order.last == (1, 0)


def test_invalid_records_are_not_checked() -> None:
    """The hook skips records the schema refused."""
    s = Sink("r.jsonl", 100)
    checks = RolloutChecks(s, iteration=3, label=None)
    checks(rec(iteration=9), 1, False)
    assert s.items == [] and checks.finish().first is None


def test_iteration_and_split_mismatch() -> None:
    """A record of another iteration is RL401; of another split RL402; no iteration: no RL401."""
    found, _ = run(rec(iteration=4), rec(0, 1, split="eval/x"))
    assert found == [("RL401", 1, "/iteration"), ("RL402", 2, "/split")]
    found, _ = run(rec(iteration=4), iteration=None)
    assert found == []


def test_eval_split_accepts_the_sanitized_label() -> None:
    """An eval file accepts its label and the label's sanitized form."""
    found, _ = run(rec(split="eval/a b"), rec(0, 1, split="eval/a_b"), label="a b")
    assert found == []
    found, _ = run(rec(split="train"), label="x")
    assert found == [("RL402", 1, "/split")]


def test_pair_order() -> None:
    """Pairs must strictly increase by group then trajectory; a repeat or drop breaks order."""
    for pairs, ordered in ((((0, 0), (0, 1), (1, 0)), True), (((0, 1), (0, 1)), False),
                           (((1, 0), (0, 5)), False), (((0, 2), (0, 1)), False),
                           (((0, 0), (1, 0), (1, 1)), True)):
        _, checks = run(*(rec(g, t) for g, t in pairs))
        assert checks.finish().ordered is ordered, pairs


def test_pair_order_first_and_last() -> None:
    """The order remembers the first and last pair of the range."""
    _, checks = run(rec(2, 1), rec(2, 3), rec(4, 0))
    order = checks.finish()
    assert (order.first, order.last) == ((2, 1), (4, 0))


def test_step_idx_must_run_from_zero() -> None:
    """step_idx not running 0..n-1 is RL404 at the first bad position."""
    found, _ = run(rec(idx=(1,)), rec(0, 1, rewards=(1.0, 1.0), idx=(0, 2)),
                   rec(0, 2, rewards=(1.0, 1.0, 1.0), idx=(1, 1, 2)))
    assert found == [("RL404", 1, "/steps/0/step_idx"), ("RL404", 2, "/steps/1/step_idx"),
                     ("RL404", 3, "/steps/0/step_idx")]


def test_step_idx_message_names_the_range() -> None:
    """The RL404 message names the value, its position and the range 0..n-1."""
    s = Sink("r.jsonl", 100)
    RolloutChecks(s, iteration=3, label=None)(rec(rewards=(1.0, 1.0), idx=(0, 5)), 1, True)
    assert s.items[0].message == "step_idx 5 at position 1; step_idx must run 0..1"


def test_total_reward_tolerance_single_step() -> None:
    """A single-step total within 1e-6 * (1 + magnitudes) passes; beyond it is RL405."""
    assert run(rec(rewards=(1.0,), total=1.0000015))[0] == []
    assert run(rec(rewards=(1.0,), total=1.0000025))[0] == [("RL405", 1, "/total_reward")]
    assert run(rec(rewards=(0.0,), total=0.0000009, final=0.0))[0] == []
    assert run(rec(rewards=(0.0,), total=0.0000011, final=0.0))[0] == [
        ("RL405", 1, "/total_reward")]
    assert run(rec(rewards=(1.0,), total=-1.0))[0] == [("RL405", 1, "/total_reward")]


def test_total_reward_multi_step_and_empty() -> None:
    """Multi-step and step-less records are held to the same rule, final_reward included."""
    assert run(rec(rewards=(1.0, 2.0), total=3.0000015))[0] == []
    assert run(rec(rewards=(1.0, 2.0), total=3.5))[0] == [("RL405", 1, "/total_reward")]
    assert run(rec(rewards=(1.0, 2.0), final=1.0, total=3.0))[0] == [
        ("RL405", 1, "/total_reward")]
    assert run(rec(rewards=(), final=2.0, total=2.0))[0] == []
    assert run(rec(rewards=(), final=2.0, total=1.0))[0] == [("RL405", 1, "/total_reward")]
    assert run(rec(rewards=(1.0, 2.0), total=2.0, idx=(0, 0)))[0] == [
        ("RL404", 1, "/steps/1/step_idx"), ("RL405", 1, "/total_reward")]


def test_total_reward_message_and_nulls() -> None:
    """RL405 names the total and the sum; a null reward, total or final skips the rule."""
    s = Sink("r.jsonl", 100)
    RolloutChecks(s, iteration=3, label=None)(rec(rewards=(1.0,), total=2.0), 1, True)
    assert s.items[0].message == ("total_reward 2.0 but the step rewards plus final_reward "
                                  "sum to 1.0")
    for r in (rec(rewards=(None,), total=5.0), rec(rewards=(1.0, None), total=5.0),
              rec(rewards=(1.0,), total=5.0, final=None),
              rec(rewards=(1.0, 1.0), total=5.0, final=None), rec(rewards=(), final=None),
              rec(rewards=(1.0, None), total=5.0, idx=(0, 0))):
        found, _ = run(r)
        assert ("RL405", 1, "/total_reward") not in found, r


def test_steps_after_episode_done() -> None:
    """episode_done before the last step is RL406 at the step after it; done last is fine."""
    found, _ = run(rec(rewards=(1.0, 1.0, 1.0), dones=(False, True, False)),
                   rec(0, 1, rewards=(1.0, 1.0), dones=(True, True)),
                   rec(0, 2, rewards=(1.0, 1.0), dones=(False, False)),
                   rec(0, 3, rewards=(1.0, 1.0), dones=(False, True)))
    assert found == [("RL406", 1, "/steps/2"), ("RL406", 2, "/steps/1")]
    s = Sink("r.jsonl", 100)
    RolloutChecks(s, iteration=3, label=None)(
        rec(rewards=(1.0, 1.0, 1.0), dones=(True, False, False)), 1, True)
    assert s.items[0].message == "2 step(s) after episode_done: true at step 0"


def test_key_order_is_rl202_once() -> None:
    """Keys out of the schema's order are one RL202, at the first such record."""
    bad = dict(reversed(list(rec().items())))
    found, _ = run(bad, dict(bad, traj_idx=1), rec(0, 2), dict(bad, traj_idx=3))
    assert found == [("RL202", 1, "")]


def test_key_order_of_a_scanned_file(tmp_path: Path) -> None:
    """A scanned rollout file gets its RL202 at the first line."""
    bad = dict(reversed(list(rec().items())))
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"".join(orjson.dumps(dict(bad, traj_idx=t)) + b"\n" for t in range(50)))
    task = RangeTask(str(tmp_path), "r.jsonl", "r.jsonl", 3, None, 0, path.stat().st_size, True,
                     100)
    assert [(f.code, f.line) for f in scan_range(task).sink.items] == [("RL202", 1)]


def test_key_order_checked_on_the_first_100_records_only() -> None:
    """Only the first 100 records are checked for key order."""
    bad = dict(reversed(list(rec().items())))
    records = [rec(0, t) for t in range(100)] + [dict(bad, traj_idx=100)]
    assert run(*records)[0] == []
    records = [rec(0, t) for t in range(99)] + [dict(bad, traj_idx=99)]
    assert run(*records)[0] == [("RL202", 100, "")]


def test_duplicate_pairs() -> None:
    """A repeated pair is RL403 at its later line, naming the first; odd records are skipped."""
    s = Sink("r.jsonl", 100)
    records = [(1, {"group_idx": 0, "traj_idx": 1}), (2, [1]), (3, {"group_idx": "0"}),
               (4, {"group_idx": 0, "traj_idx": True}), (5, {"group_idx": 0, "traj_idx": 1}),
               (6, {"group_idx": 1, "traj_idx": 0})]
    duplicate_pairs(iter(records), s)
    assert [(f.code, f.line, f.message) for f in s.items] == [
        ("RL403", 5, "(group_idx, traj_idx) = (0, 1) repeats line 1")]


def test_training_file_refuses_other_splits() -> None:
    """A training file accepts only split train (no label form is added for it)."""
    assert run(rec(split="eval/None"))[0] == [("RL402", 1, "/split")]


def test_pair_order_then() -> None:
    """Two ranges are ordered only when both are and the first's last pair precedes the next."""
    a = PairOrder(True, (0, 0), (3, 1))
    assert a.then(PairOrder(True, (3, 2), (5, 0))) == PairOrder(True, (0, 0), (5, 0))
    assert not a.then(PairOrder(True, (3, 1), (5, 0))).ordered
    assert not a.then(PairOrder(False, (4, 0), (5, 0))).ordered
    assert not PairOrder(False, (0, 0), (1, 0)).then(PairOrder(True, (4, 0), (5, 0))).ordered
    assert a.then(PairOrder()) is a
    assert PairOrder().then(a) is a
    empty_last = PairOrder(True, None, None)
    later = PairOrder(True, (1, 0), (2, 0))
    assert empty_last.then(later) is later


def test_key_order_message_names_the_misplaced_key() -> None:
    """RL202 names the one key out of place and where the documented order puts it, however
    long the key list (nothing cut off), then the documented order."""
    keys = list(rec())
    moved = {k: v for k, v in rec().items() if k != "total_reward"}
    moved["total_reward"] = rec()["total_reward"]
    s = Sink("r.jsonl", 100)
    RolloutChecks(s, iteration=3, label=None)(moved, 1, True)
    [f] = s.items
    before = keys[keys.index("total_reward") - 1]
    assert f.message == (f"key 'total_reward' (documented after {before!r}) out of the "
                         f"documented order; documented order is {', '.join(KEYS)}")


def test_key_order_message_counts_keys_past_the_third() -> None:
    """A reversed record names the first three keys to move and counts the rest."""
    bad = dict(reversed(list(rec().items())))
    s = Sink("r.jsonl", 100)
    RolloutChecks(s, iteration=3, label=None)(bad, 1, True)
    [f] = s.items
    assert f.message.startswith("keys ") and f" and {len(KEYS) - 4} more out of" in f.message
