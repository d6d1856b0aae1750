"""Stateful property: whatever the writer acknowledges validates with no error and resumes.

The machine drives a real ``RunWriter`` on a real directory with random sequences of verbs:
valid and invalid metrics (odd values, nested values, bad steps), checkpoints (with and without
batch, URIs and local paths, empty paths), rollout summaries (valid, broken, empty), logtrees,
configs, timing spans and timers, evaluator names (long, odd characters, colliding) and
iterations (huge, negative). Every refusal must be an ``RlioError``, ``ValueError`` or
``TypeError``; after each ``check`` and at the end, ``validate_run`` reports no error,
``read_resume_state`` does not raise and ``RunWriter(resume=True)`` reopens the run.

The default suite runs a ~30 s budget; the ``slow`` marker runs a bigger one.
"""

from __future__ import annotations

import contextlib
import math
import os
import pathlib
import shutil
import tempfile
from typing import Any

import pytest
from factories import trajectory
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from rlio import RlioError, RunWriter, read_resume_state, validate_run
from rlio import layout as L
from rlio.findings import Severity

REFUSALS = (RlioError, ValueError, TypeError)

SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats() | st.text(max_size=6)
           | st.sampled_from([1.6, -0.5, -1e-5, 0.0, math.nan, math.inf, 2**64 - 1]))
VALUES = SCALARS | st.lists(SCALARS, max_size=2) | st.dictionaries(st.text(max_size=2), SCALARS,
                                                                     max_size=2)
KEYS = st.sampled_from(["progress/batch", "progress/done_frac", "optim/lr", "time/sample",
                        "time/sample:count", "env/all/reward/total", "test/env/all/reward/total",
                        "loss", "cost/total_usd", "tokens/total", "step", "", "a\nb"])
STEPS = (st.integers(0, 12) | st.sampled_from([None, -1, 2**63, 2**64, True, 1.0, "3"]))
ITERATIONS = st.integers(0, 6) | st.sampled_from([-1, 2**63 - 1, 2**63, 10**300, True, 1.5])
EVALUATORS = st.sampled_from([None, None, "test", "gsm8k/main", "test set (v2)", "...", 0, 3,
                              "x" * 300 + "a", "x" * 300 + "b", "é/ü", "a\x00b", True, 1.5])
PATHS = st.sampled_from(["tinker://r/weights/c", "gs://b/c", "/abs/c", "rel/c", "",
                         pathlib.Path("p") / "q", None])
CONFIGS = (st.dictionaries(st.text(max_size=4), SCALARS, max_size=3)
           | st.sampled_from([{"fn": len}, {"cls": int}, [1, 2], {"b": b"x"},
                             {"p": pathlib.Path("x")}]))


