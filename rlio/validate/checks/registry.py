"""The validator's checks, declared in one place: what runs for each file kind, and in which order.

A file kind's row in ``rlio.layout.FILE_KINDS`` says how its files are read (JSONL, a JSON
document, HTML, text) and which schema judges them; ``KIND_CHECKS`` adds the checks beyond the
schema. The engine (``rlio.validate.engine``) drives them: it streams the file, hands each record
(or the document) to the kind's checks with a sink that knows the file, and stores the facts a
kind's record checks return on the ``RunView`` under ``facts``. ``RUN_ORDER`` declares which
kinds are read first, because later checks read their facts; the cross-file checks
(``CROSS_FILE_CHECKS``) run last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, Protocol, TypeAlias

from rlio._record import FrozenRecord
from rlio.layout import RunPath
from rlio.validate.checks.checkpoints import CheckpointChecks
from rlio.validate.checks.cross_file import CROSS_FILE_CHECKS, CrossFileCheck
from rlio.validate.checks.logtree import logtree_checks
from rlio.validate.checks.logtree_pieces import judge_in_pieces
from rlio.validate.checks.metrics import MetricsChecks
from rlio.validate.checks.view import RunView
from rlio.validate.scan import Sink


class RecordChecks(Protocol):
    """The per-record checks of one file: called for every decoded record, then finished."""

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        """Judge one record (``ok``: its schema verdict)."""

    def finish(self) -> Any:
        """Judge what only the whole file shows; return the file's facts (or None)."""


#: ``(sink, path, view)`` -> the record checks of one file.
RecordChecksFactory = Callable[[Sink, RunPath, RunView], RecordChecks]
#: ``(document, sink, path)``: the checks of one parsed JSON document.
DocumentCheck: TypeAlias = Callable[[Any, Sink, RunPath], None]
#: ``(raw bytes, sink, path)``: the schema and document checks of a large document in bounded
#: memory; False (nothing added) when it must be parsed whole (``check_document``, ``document``).
LargeDocumentCheck: TypeAlias = Callable[[bytes, Sink, RunPath], bool]


class KindChecks(FrozenRecord):
    """The checks of one file kind beyond its schema.

    Attributes:
        records: builds the per-record checks of one JSONL file.
        document: checks one parsed JSON document.
        large_document: judges a large document without holding all of it parsed.
        facts: the ``RunView`` attribute that receives what ``records(...).finish()`` returns.
        ranged: scanned by byte ranges, split across processes when very large
            (``rlio.validate.parallel`` runs the rollout checks).
        chart: an HTML chart written by plotting libraries: only its end is checked.
    """

    __slots__ = _fields = ("records", "document", "large_document", "facts", "ranged", "chart")

    records: RecordChecksFactory | None
    document: DocumentCheck | None
    large_document: LargeDocumentCheck | None
    facts: Literal["checkpoints", "metrics"] | None
    ranged: bool
    chart: bool

    def __init__(self, records: RecordChecksFactory | None = None,
                 document: DocumentCheck | None = None,
                 large_document: LargeDocumentCheck | None = None,
                 facts: Literal["checkpoints", "metrics"] | None = None, ranged: bool = False,
                 chart: bool = False) -> None:
        self._set(records=records, document=document, large_document=large_document,
                  facts=facts, ranged=ranged, chart=chart)


def _checkpoints(sink: Sink, rp: RunPath, view: RunView) -> RecordChecks:
    return CheckpointChecks(sink)


def _metrics(sink: Sink, rp: RunPath, view: RunView) -> RecordChecks:
    return MetricsChecks(sink, view)


#: Checks per file kind (``layout.RunPath.kind``); kinds not listed get their schema only.
KIND_CHECKS: Final[dict[str, KindChecks]] = {
    "checkpoints": KindChecks(records=_checkpoints, facts="checkpoints"),
    "metrics": KindChecks(records=_metrics, facts="metrics"),
    "logtree": KindChecks(document=logtree_checks, large_document=judge_in_pieces),
    "rollout_summaries": KindChecks(ranged=True),
    "timing_gantt": KindChecks(chart=True),
}

#: No checks beyond the schema.
NO_CHECKS: Final = KindChecks()

#: Kinds read before every other file, in this order: metrics.jsonl judges a step that drops
#: back by the restart steps of the checkpoint ledger.
RUN_ORDER: Final[tuple[str, ...]] = ("checkpoints", "metrics")

__all__ = ["CROSS_FILE_CHECKS", "KIND_CHECKS", "NO_CHECKS", "RUN_ORDER", "CrossFileCheck",
           "DocumentCheck", "KindChecks", "LargeDocumentCheck", "RecordChecks",
           "RecordChecksFactory"]
