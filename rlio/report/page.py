"""The run report's view models (metrics, checkpoints, validation) and the page around them.

The page is ``report.html.j2``; every string from the run (metric names, checkpoint fields,
finding messages, file names, config text) is escaped there. Links come from the caller as
relative paths or URIs of the run's own storage, percent-encoded, so no ``javascript:`` link can
be formed. The document carries a
Content-Security-Policy that forbids script and every request; it needs neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlio._version import __version__
from rlio.findings import COUNT_LABELS, Finding, Report
from rlio.report import svg as _svg
from rlio.report.columns import MetricsScan
from rlio.report.reading import CheckpointScan, ResumePoint
from rlio.report.style import CSS
from rlio.templating import render

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'")
#: The validation table lists at most this many findings (most severe first).
MAX_FINDINGS = 200
#: The checkpoint table lists at most this many records (the newest).
MAX_CHECKPOINT_ROWS = 200
_MAX_KEYS = 2000


@dataclass(frozen=True, slots=True)
class ChartCard:
    """One metric's chart with its caption facts (``stats`` None: no finite value drawn)."""

    key: str
    chart: _svg.LineChart
    stats: str | None
    missing: bool
    downsampled: int
    skipped: int


@dataclass(frozen=True, slots=True)
class MetricsView:
    """The metrics section: notes on skipped lines, the charts, the other keys."""

    present: bool
    notes: list[str] = field(default_factory=list)
    charts: list[ChartCard] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    max_points: int = _svg.MAX_POINTS


def _chart(m: MetricsScan, key: str, index: int) -> ChartCard:
    col = m.columns.get(key)
    xs, ys = col.points() if col else ([], [])
    total = col.total if col else 0
    stats = None
    if xs:
        stats = (f"last {_svg.fmt(ys[-1])} at {m.axes.get(key, m.x_label)} {_svg.fmt(xs[-1])} · "
                 f"min {_svg.fmt(min(ys))} · max {_svg.fmt(max(ys))} · {total:,} points")
    axis = m.axes.get(key)  # an async-eval alias has its own x axis (no resume marks there)
    series = _svg.Series(key, xs, ys, total, () if axis else tuple(m.restarts))
    chart = _svg.line_view(series, x_label=axis or m.x_label, chart_id=f"chart-{index}")
    return ChartCard(key, chart, stats, col is None, total if total > _svg.MAX_POINTS else 0,
                     col.skipped if col is not None else 0)


def metrics_view(m: MetricsScan, keys: Sequence[str]) -> MetricsView:
    """The charts of ``keys`` against the run's x axis, with notes on what was skipped."""
    if not m.present:
        return MetricsView(False)
    notes = m.stats.notes()
    if m.restarts:
        shown = ", ".join(_svg.fmt(r) for r in m.restarts[:10])
        more = f" and {len(m.restarts) - 10:,} more" if len(m.restarts) > 10 else ""
        notes.append(f"{m.x_label} drops back to {shown}{more} (a resume logs steps again; "
                     "the latest value of a repeated step is drawn)")
    charted = set(keys)
    others = [k for k in m.keys if k != "step" and k not in charted]
    return MetricsView(True, notes, [_chart(m, k, i) for i, k in enumerate(keys)],
                       others[:_MAX_KEYS])


@dataclass(frozen=True, slots=True)
class CheckpointsView:
    """The checkpoints section: counts by kind, the resume point, the timeline, the records."""

    present: bool
    counts: dict[str, int]
    records: int
    resume: ResumePoint | None
    notes: list[str]
    timeline: _svg.Timeline | None
    rows: list[tuple[list[str], bool]]  # cells, is the resume record


def checkpoints_view(c: CheckpointScan, resume: ResumePoint | None,
                     x_max: float) -> CheckpointsView:
    """Counts by kind, the resume point, the timeline and the newest records."""
    counts = {"periodic": 0, "rolling": 0, "final": 0}
    marks: list[_svg.Mark] = []
    for _line, rec, kind in c.records:
        counts[kind] += 1
        batch = rec.get("batch")
        if type(batch) is int:
            marks.append(_svg.Mark(float(batch), kind, f"{rec.get('name')!s} ({kind}), batch "
                                   f"{batch}"))
    if resume is not None and resume.batch is not None:
        marks.append(_svg.Mark(float(resume.batch), "resume", resume.text))
    rows = []
    for line, rec, kind in c.records[-MAX_CHECKPOINT_ROWS:]:
        cells = [line, rec.get("name"), kind, rec.get("batch"), rec.get("epoch"),
                 rec.get("state_path"), rec.get("sampler_path")]
        rows.append(([("" if v is None else str(v)) for v in cells],
                     resume is not None and resume.line == line))
    return CheckpointsView(c.present, counts, len(c.records), resume, c.stats.notes(),
                           _svg.timeline_view(marks, x_max=x_max) if marks else None, rows)


@dataclass(frozen=True, slots=True)
class FindingRow:
    """One finding as the validation table shows it."""

    severity: str
    code: str
    where: str
    message: str


@dataclass(frozen=True, slots=True)
class ValidationView:
    """The validator's verdict (``error``: why it could not run)."""

    error: str | None = None
    ok: bool = True
    counts: list[tuple[str, int, str]] = field(default_factory=list)  # severity, count, label
    total: int = 0
    findings: list[FindingRow] = field(default_factory=list)


def _finding_row(f: Finding) -> FindingRow:
    where = (f.file or ".") + (f":{f.line}" if f.line is not None else "")
    where += f" {f.pointer}" if f.pointer else ""
    return FindingRow(str(f.severity), f.code, where, f.message)


def validation_view(report: Report | str) -> ValidationView:
    """The validator's verdict, counts and findings (most severe first, capped), or why it could
    not run."""
    if isinstance(report, str):
        return ValidationView(error=report)
    counts = report.counts
    findings = sorted(report.findings, key=lambda f: -int(f.severity))
    rows = [(sev, counts[sev], label) for sev, label in COUNT_LABELS]
    return ValidationView(None, report.ok, rows, len(findings),
        [_finding_row(f) for f in findings[:MAX_FINDINGS]])


def render_report(name: str, facts: Sequence[tuple[str, str]], config: tuple[str, bool] | None,
                  sections: Mapping[str, Any]) -> str:
    """The whole page: head (CSP, inline CSS), the run's facts and config, then the sections'
    view models (``report.html.j2``)."""
    return render("report.html.j2", title=f"Run report: {name}", name=name, facts=facts,
                  config=config, csp=CSP, css=CSS, generator=f"rlio {__version__}",
                  version=__version__, write_id=None, s=sections,
                  max_findings=MAX_FINDINGS)