class WriterMachine(RuleBasedStateMachine):
    """Random writer calls on one run; the run must stay valid and resumable."""

    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="rlio-stateful-")
        self.path = os.path.join(self.root, "run")
        self.run = RunWriter(self.path)
        self.run.write_config({"model": "m", "lr": 1e-4})  # every loop writes its config first

    def call(self, fn: Any, *args: Any, **kwargs: Any) -> None:
        """Run one verb; a refusal must be one of REFUSALS (anything else fails the test)."""
        with contextlib.suppress(*REFUSALS):
            fn(*args, **kwargs)

    @rule(metrics=st.dictionaries(KEYS, VALUES, max_size=4), step=STEPS)
    def log_metrics(self, metrics: dict[str, Any], step: Any) -> None:
        self.call(self.run.log_metrics, metrics, step=step)

    @rule(name=st.sampled_from(["000001", "final", "", "c"]),
          batch=st.integers(0, 8) | st.sampled_from([None, -1, True]),
          epoch=st.sampled_from([None, None, 0, 2, -1]), state=PATHS, sampler=PATHS,
          extra=st.sampled_from([{}, {"rolling": True}, {"step": 3}, {"final": "yes"}]))
    def record_checkpoint(self, name: str, batch: Any, epoch: Any, state: Any, sampler: Any,
                          extra: dict[str, Any]) -> None:
        self.call(self.run.record_checkpoint, name, batch=batch, epoch=epoch, state_path=state,
                  sampler_path=sampler, **extra)

    @rule(iteration=ITERATIONS, evaluator=EVALUATORS, n=st.integers(0, 3),
          damage=st.sampled_from([None, None, "total_reward", "iteration", "missing", "dupe",
                                  "split"]))
    def write_rollouts(self, iteration: Any, evaluator: Any, n: int, damage: str | None) -> None:
        it = iteration if type(iteration) is int and 0 <= iteration < 2**63 else 0
        records = [trajectory(it, 0, t) for t in range(n)]
        for r in records:
            r.pop("split")  # filled in from the file by the writer
        if records and damage == "total_reward":
            records[0]["total_reward"] += 1.0
        elif records and damage == "iteration":
            records[0]["iteration"] = it + 1
        elif records and damage == "missing":
            del records[0]["steps"]
        elif records and damage == "dupe":
            records.append(dict(records[0]))
        elif records and damage == "split":
            records[0]["split"] = "eval/other"
        self.call(self.run.write_rollout_summaries, iteration, records, evaluator=evaluator)

    @rule(iteration=ITERATIONS, evaluator=EVALUATORS, raises=st.booleans(),
          text=st.text(max_size=20))
    def logtree(self, iteration: Any, evaluator: Any, raises: bool, text: str) -> None:
        def block() -> None:
            with self.run.logtree(iteration, title=f"Iteration {iteration!r}",
                                  evaluator=evaluator) as lt:
                with lt.section("Group Rollout"):
                    lt.text(text)
                    lt.table({"reward": 1.0}, caption="Reward")
                if raises:
                    raise ValueError("the loop failed inside the block")
        self.call(block)

    @rule(config=CONFIGS)
    def write_config(self, config: Any) -> None:
        self.call(self.run.write_config, config)

    @rule(step=STEPS, name=st.sampled_from(["sample", "train", ""]),
          duration=st.sampled_from([0.5, -1.0, math.nan, "x"]))
    def log_timing_spans(self, step: Any, name: str, duration: Any) -> None:
        self.call(self.run.log_timing_spans, step,
                  [{"name": name, "duration": duration, "wall_start": 1.0, "wall_end": 2.0}])

    @rule(name=st.sampled_from(["sample", "train", "", 3]))
    def timer(self, name: Any) -> None:
        def block() -> None:
            with self.run.timer(name):
                pass
        self.call(block)

    @rule()
    def reopen(self) -> None:
        """Close and resume: RunWriter(resume=True) always reopens an acknowledged run."""
        self.run.close()
        self.run = RunWriter(self.path, resume=True)

    @rule()
    def check(self) -> None:
        """The invariant, mid-run."""
        self.run.flush()
        self.assert_valid_and_resumable()

    def assert_valid_and_resumable(self) -> None:
        report = validate_run(self.path)
        errors = [f for f in report.findings if f.severity is Severity.ERROR]
        assert not errors, errors
        read_resume_state(self.path)  # never raises on an acknowledged run

    def teardown(self) -> None:
        try:
            self.run.close()
            self.assert_valid_and_resumable()
            RunWriter(self.path, resume=True).close()
            self.assert_valid_and_resumable()
            assert os.path.isfile(os.path.join(self.path, L.METRICS))
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def test_writer_acknowledges_only_valid_resumable_runs() -> None:
    """Random writer call sequences leave runs with no validator error that resume (~30 s)."""
    run_state_machine_as_test(WriterMachine, settings=settings(
        max_examples=60, stateful_step_count=20, deadline=None))


@pytest.mark.slow
def test_writer_acknowledges_only_valid_resumable_runs_long() -> None:
    """The same property with a much bigger budget."""
    run_state_machine_as_test(WriterMachine, settings=settings(
        max_examples=400, stateful_step_count=40, deadline=None))
