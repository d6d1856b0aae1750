"""Per-line checks of ``metrics.jsonl`` (docs/format.md §3, §9): step order, async evals, keys."""

from __future__ import annotations

from typing import Any, Final

from rlio.rules import TRAINING_KEYS, is_summary_line
from rlio.validate.checks.view import MetricsFacts, RunView
from rlio.validate.scan import Sink


class MetricsChecks:
    """Step order of ``metrics.jsonl``: normal +1 steps, explained drops (RL407), the rest RL408.

    Lines with a progress key (``TRAINING_KEYS``) are training lines. Once the file has shown one,
    lines without those keys are eval (or sampler) lines: at or before the last training step + 1
    they are info, as async eval lines are. A file without any progress key (loops that log other
    keys) treats every line as a training line: lines are held back (a bounded number) until the
    file shows which kind it is.
    """

    _MAX_HELD: Final = 1000

    def __init__(self, sink: Sink, view: RunView) -> None:
        self.sink = sink
        self.restart = view.restart_steps
        self.iterations = view.iterations
        self.facts = MetricsFacts()
        self._records = 0  # the facts' counts, kept here while lines stream
        self._top = -1  # the highest training step (-1: none yet)
        self._progress_mode: bool | None = None
        # (step, line, summary row?) of lines before the mode is known
        self._held: list[tuple[int, int, bool]] = []
        self._last: int | None = None  # last training step (after drops: where the run went on)
        self._order_reported = False
        self._no_files_reported = False

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        if not isinstance(rec, dict):
            return
        self._records += 1
        if not self._order_reported and "step" in rec and next(iter(rec)) != "step":
            self.sink.add("RL202", "step is not the first key of the metrics line", line=line)
            self._order_reported = True
        s = rec.get("step")
        if type(s) is not int or s < 0:
            return
        if not rec.keys().isdisjoint(TRAINING_KEYS):
            if self._progress_mode is None:
                self._settle(True)
            self._train_line(s, line)
        elif self._progress_mode is None:
            self._held.append((s, line, is_summary_line(rec)))
            if len(self._held) >= self._MAX_HELD:
                self._settle(False)
        elif self._progress_mode:
            self._eval_line(s, line, is_summary_line(rec))
        else:
            self._train_line(s, line)

    def _settle(self, progress_mode: bool) -> None:
        self._progress_mode = progress_mode
        held, self._held = self._held, []
        for s, line, summary in held:
            if progress_mode:
                self._eval_line(s, line, summary)
            else:
                self._train_line(s, line)

    def finish(self) -> MetricsFacts:
        """Judge lines still held back (a file without progress keys) and return the facts."""
        if self._progress_mode is None:
            self._settle(False)
        self.facts.records = self._records
        self.facts.last_train_step = None if self._top < 0 else self._top
        if self.facts.records == 0 and not self.sink.items:
            self.sink.add("RL116", "metrics.jsonl holds no record yet (the run logged nothing)")
        return self.facts

    def _train_line(self, s: int, line: int) -> None:
        last = self._last
        if last is not None and s != last + 1:
            self._jump(s, last, line)
        self._last = s
        if s > self._top:
            self._top = s
        if s not in self.iterations:
            self._files(s, line)

    def _eval_line(self, s: int, line: int, summary: bool = False) -> None:
        last = self._last
        what = "summary row (cost/token totals only)" if summary else "eval-only line"
        if last is None or s <= last + 1:
            where = "before any training line" if last is None else (
                "one past the last training step" if s == last + 1 else
                f"repeating step {s} (last training step {last})")
            why = "a final cost/summary row" if summary else "an async eval line"
            self.sink.add("RL407", f"{what} at step {s} {where}: {why}", line=line,
                          pointer="/step")
        else:
            self.sink.add("RL408", f"{what} at step {s} jumps past the last training step "
                                   f"{last} + 1", line=line, pointer="/step")

    def _jump(self, s: int, last: int, line: int) -> None:
        what = ("repeats" if s == last else "drops back from" if s < last else "jumps from")
        if s == last and self._progress_mode is False:  # no training key in the whole file
            self.sink.add("RL407", f"step {s} repeats: several lines for one step, as an "
                                   "eval-only run logs one per evaluator", line=line,
                          pointer="/step")
        elif s in self.restart and s <= last:
            self.sink.add("RL407", f"step {s} {what} step {last}: a resume from the checkpoint at "
                                   f"batch {s} logs these iterations again", line=line,
                          pointer="/step")
        elif s in self.restart and s == last + 2:  # one lost line, never a re-log
            self.sink.add("RL407", f"step {s} jumps from step {last}: step {last + 1} was never "
                                   f"logged, as when a crash comes between the checkpoint at "
                                   f"batch {s} and step {last + 1}'s metrics line and the run "
                                   f"resumes from that checkpoint", line=line, pointer="/step")
        elif s > last:
            gap = (f"step {last + 1} was" if s == last + 2 else
                   f"steps {last + 1} to {s - 1} were")
            self.sink.add("RL408", f"step {s} jumps from step {last} (expected {last + 1}): "
                                   f"{gap} never logged", line=line, pointer="/step")
        else:
            self.sink.add("RL408", f"step {s} {what} step {last} (expected {last + 1}); no "
                                   f"checkpoint restarts at {s}", line=line, pointer="/step")

    def _files(self, s: int, line: int) -> None:
        """RL412: training step ``s`` has no per-iteration files."""
        if self.iterations:
            self.sink.add("RL412", f"iteration {s} is in metrics but has no per-iteration files "
                                   "(logging can be off)", line=line, pointer="/step")
        elif not self._no_files_reported:
            self.sink.add("RL412", "the run has no per-iteration files at all (logtree and rollout "
                                   "logging off?)", line=line, pointer="/step")
            self._no_files_reported = True
