"""What the run report reads from a run: metrics columns, checkpoints, resume point, validation,
and per iteration its rollout summaries, logtree document and who wrote its page.

The run is read only through ``rlio.storage`` (any backend) and the tolerant JSONL decoder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from rlio import layout
from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_LINE, ForwardLines
from rlio.errors import ResumeError
from rlio.findings import Report
from rlio.logtree.iteration_page import Trajectory, trajectory
from rlio.report.columns import FileStats, MetricsScan
from rlio.report.usual import PER_FAMILY, usual_rank
from rlio.resume import read_resume_state
from rlio.storage.base import Storage
from rlio.validate import validate_run
from rlio.validate.checks.registry import RecordChecks
from rlio.validate.scan import Sink

#: Findings of a line that is no record: not UTF-8, not JSON, too deep, too long.
_BAD_LINE_CODES: Final = ("RL101", "RL102", "RL106", "RL114")
#: A logtree document larger than this is not re-rendered (its producer's page is linked).
MAX_LOGTREE_BYTES = 64 * 1024 * 1024


def _iter_jsonl(storage: Storage, rel: str, stats: FileStats) -> Iterator[dict[str, Any]]:
    """The objects of a JSONL file, streamed; blank, bad, too long and torn lines are counted and
    skipped. A symlink is never followed and an unreadable file ends the stream; both are noted.
    """
    entry = storage.stat(rel)
    if entry is None:
        return
    if entry.kind != "file":
        stats.error = f"{rel} is a {entry.kind}, not a file: not read"
        return
    try:
        with storage.open_read(rel) as f:
            for number, raw, terminated in ForwardLines(f, max_line=MAX_LINE):
                stats.lines = number
                if raw is None:
                    stats.bad += 1  # too long to read: skipped like an unparseable line
                    continue
                if not terminated:
                    stats.torn = True  # what a crash leaves: readers ignore it (docs/format.md §2)
                    return
                if not raw.strip():
                    stats.blank += 1
                    continue
                try:
                    value, had_nonfinite = decode(raw)
                except DecodeError:
                    value = None
                if not isinstance(value, dict):
                    stats.bad += 1
                    continue
                stats.nonfinite_lines += had_nonfinite
                yield value
    except OSError as exc:
        stats.error = f"{rel} could not be read past line {stats.lines}: {exc}"


def read_metrics(storage: Storage, wanted: Sequence[str],
                 stand_in: Mapping[str, str] | None = None) -> MetricsScan:
    """The report's own pass over ``metrics.jsonl`` (without the validator): see
    ``MetricsScan`` for the x axis, the columns and ``stand_in``."""
    m = MetricsScan(wanted, stand_in, present=storage.stat(layout.METRICS) is not None,
                    usual=usual_rank, max_usual=PER_FAMILY)
    for rec in _iter_jsonl(storage, layout.METRICS, m.stats):
        m(rec)
    return m.close()


class _Observed:
    """A metrics file's record checks, each record also handed to the charts' reader."""

    def __init__(self, checks: RecordChecks, reader: MetricsScan,
                 done: Callable[[MetricsScan], None]) -> None:
        self.checks, self.reader, self.done = checks, reader, done

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        self.checks(rec, line, ok)
        self.reader(rec)

    def finish(self) -> Any:
        facts = self.checks.finish()
        self.done(self.reader.close())
        return facts


class MetricsObserver:
    """Reads the metrics columns from the validator's own parse of ``metrics.jsonl``.

    Passed to ``validate_run(..., observe=...)``, so each line is parsed once for both; the
    skipped-line counts come from the file's (uncapped) finding counts. ``scan`` is None unless
    the validator read the whole file.
    """

    def __init__(self, storage: Storage, wanted: Sequence[str],
                 stand_in: Mapping[str, str] | None = None) -> None:
        self.storage = storage
        self.wanted = wanted
        self.stand_in = stand_in
        self.scan: MetricsScan | None = None

    def __call__(self, kind: str, sink: Sink, checks: RecordChecks | None) -> RecordChecks | None:
        """The record hook the validator uses for one file of ``kind``."""
        if kind != "metrics" or checks is None:
            return checks
        return _Observed(checks, MetricsScan(self.wanted, self.stand_in, usual=usual_rank,
                                                    max_usual=PER_FAMILY),
                         lambda m: self._done(m, sink))

    def _done(self, m: MetricsScan, sink: Sink) -> None:
        """Keep the scan, with the skipped lines counted from the file's findings."""
        counts, st = sink.counts, m.stats
        st.blank = counts.get("RL105", 0)
        st.bad += sum(counts.get(c, 0) for c in _BAD_LINE_CODES)
        st.nonfinite_lines = sink.nonfinite_lines
        if counts.get("RL103"):  # a bad last line: torn only when it lacks its newline
            size = self.storage.size(layout.METRICS)
            if self.storage.read_range(layout.METRICS, max(0, size - 1), size) == b"\n":
                st.bad += 1
            else:
                st.torn = True
        self.scan = m


