"""Record checks of the cookbook's token-capture files (docs/format.md §8): RL308.

``capture/<kind>.jsonl`` holds the records of one kind (0.6.1's ``JsonlFileSink`` routes each
record by its ``kind``), so a record of another kind in it is misfiled: a reader of the file
(``open_run(...).captures(kind)``, the ``captures`` view) would take it for one of that kind.
"""

from __future__ import annotations

from typing import Any

from rlio.layout import RunPath, capture_kind
from rlio.validate.scan import Sink, short


class CaptureChecks:
    """Per-record checks of one capture file: each record's ``kind`` names its file (RL308)."""

    def __init__(self, sink: Sink, rp: RunPath) -> None:
        self.sink = sink
        self.kind = capture_kind(rp.path)

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        if not isinstance(rec, dict) or self.kind is None:
            return
        kind = rec.get("kind")
        if isinstance(kind, str) and kind != self.kind and not self.sink.full("RL308"):
            self.sink.add("RL308", f"record of kind {short(kind)} in the file of kind "
                                   f"{self.kind!r} (capture/<kind>.jsonl holds one kind)",
                          line=line, pointer="/kind")

    def finish(self) -> None:
        """Nothing to judge over the whole file."""
        return None
