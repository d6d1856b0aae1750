"""Stateful property: write / crash (cut at a random byte) / reopen / resume agrees with a model.

The machine drives a real ``RunWriter`` on a real directory. A crash closes the writer without
warning and may cut the file at a random byte inside the record being written when it died (the
kill landed mid-``write``). Reopening is ``RunWriter(..., resume=True)``. The model holds the
checkpoint records that survived whole and the metrics steps; after every step
``read_resume_state`` must agree with it, and after a reopen ``metrics.jsonl`` must hold no line
the restart supersedes, with every moved line kept in a sidecar.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rlio import layout, read_resume_state
from rlio.writer import RunWriter


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _suffix_start(steps: list[int | None], next_batch: int) -> int:
    """Model of the documented rewind rule: index where the superseded suffix starts."""
    cut = len(steps)
    for i in range(len(steps) - 1, -1, -1):
        s = steps[i]
        if s is None:
            continue
        if s < next_batch:
            break
        cut = i
    return cut


class ResumeMachine(RuleBasedStateMachine):
    """Write checkpoints and metrics, crash, reopen with resume=True; compare with the model."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="rlio-resume-sm-")
        self.writer: RunWriter | None = RunWriter(self.dir)
        self.ledger: list[dict[str, Any]] = []  # whole records in checkpoints.jsonl, in order
        self.metrics: list[int | None] = []  # steps of the lines in metrics.jsonl, in order
        self.moved = 0  # metrics lines moved to metrics.jsonl.superseded so far
        self.written = 0  # metrics lines ever written whole
        self.torn = False  # the ledger's last line is torn (until a reopen repairs it)
        self.step = 0

    def teardown(self) -> None:
        if self.writer is not None:
            self.writer.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _path(self, rel: str) -> str:
        return os.path.join(self.dir, rel)

    @precondition(lambda self: self.writer is not None)
    @rule()
    def log_metrics(self) -> None:
        """Log one metrics line for the current step and advance."""
        assert self.writer is not None
        self.writer.log_metrics({"progress/batch": self.step, "env/all/reward/total": 0.5},
                                step=self.step)
        self.metrics.append(self.step)
        self.written += 1
        self.step += 1

    @precondition(lambda self: self.writer is not None)
    @rule(resumable=st.booleans(), epoch=st.none() | st.integers(0, 3))
    def record_checkpoint(self, resumable: bool, epoch: int | None) -> None:
        """Record a checkpoint at the current step (acknowledged when the call returns)."""
        assert self.writer is not None
        rec = self._record(resumable, epoch)
        self.writer.record_checkpoint(**rec)
        self.ledger.append(rec)

    def _record(self, resumable: bool, epoch: int | None) -> dict[str, Any]:
        rec: dict[str, Any] = {"name": f"{self.step:06d}", "batch": self.step}
        if epoch is not None:
            rec["epoch"] = epoch
        key = "state_path" if resumable else "sampler_path"
        rec[key] = f"tinker://run/{key}/{self.step:06d}"
        return rec

    @precondition(lambda self: self.writer is not None)
    @rule(resumable=st.booleans(), frac=st.floats(0, 1))
    def crash_during_checkpoint(self, resumable: bool, frac: float) -> None:
        """The process dies while writing a checkpoint: any prefix of the record may be on disk."""
        assert self.writer is not None
        rec = self._record(resumable, None)
        self.writer.record_checkpoint(**rec)
        self.writer.close()
        self.writer = None
        path = self._path(layout.CHECKPOINTS)
        size = os.path.getsize(path)
        length = len(json.dumps(rec, separators=(",", ":"))) + 1
        keep = round(frac * length)
        os.truncate(path, size - length + keep)
        if keep == length:
            self.ledger.append(rec)  # written whole before the kill: durable, though unacked
        elif keep > 0:
            self.torn = True

    @precondition(lambda self: self.writer is not None)
    @rule(frac=st.floats(0, 1))
    def crash_during_metrics(self, frac: float) -> None:
        """The process dies while logging a metrics line: any prefix of it may be on disk."""
        assert self.writer is not None
        self.writer.log_metrics({"progress/batch": self.step}, step=self.step)
        self.writer.close()
        self.writer = None
        path = self._path(layout.METRICS)
        last = _read(path).splitlines(keepends=True)[-1]
        keep = round(frac * len(last))
        os.truncate(path, os.path.getsize(path) - len(last) + keep)
        if keep == len(last):
            self.metrics.append(self.step)
            self.written += 1

    @precondition(lambda self: self.writer is None)
    @rule()
    def reopen_and_resume(self) -> None:
        """Reopen with resume=True: the restart point is the model's; superseded lines move."""
        self.writer = RunWriter(self.dir, resume=True)
        state = self.writer.resume_state
        expected = self._expected()
        assert (state.checkpoint if state else None) == expected
        self.torn = False
        cut = 0 if state is None else _suffix_start(self.metrics, state.next_batch)
        self.moved += len(self.metrics) - cut
        self.metrics = self.metrics[:cut]
        self.step = 0 if state is None else state.next_batch

    def _expected(self) -> dict[str, Any] | None:
        resumable = [r for r in self.ledger if "state_path" in r]
        return resumable[-1] if resumable else None

    @invariant()
    def resume_state_agrees_with_the_model(self) -> None:
        """read_resume_state returns the model's last whole resumable record, line and torn flag."""
        state = read_resume_state(self.dir)
        expected = self._expected()
        if expected is None:
            assert state is None
            return
        assert state is not None
        assert state.checkpoint == expected
        assert state.line == max(i for i, r in enumerate(self.ledger) if r is expected) + 1
        assert state.next_batch == expected["batch"]
        assert state.next_epoch == expected.get("epoch")
        assert state.torn_tail == self.torn

    @invariant()
    def metrics_lines_are_kept_or_moved_never_lost(self) -> None:
        """metrics.jsonl holds the model's steps; the sidecar holds every line a resume moved."""
        path = self._path(layout.METRICS)
        if not os.path.exists(path):
            assert self.metrics == []
            return
        data = _read(path)
        whole = data[: data.rfind(b"\n") + 1]
        assert [json.loads(x).get("step") for x in whole.splitlines()] == self.metrics
        side = self._path(layout.METRICS + layout.SUPERSEDED_SUFFIX)
        moved = _read(side).splitlines() if os.path.exists(side) else []
        assert len(moved) == self.moved
        assert len(self.metrics) + self.moved == self.written


TestResumeMachine = ResumeMachine.TestCase
TestResumeMachine.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
