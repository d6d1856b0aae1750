"""Unit tests of the metrics.jsonl checks: step order (RL407, RL408), RL412, RL202, RL116."""

from __future__ import annotations

from typing import Any

from rlio import layout
from rlio.validate.checks.metrics import MetricsChecks
from rlio.validate.checks.view import CheckpointFacts, MetricsFacts, RunView
from rlio.validate.scan import Sink

ALL = list(range(20))


def view(iterations: list[int], restart: set[int] | None = None) -> RunView:
    paths = [layout.iteration_path("flat", i, "html") for i in iterations]
    files = {p: layout.parse_path(p) for p in paths}
    v = RunView("flat" if paths else None, files, dict.fromkeys(paths, "file"),
                {p: p for p in paths})
    if restart is not None:
        v.checkpoints = CheckpointFacts(restart_steps=restart)
    return v


def run(records: list[Any], *, iterations: list[int] = ALL,
        restart: set[int] | None = None) -> tuple[MetricsFacts, list[tuple[str, int | None]]]:
    s = Sink("metrics.jsonl", 100)
    checks = MetricsChecks(s, view(iterations, restart))
    for line, rec in enumerate(records, 1):
        checks(rec, line, True)
    facts = checks.finish()
    return facts, [(f.code, f.line) for f in s.items]


def train(step: Any, **extra: Any) -> dict[str, Any]:
    return {"step": step, "progress/batch": step, **extra}


def test_consecutive_training_steps_are_clean() -> None:
    """Steps 0, 1, 2 with files for each give no finding and last_train_step 2."""
    facts, found = run([train(0), train(1), train(2)])
    assert found == []
    assert facts.last_train_step == 2 and facts.records == 3


def test_every_training_key_marks_a_training_line() -> None:
    """Each of the training keys makes a line a training line (an eval line would be RL407)."""
    for key in ("progress/batch", "training_client/step", "progress/done_frac", "progress",
                "optim/lr"):
        _, found = run([train(0), {"step": 1, key: 1}, {"step": 2, key: 1}])
        assert found == [], key


def test_skipped_step_is_rl408() -> None:
    """A training step jumping by two is RL408 at its line, with the expected step named."""
    s = Sink("metrics.jsonl", 100)
    checks = MetricsChecks(s, view(ALL))
    for line, rec in enumerate([train(0), train(2)], 1):
        checks(rec, line, True)
    checks.finish()
    [f] = s.items
    assert (f.code, f.line, f.pointer) == ("RL408", 2, "/step")
    assert "step 2 jumps from step 0 (expected 1)" in f.message


def test_repeat_and_drop_messages() -> None:
    """A repeated step says repeats, a lower one drops back from."""
    for steps, word in (([0, 1, 1], "repeats"), ([0, 1, 2, 0], "drops back from")):
        s = Sink("metrics.jsonl", 100)
        checks = MetricsChecks(s, view(ALL))
        for line, st in enumerate(steps, 1):
            checks(train(st), line, True)
        [f] = s.items
        assert f.code == "RL408" and word in f.message


def test_drop_back_to_a_restart_step_is_rl407() -> None:
    """A drop back to a checkpoint's restart step is RL407 (a resume), elsewhere RL408."""
    steps = [train(0), train(1), train(2), train(1), train(2), train(0)]
    facts, found = run(steps, restart={1})
    assert found == [("RL407", 4), ("RL408", 6)]
    assert facts.last_train_step == 2


def test_last_train_step_is_the_maximum() -> None:
    """last_train_step is the highest training step, not the last one seen."""
    facts, _ = run([train(0), train(1), train(5), train(3)])
    assert facts.last_train_step == 5


def test_invalid_steps_are_ignored() -> None:
    """Negative, bool, float or missing steps are counted as records but never judged."""
    facts, found = run([train(0), train(-1), train(True), train(1.0), {"x": 1}, train(1)])
    assert found == [] and facts.records == 6 and facts.last_train_step == 1


def test_step_zero_is_judged() -> None:
    """Step 0 is a valid step: a first line at step 0 without files is RL412."""
    _, found = run([train(0)], iterations=[1])
    assert found == [("RL412", 1)]


def test_eval_lines_near_the_training_step_are_rl407() -> None:
    """Eval lines at, before or one past the last training step are RL407; beyond that RL408."""
    recs = [train(0), train(1), {"step": 0}, {"step": 1}, {"step": 2}, {"step": 3}]
    _, found = run(recs)
    assert found == [("RL407", 3), ("RL407", 4), ("RL407", 5), ("RL408", 6)]


def test_eval_line_messages() -> None:
    """Eval-line messages tell before-any, one-past and repeating apart."""
    s = Sink("metrics.jsonl", 100)
    checks = MetricsChecks(s, view(ALL))
    for line, rec in enumerate([train(0), {"step": 0}, {"step": 1}], 1):
        checks(rec, line, True)
    assert "repeating step 0 (last training step 0)" in s.items[0].message
    assert "one past the last training step" in s.items[1].message
    assert s.items[0].pointer == "/step"


def test_eval_line_before_any_training_line() -> None:
    """An eval line held before the first training line is RL407 'before any training line'."""
    s = Sink("metrics.jsonl", 100)
    checks = MetricsChecks(s, view(ALL))
    checks({"step": 5}, 1, True)
    checks(train(0), 2, True)
    checks.finish()
    [f] = s.items
    assert (f.code, f.line) == ("RL407", 1) and "before any training line" in f.message


