"""The validator's checks, declared in one place: what runs for each file kind, and in which order.

A file kind's row in ``rlio.layout.FILE_KINDS`` says how its files are read (JSONL, a JSON
document, HTML, text) and which schema judges them; ``KIND_CHECKS`` adds the checks beyond the
schema, which the engine (``rlio.validate.engine``) runs with a sink that knows the file, storing
what a kind's record checks return on the ``RunView`` under ``facts``. ``RUN_ORDER`` declares
which kinds are read first, because later checks read their facts; the cross-file checks
(``rlio.validate.checks.cross_file``) run last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, NamedTuple, Protocol

from rlio.layout import CAPTURE_KINDS, RunPath
from rlio.validate.checks.captures import CaptureChecks
from rlio.validate.checks.checkpoints import CheckpointChecks
from rlio.validate.checks.logtree import logtree_checks
from rlio.validate.checks.logtree_pieces import judge_in_pieces
from rlio.validate.checks.metrics import MetricsChecks
from rlio.validate.checks.timing_steps import TimingChecks
from rlio.validate.checks.view import RunView
from rlio.validate.scan import Sink


class RecordChecks(Protocol):
    """The per-record checks of one file: called for every decoded record, then finished."""

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        """Judge one record (``ok``: its schema verdict)."""

    def finish(self) -> Any:
        """Judge what only the whole file shows; return the file's facts (or None)."""


class KindChecks(NamedTuple):
    """The checks of one file kind beyond its schema.

    Attributes:
        records: ``(sink, path, view)`` -> the per-record checks of one JSONL file.
        document: ``(document, sink, path)``: checks one parsed JSON document.
        large_document: ``(raw bytes, sink, path)``: judges a large document without holding
            all of it parsed; False (nothing added) when it must be parsed whole.
        facts: the ``RunView`` attribute that receives what ``records(...).finish()`` returns.
        ranged: scanned by byte ranges, split across processes when very large
            (``rlio.validate.parallel`` runs the rollout checks).
        chart: an HTML chart written by plotting libraries: only its end is checked.
    """

    records: Callable[[Sink, RunPath, RunView], RecordChecks] | None = None
    document: Callable[[Any, Sink, RunPath], None] | None = None
    large_document: Callable[[bytes, Sink, RunPath], bool] | None = None
    facts: Literal["checkpoints", "metrics"] | None = None
    ranged: bool = False
    chart: bool = False


#: Checks per file kind (``layout.RunPath.kind``); kinds not listed get their schema only.
KIND_CHECKS: Final[dict[str, KindChecks]] = {
    "checkpoints": KindChecks(records=lambda sink, rp, view: CheckpointChecks(sink),
                              facts="checkpoints"),
    "metrics": KindChecks(records=lambda sink, rp, view: MetricsChecks(sink, view),
                          facts="metrics"),
    "logtree": KindChecks(document=logtree_checks, large_document=judge_in_pieces),
    "rollout_summaries": KindChecks(ranged=True),
    "timing_gantt": KindChecks(chart=True),
    **{kind: KindChecks(records=lambda sink, rp, view: CaptureChecks(sink, rp))
       for kind in ("capture", *CAPTURE_KINDS.values())},
    "timing_spans": KindChecks(records=lambda sink, rp, view: TimingChecks(sink)),
}

#: No checks beyond the schema.
NO_CHECKS: Final = KindChecks()

#: Kinds read before every other file, in this order: metrics.jsonl judges a step that drops
#: back by the restart steps of the checkpoint ledger.
RUN_ORDER: Final[tuple[str, ...]] = ("checkpoints", "metrics")