def validation(run: str, own: str | None, folder: str, observe: MetricsObserver) -> Report:
    """``validate_run(run)`` less what the report adds to the run: ``own`` (the page) and the
    pages under ``folder`` as unknown files (RL301), and the count of RL301 past the cap."""
    report = validate_run(run, observe=observe)
    prefix = folder + "/"
    pages = [f for f in report.findings if f.code == "RL301" and (f.file or "").startswith(prefix)]
    kept = [f for f in report.findings
            if f not in pages and not (f.code == "RL301" and f.file == own)
            and not (pages and f.code == "RL112" and "RL301" in f.message)]
    if len(kept) == len(report.findings):
        return report
    return Report.build(report.run, kept, layout=getattr(report, "layout", None))


@dataclass
class CheckpointScan:
    """The checkpoint ledger as read."""

    stats: FileStats = field(default_factory=FileStats)
    #: (1-based line, record, kind) with kind ``periodic``, ``rolling`` or ``final``.
    records: list[tuple[int, dict[str, Any], str]] = field(default_factory=list)
    present: bool = False


def read_checkpoints(storage: Storage) -> CheckpointScan:
    c = CheckpointScan(present=storage.stat(layout.CHECKPOINTS) is not None)
    for rec in _iter_jsonl(storage, layout.CHECKPOINTS, c.stats):
        if rec.get("name") == "final" or rec.get("final") is True:
            kind = "final"
        else:
            kind = "rolling" if rec.get("rolling") is True else "periodic"
        c.records.append((c.stats.lines, rec, kind))
    return c


@dataclass(frozen=True)
class ResumePoint:
    """Where a resume restarts, as a sentence, with ``describe()``'s detail when known."""

    line: int | None  # 1-based line of the resumable record in checkpoints.jsonl
    batch: int | None
    text: str
    detail: str = ""


def resume_point(run: str) -> ResumePoint | None:
    """Where a resume would restart (``read_resume_state``); a ledger it refuses is shown, not
    raised: the page reports ``cannot resume`` with the line."""
    try:
        state = read_resume_state(run)
    except Exception as exc:  # a ledger resume refuses (or cannot read) is shown, not raised
        line = exc.line if isinstance(exc, ResumeError) else None
        return ResumePoint(line, None, f"cannot resume: {exc}")
    if state is None:
        return None
    batch = state.next_batch
    where = f"batch {batch}" if batch is not None else "an unknown batch (the record has none)"
    text = (f"restart at {where} from checkpoint {state.checkpoint.get('name')!s} "
            f"(checkpoints.jsonl line {state.line})")
    return ResumePoint(state.line, batch, text, state.describe())


def read_trajectories(storage: Storage, rel: str | None, split: str,
                      iteration: int) -> list[Trajectory] | None:
    """The rows of one rollout summaries file in file order; None when there is no such file."""
    if rel is None:
        return None
    stats = FileStats()
    rows = [trajectory(rec, split, iteration) for rec in _iter_jsonl(storage, rel, stats)]
    return rows if stats.error is None else None


def read_logtree(storage: Storage, rel: str | None) -> dict[str, Any] | None:
    """The logtree JSON document, or None when absent, too large, unreadable or not an object."""
    if rel is None or (entry := storage.stat(rel)) is None or entry.kind != "file" \
            or entry.size > MAX_LOGTREE_BYTES:
        return None
    try:
        doc = orjson.loads(storage.read_range(rel, 0, entry.size))
    except (orjson.JSONDecodeError, OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def written_by_rlio(storage: Storage, rel: str) -> bool:
    """Whether the HTML page at ``rel`` is rlio's own (its head names rlio as the generator)."""
    try:
        return b'<meta name="generator" content="rlio' in storage.read_range(rel, 0, 2048)
    except OSError:
        return False