def test_file_without_training_keys_treats_lines_as_training() -> None:
    """Without any training key, every line is a training line, judged at finish."""
    facts, found = run([{"step": 0}, {"step": 1}, {"step": 3}])
    assert found == [("RL408", 3)] and facts.last_train_step == 3


def test_held_lines_are_settled_after_1000() -> None:
    """After 1,000 lines without a training key the file is judged as all-training lines."""
    recs: list[Any] = [{"step": i} for i in range(1000)] + [train(1000), {"step": 1001}]
    s = Sink("metrics.jsonl", 100)
    checks = MetricsChecks(s, view(list(range(1002))))
    for line, rec in enumerate(recs, 1):
        checks(rec, line, True)
        if line == 999:
            assert checks._held  # still held before the thousandth line
    assert not checks._held
    assert s.items == []  # line 1002 is a training line, not an eval line
    assert checks.finish().last_train_step == 1001


def test_steps_without_files_are_rl412_each() -> None:
    """With per-iteration files elsewhere, each step without files is one RL412."""
    _, found = run([train(0), train(1), train(2)], iterations=[1])
    assert found == [("RL412", 1), ("RL412", 3)]


def test_run_without_any_files_is_one_rl412() -> None:
    """A run with no per-iteration file at all is one RL412, at the first step."""
    _, found = run([train(0), train(1)], iterations=[])
    assert found == [("RL412", 1)]


def test_step_not_first_is_rl202_once() -> None:
    """A line whose first key is not step is RL202 once; lines without step are not."""
    _, found = run([{"progress/batch": 0}, {"progress/batch": 0, "step": 0},
                    {"progress/batch": 1, "step": 1}])
    assert found == [("RL202", 2)]


def test_empty_file_is_rl116() -> None:
    """A file holding no record is RL116 at finish; a file with any record is not."""
    _, found = run([])
    assert found == [("RL116", None)]
    facts, found = run([[1]])
    assert facts.records == 0 and found == [("RL116", None)]
    _, found = run([train(0)])
    assert found == []


def test_empty_file_with_findings_is_not_rl116() -> None:
    """RL116 is not added when the file already has findings (say, only broken lines)."""
    s = Sink("metrics.jsonl", 100)
    s.add("RL102", "bad", line=1)
    checks = MetricsChecks(s, view(ALL))
    checks.finish()
    assert [f.code for f in s.items] == ["RL102"]


def test_repeated_step_without_training_keys_is_rl407() -> None:
    """In a file without any training key, a repeated step is RL407 (one line per evaluator);
    a drop back is still RL408."""
    s = Sink("metrics.jsonl", 100)
    checks = MetricsChecks(s, view(ALL))
    for line, rec in enumerate([{"step": 0}, {"step": 1}, {"step": 1}, {"step": 0}], 1):
        checks(rec, line, True)
    checks.finish()
    assert [(f.code, f.line) for f in s.items] == [("RL407", 3), ("RL408", 4)]
    assert "step 1 repeats: several lines for one step" in s.items[0].message


def _messages(records: list[Any], restart: set[int] | None = None) -> list[tuple[str, str]]:
    s = Sink("metrics.jsonl", 100)
    checks = MetricsChecks(s, view(ALL, restart))
    for line, rec in enumerate(records, 1):
        checks(rec, line, True)
    checks.finish()
    return [(f.code, f.message) for f in s.items]


def test_a_forward_jump_onto_a_checkpoint_batch_is_not_called_a_re_log() -> None:
    """Steps 3 -> 5 with a checkpoint at batch 5: RL407 saying step 4 was never logged (a crash
    between that checkpoint and step 4's line), never "logs these iterations again"; a wider
    jump onto a checkpoint (2 -> 5) loses more than one line: RL408; a drop onto a checkpoint
    keeps the re-log wording."""
    found = _messages([train(s) for s in (0, 1, 2, 3, 5)], restart={5})
    assert found == [("RL407", "step 5 jumps from step 3: step 4 was never logged, as when a "
                               "crash comes between the checkpoint at batch 5 and step 4's "
                               "metrics line and the run resumes from that checkpoint")]
    wide = _messages([train(s) for s in (0, 1, 2, 5)], restart={5})
    assert wide == [("RL408", "step 5 jumps from step 2 (expected 3): steps 3 to 4 were never "
                              "logged")]
    again = _messages([train(s) for s in (0, 1, 2, 3, 1)], restart={1})
    assert again == [("RL407", "step 1 drops back from step 3: a resume from the checkpoint at "
                               "batch 1 logs these iterations again")]


def test_a_loss_only_loop_is_judged_as_training_lines() -> None:
    """A loop logging only {"loss"} (no progress key): no line is called eval-only or async
    eval, and a jump from 2 to 7 is RL408 naming the steps never logged."""
    found = _messages([{"step": s, "loss": 1.0} for s in (0, 1, 2, 7, 8)])
    assert found == [("RL408", "step 7 jumps from step 2 (expected 3): steps 3 to 6 were "
                               "never logged")]
    assert _messages([{"loss": 1.0} for _ in range(5)]) == []  # no step: nothing to order
