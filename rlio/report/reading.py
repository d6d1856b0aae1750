"""What the run report reads from a run: metrics columns, checkpoints, pages, resume point.

The run is read only through ``rlio.storage`` (any backend) and the tolerant JSONL decoder.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlio import layout
from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_LINE, ForwardLines
from rlio.errors import ResumeError
from rlio.findings import Report
from rlio.resume import read_resume_state
from rlio.rules import TRAINING_KEYS
from rlio.storage.base import Storage
from rlio.validate import validate_run

EVAL_REWARD_SUFFIX = "/env/all/reward/total"
_MAX_EVAL_CHARTS = 8


@dataclass
class FileStats:
    """What reading one JSONL file skipped, to say so on the page."""

    lines: int = 0
    blank: int = 0
    bad: int = 0
    nonfinite_lines: int = 0
    torn: bool = False
    error: str | None = None

    def notes(self) -> list[str]:
        """One sentence per kind of problem met."""
        out = [] if self.error is None else [self.error]
        if self.torn:
            out.append("the last line is torn (no final newline): ignored")
        if self.bad:
            out.append(f"{self.bad:,} line(s) are not JSON objects: skipped")
        if self.blank:
            out.append(f"{self.blank:,} blank line(s)")
        if self.nonfinite_lines:
            out.append(f"{self.nonfinite_lines:,} line(s) hold NaN/Infinity tokens")
        return out


def _iter_jsonl(storage: Storage, rel: str, stats: FileStats) -> Iterator[dict[str, Any]]:
    """The objects of a JSONL file, streamed; blank, bad, too long and torn lines are counted,
    skipped.

    A symlink is never followed and an unreadable file ends the stream; both are noted.
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
                    stats.bad += 1
                    continue
                if not isinstance(value, dict):
                    stats.bad += 1
                    continue
                stats.nonfinite_lines += had_nonfinite
                yield value
    except OSError as exc:
        stats.error = f"{rel} could not be read past line {stats.lines}: {exc}"


@dataclass
class Column:
    """One metric's points in file order (compact arrays: a million lines stay cheap)."""

    xs: array[float] = field(default_factory=lambda: array("d"))
    ys: array[float] = field(default_factory=lambda: array("d"))
    ordered: bool = True
    skipped: int = 0  # null, NaN or infinite values

    def add(self, x: float, y: float) -> None:
        """Append a point, noting when x stops increasing."""
        if self.ordered and self.xs and x <= self.xs[-1]:
            self.ordered = False
        self.xs.append(x)
        self.ys.append(y)

    def points(self) -> tuple[list[float], list[float]]:
        """Points in x order; where an x repeats (a resume logs steps again) the last one wins."""
        if self.ordered:
            return list(self.xs), list(self.ys)
        order = sorted(range(len(self.xs)), key=lambda i: (self.xs[i], i))
        xs: list[float] = []
        ys: list[float] = []
        for i in order:
            if xs and xs[-1] == self.xs[i]:
                ys[-1] = self.ys[i]
            else:
                xs.append(self.xs[i])
                ys.append(self.ys[i])
        return xs, ys


@dataclass
class MetricsScan:
    """What one pass over ``metrics.jsonl`` found."""

    stats: FileStats = field(default_factory=FileStats)
    columns: dict[str, Column] = field(default_factory=dict)
    keys: dict[str, None] = field(default_factory=dict)  # every key seen, in first-seen order
    records: int = 0
    x_label: str = "line"
    last_x: float | None = None
    restarts: list[float] = field(default_factory=list)  # where training lines' x dropped back
    present: bool = False


def _number(v: Any) -> float | None:
    if type(v) is float or type(v) is int:  # bool is not a metric value
        return float(v)
    return None


_X_KEYS = ("step", "progress/batch", "training_client/step")


