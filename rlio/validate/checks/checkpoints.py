"""Record checks of ``checkpoints.jsonl`` (docs/format.md §5): RL501, key order; ledger facts."""

from __future__ import annotations

from typing import Any, Final

from rlio.rules import RESUME_KEY, resume_problem
from rlio.schema import record_schema
from rlio.validate.checks.key_order import order_message
from rlio.validate.checks.view import CheckpointFacts
from rlio.validate.scan import Sink, short


class CheckpointChecks:
    """Per-record checks of ``checkpoints.jsonl`` (RL501, key order); gathers the facts."""

    _MAX_KEPT: Final = 100_000

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.facts = CheckpointFacts()
        # the documented key order, read from the schema that owns it
        self._order: tuple[str, ...] | None = record_schema("checkpoint-line").keys

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        if not isinstance(rec, dict):
            return
        self.facts.records += 1
        if self._order is not None:
            documented = [k for k in rec if k in self._order]
            expected = [k for k in self._order if k in rec]
            # the cookbook's SL loop writes epoch before batch: tolerated
            swapped = ["batch" if k == "epoch" else "epoch" if k == "batch" else k
                       for k in documented]
            if documented != expected and swapped != expected:
                self.sink.add("RL202", order_message(documented, expected), line=line)
                self._order = None
        if rec.get(RESUME_KEY) is None:
            return
        batch = rec.get("batch")
        problem = resume_problem(rec)
        if problem is not None:
            self.sink.add("RL501", f"resumable checkpoint {short(rec.get('name'))} {problem}; "
                                   "the cookbook's resume crashes on it", line=line)
        elif type(batch) is int and len(self.facts.resumable) < self._MAX_KEPT:
            self.facts.resumable.append((line, batch))
            self.facts.restart_steps.add(batch)
        name = rec.get("name")
        if isinstance(name, str) and name.isascii() and name.isdigit() and len(name) < 19:
            self.facts.restart_steps.add(int(name))
        step = rec.get("step")
        if type(step) is int:
            self.facts.restart_steps.add(step)

    def finish(self) -> CheckpointFacts:
        """The ledger's facts, once every record was seen."""
        return self.facts
