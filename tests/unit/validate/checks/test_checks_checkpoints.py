"""Unit tests of the checkpoint-ledger checks (RL501, RL202) and the facts they gather."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlio.validate.checks.checkpoints import CheckpointChecks
from rlio.validate.scan import Sink


def sink() -> Sink:
    return Sink("checkpoints.jsonl", 100)


def codes(s: Sink) -> list[tuple[str, int | None, str]]:
    return [(f.code, f.line, f.pointer) for f in s.items]


def run(*records: Any) -> tuple[CheckpointChecks, list[tuple[str, int | None, str]]]:
    s = sink()
    checks = CheckpointChecks(s)
    for line, rec in enumerate(records, 1):
        checks(rec, line, True)
    checks.finish()
    return checks, codes(s)


def test_resumable_record_gathers_batch_name_and_step() -> None:
    """A record with state_path adds its batch to resumable and batch, name and step to restarts."""
    checks, found = run({"name": "000004", "batch": 3, "state_path": "s", "step": 9})
    assert found == []
    assert checks.facts.resumable == [(1, 3)]
    assert checks.facts.restart_steps == {3, 4, 9}
    assert checks.facts.records == 1


def test_record_without_state_path_gathers_nothing() -> None:
    """A checkpoint without state_path (or with null) is counted but is no restart point."""
    checks, found = run({"name": "1", "batch": 1}, {"name": "2", "batch": 2, "state_path": None})
    assert found == []
    assert checks.facts.restart_steps == set() and checks.facts.resumable == []
    assert checks.facts.records == 2


def test_state_path_without_batch_is_rl501() -> None:
    """state_path without a batch key is RL501 at its line; a batch of null is not RL501."""
    _, found = run({"name": "a", "state_path": "s"},
                   {"name": "b", "batch": None, "state_path": "s"})
    assert found == [("RL501", 1, "")]


def test_non_int_batch_and_step_are_not_restart_points() -> None:
    """A bool or float batch or step is no restart step, and no resumable record."""
    checks, _ = run({"name": "x", "batch": True, "state_path": "s", "step": 2.0},
                    {"name": "y", "batch": 1.0, "state_path": "s", "step": False})
    assert checks.facts.restart_steps == set()
    assert checks.facts.resumable == []


def test_digit_names_up_to_18_digits_are_restart_steps() -> None:
    """A name of digits counts as a step while shorter than 19 characters."""
    checks, _ = run({"name": "9" * 18, "state_path": "s", "batch": 0},
                    {"name": "1" * 19, "state_path": "s", "batch": 0},
                    {"name": "7a", "state_path": "s", "batch": 0})
    assert checks.facts.restart_steps == {0, int("9" * 18)}


def test_key_order_out_of_schema_order_is_rl202_once() -> None:
    """Keys out of the documented order are one RL202, at the first such line only."""
    _, found = run({"batch": 1, "name": "a"}, {"batch": 2, "name": "b"})
    assert found == [("RL202", 1, "")]


def test_key_order_tolerates_epoch_before_batch() -> None:
    """The cookbook's epoch-before-batch order is not RL202; other keys may follow in any case."""
    _, found = run({"name": "a", "epoch": 0, "batch": 1, "state_path": "s", "extra": 1})
    assert found == []
    _, found = run({"name": "a", "batch": 1, "epoch": 0, "state_path": "s"})
    assert found == []
    _, found = run({"epoch": 0, "name": "a", "batch": 1})
    assert found == [("RL202", 1, "")]


def test_non_dict_records_are_skipped() -> None:
    """A line that is not an object is not counted and raises nothing."""
    checks, found = run([1, 2], "x", None)
    assert checks.facts.records == 0 and found == []


def test_resumable_list_is_bounded() -> None:
    """At most 100,000 resumable records are kept; restart steps are still all gathered."""
    s = sink()
    checks = CheckpointChecks(s)
    for i in range(100_001):
        checks({"batch": i, "state_path": "s"}, i + 1, True)
    assert len(checks.facts.resumable) == 100_000
    assert checks.facts.resumable[-1] == (100_000, 99_999)
    assert len(checks.facts.restart_steps) == 100_000


def test_finish_returns_the_facts() -> None:
    """finish() hands back the same facts object the checks filled."""
    checks = CheckpointChecks(sink())
    assert checks.finish() is checks.facts


def test_a_checkpoint_name_of_unicode_digits_is_no_crash(tmp_path: Path) -> None:
    """A name such as '²' (str.isdigit() but not int()-able) is just a name: no RL107."""
    from rlio import RunWriter, validate_run

    with RunWriter(tmp_path) as run:
        run.record_checkpoint("²", state_path="0", batch=1)
        run.record_checkpoint("٣", batch=2)
    assert [f.code for f in validate_run(tmp_path).findings if str(f.severity) == "error"] == []


def test_key_order_message_names_the_misplaced_key() -> None:
    """RL202 names the key out of place and where the documented order puts it."""
    sink = Sink("checkpoints.jsonl", 100)
    CheckpointChecks(sink)({"batch": 1, "state_path": "s", "name": "a"}, 1, True)
    [f] = sink.items
    assert f.message == ("key 'name' (documented first) out of the documented order; "
                         "documented order is name, batch, state_path")