def read_metrics(storage: Storage, wanted: Sequence[str]) -> MetricsScan:
    """Stream ``metrics.jsonl`` once, keeping only the wanted (and eval reward) columns.

    x is ``step``, else ``progress/batch``, else ``training_client/step``, else the record's
    index. Evaluator reward keys (``<name>/env/all/reward/total``) are charted as they appear.
    """
    m = MetricsScan(present=storage.stat(layout.METRICS) is not None)
    want = dict.fromkeys(wanted)
    evals = 0
    x_kind = len(_X_KEYS)
    last_train_x: float | None = None
    seen_progress = False
    for rec in _iter_jsonl(storage, layout.METRICS, m.stats):
        if not m.keys.keys() >= rec.keys():
            for k in rec:
                if k not in m.keys:
                    m.keys[k] = None
                    if (k.endswith(EVAL_REWARD_SUFFIX) and k not in want
                            and evals < _MAX_EVAL_CHARTS):
                        want[k] = None
                        evals += 1
        x: float | None = None
        for kind, name in enumerate(_X_KEYS):
            v = rec.get(name)
            if type(v) is int:
                x, x_kind = float(v), min(x_kind, kind)
                break
        if x is None:
            x = float(m.records)
        # Training lines carry a progress key (eval lines repeat a step; they don't resume); in a
        # file that has shown none (yet), every line counts as a training line, as the validator
        # reads it.
        progress = any(k in rec for k in TRAINING_KEYS)
        seen_progress = seen_progress or progress
        if progress or not seen_progress:
            if last_train_x is not None and x < last_train_x:
                m.restarts.append(x)
            last_train_x = x
        m.last_x = x if m.last_x is None else max(m.last_x, x)
        m.records += 1
        for k in want:
            if k not in rec:
                continue
            col = m.columns.get(k)
            if col is None:
                col = m.columns[k] = Column()
            y = _number(rec[k])
            if y is None or not math.isfinite(y):
                col.skipped += 1
            else:
                col.add(x, y)
    m.x_label = (*_X_KEYS, "line")[x_kind]
    return m


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
        c.records.append((c.stats.lines, rec, checkpoint_kind(rec)))
    return c


def checkpoint_kind(rec: dict[str, Any]) -> str:
    """``final`` (named ``final``), ``rolling`` (``rolling: true``) or ``periodic``."""
    if rec.get("name") == "final" or rec.get("final") is True:
        return "final"
    return "rolling" if rec.get("rolling") is True else "periodic"


@dataclass(frozen=True)
class ResumePoint:
    """Where a resume restarts, as a sentence, with ``describe()``'s detail when known."""

    line: int | None  # 1-based line of the resumable record in checkpoints.jsonl
    batch: int | None
    text: str
    detail: str = ""


def _resume_text(name: Any, batch: int | None, line: int | None) -> str:
    where = f"batch {batch}" if batch is not None else "an unknown batch (the record has none)"
    return f"restart at {where} from checkpoint {name!s} (checkpoints.jsonl line {line})"


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
    name = state.checkpoint.get("name")
    return ResumePoint(state.line, state.next_batch,
                       _resume_text(name, state.next_batch, state.line), state.describe())


@dataclass
class PageIndex:
    """Per-iteration pages found in the run, by split: {split: {iteration: path}}."""

    splits: dict[str, dict[int, str]] = field(default_factory=dict)
    layout: str | None = None
    files: int = 0


def find_pages(storage: Storage) -> PageIndex:
    pages = PageIndex()
    json_only: dict[str, dict[int, str]] = {}
    paths = []
    for entry in storage.walk():
        if entry.kind != "file":
            continue
        pages.files += 1
        rp = layout.parse_path(entry.path)
        if rp.iteration is None:
            continue
        paths.append(entry.path)
        if rp.kind == "html":
            pages.splits.setdefault(rp.split, {})[rp.iteration] = entry.path
        elif rp.kind == "logtree":
            json_only.setdefault(rp.split, {})[rp.iteration] = entry.path
        elif rp.kind == "timing_gantt":
            pages.splits.setdefault("timing", {})[rp.iteration] = entry.path
    for split, its in json_only.items():  # link the JSON twin where no HTML was written
        have = pages.splits.setdefault(split, {})
        for it, path in its.items():
            have.setdefault(it, path)
    pages.layout = layout.detect_layout(paths)
    return pages


def validation(run: str, own: str | None) -> Report:
    """``validate_run(run)``, less the one finding the report causes: itself as an unknown file."""
    report = validate_run(run)
    mine = [f for f in report.findings if f.file == own and f.code == "RL301"]
    if not mine:
        return report
    kept = [f for f in report.findings if f not in mine]
    return Report.build(report.run, kept, layout=getattr(report, "layout", None))
