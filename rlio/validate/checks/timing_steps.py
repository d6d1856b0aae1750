"""Record checks of ``timing_spans.jsonl`` (docs/format.md §8): a step's spans logged twice."""

from __future__ import annotations

from typing import Any, Final

from rlio.validate.scan import Sink


class TimingChecks:
    """RL415: a line whose ``step`` an earlier line of the file already has (the spans of a
    step logged again after a resume that did not move the first ones aside)."""

    #: Steps remembered; past this many distinct steps, new ones are not followed.
    _MAX_KEPT: Final = 1_000_000

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self._first: dict[int, int] = {}

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        step = rec.get("step") if isinstance(rec, dict) else None
        if type(step) is not int:
            return
        first = self._first.get(step)
        if first is not None:
            self.sink.add("RL415", f"step {step} repeats line {first}: its spans are in the file "
                                   "twice (a resume that did not supersede them)", line=line,
                          pointer="/step")
        elif len(self._first) < self._MAX_KEPT:
            self._first[step] = line

    def finish(self) -> None:
        """Nothing to judge at the end of the file."""
