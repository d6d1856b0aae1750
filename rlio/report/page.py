"""The run report's HTML: its sections around the SVG charts, and the document around them.

Every string from the run (metric names, checkpoint fields, finding messages, file names, config
text) is escaped here. Links come from the caller as relative paths or URIs of the run's own
storage, percent-encoded, so no ``javascript:`` link can be formed. The document carries a
Content-Security-Policy that forbids script and every request; it needs neither.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from itertools import repeat
from typing import Any

from rlio._version import __version__
from rlio.findings import Finding, Report
from rlio.report import svg as _svg
from rlio.report.columns import MetricsScan
from rlio.report.reading import CheckpointScan, ResumePoint
from rlio.report.style import CSS

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'")
#: The validation table lists at most this many findings (most severe first).
MAX_FINDINGS = 200
#: The checkpoint table lists at most this many records (the newest).
MAX_CHECKPOINT_ROWS = 200
_MAX_KEYS = 2000


def section(sid: str, title: str, body: str) -> str:
    """One section of the page (``title`` and ``body`` are markup)."""
    return f'<section id="{sid}"><h2>{title}</h2>{body}</section>'


def table(cls: str, heads: Sequence[str], rows: Iterable[str]) -> str:
    """A scrolling table of ``rows`` (each a ``<tr>``) under the column names ``heads``."""
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>'
            + "".join(f"<th>{h}</th>" for h in heads) + "</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table></div>")


def _notes(notes: Sequence[str]) -> str:
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


def _chart(m: MetricsScan, key: str, index: int) -> str:
    col = m.columns.get(key)
    xs, ys = col.points() if col else ([], [])
    total = col.total if col else 0
    caption = [f"<h3>{escape(key)}</h3>"]
    if xs:
        caption.append(
            f'<p class="stats">last {escape(_svg.fmt(ys[-1]))} at '
            f"{escape(m.axes.get(key, m.x_label))} {escape(_svg.fmt(xs[-1]))} · min "
            f"{escape(_svg.fmt(min(ys)))} · max {escape(_svg.fmt(max(ys)))} · {total:,} "
            "points</p>")
    elif col is None:
        caption.append('<p class="stats">not logged in this run</p>')
    if total > _svg.MAX_POINTS:
        caption.append(f'<p class="ds">downsampled: {total:,} points drawn as at most '
                       f"{_svg.MAX_POINTS:,} (the min and max of each bucket)</p>")
    if col is not None and col.skipped:
        caption.append(f'<p class="ds">{col.skipped:,} null or non-finite value(s) not drawn</p>')
    axis = m.axes.get(key)  # an async-eval alias has its own x axis (no resume marks there)
    series = _svg.Series(key, xs, ys, total, () if axis else tuple(m.restarts))
    svg = _svg.line_chart(series, x_label=axis or m.x_label, chart_id=f"chart-{index}")
    return (f'<figure class="card chart-card" data-metric="{escape(key)}">'
            f'<figcaption>{"".join(caption)}</figcaption>{svg}</figure>')


def section_metrics(m: MetricsScan, keys: Sequence[str]) -> str:
    """The charts of ``keys`` against the run's x axis, with notes on what was skipped."""
    if not m.present:
        return section("metrics", "Metrics", '<p class="note">This run has no metrics.jsonl.</p>')
    notes = m.stats.notes()
    if m.restarts:
        shown = ", ".join(_svg.fmt(r) for r in m.restarts[:10])
        more = f" and {len(m.restarts) - 10:,} more" if len(m.restarts) > 10 else ""
        notes.append(f"{m.x_label} drops back to {shown}{more} (a resume logs steps again; "
                     "the latest value of a repeated step is drawn)")
    out = [_notes(notes), '<div class="charts">', *(_chart(m, k, i) for i, k in enumerate(keys)),
           "</div>"]
    charted = set(keys)
    names = [k for k in m.keys if k != "step" and k not in charted]
    if names:
        out.append(f"<details><summary>{len(names):,} other metric keys (chart any with "
                   "<code>rlio report RUN --metric KEY</code>)</summary><p class=\"keys\">"
                   + " ".join(f"<code>{escape(k)}</code>" for k in names[:_MAX_KEYS])
                   + "</p></details>")
    return section("metrics", "Metrics", "".join(out))


def section_checkpoints(c: CheckpointScan, resume: ResumePoint | None, x_max: float) -> str:
    """Counts by kind, the resume point, the timeline and the newest records as a table."""
    out = [] if c.present else ['<p class="note">No checkpoints.jsonl: no checkpoint was saved.'
                                '</p>']
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
    out.append(f'<p class="summary" data-periodic="{counts["periodic"]}" '
               f'data-rolling="{counts["rolling"]}" data-final="{counts["final"]}">'
               f"{len(c.records):,} checkpoint record(s): {counts['periodic']:,} periodic, "
               f"{counts['rolling']:,} rolling, {counts['final']:,} final</p>")
    text = resume.text if resume else "no resumable checkpoint: a restart begins at iteration 0"
    out.append(f'<p class="resume"><strong>Resume point:</strong> {escape(text)}</p>')
    if resume is not None and resume.detail:
        out.append('<details class="resume-detail"><summary>What a resume supersedes</summary>'
                   f"<pre>{escape(resume.detail)}</pre></details>")
    out.append(_notes(c.stats.notes()))
    if marks:
        out.append('<div class="card">' + _svg.timeline(marks, x_max=x_max)
                   + '<p class="legend"><span class="lg-periodic">● periodic</span> '
                   '<span class="lg-rolling">| rolling</span> <span class="lg-final">◆ final'
                   '</span> <span class="lg-resume">┆ resume point</span></p></div>')
    rows = c.records[-MAX_CHECKPOINT_ROWS:]
    if len(c.records) > len(rows):
        out.append(f'<p class="note">Showing the last {len(rows):,} of '
                   f"{len(c.records):,} records.</p>")
    if rows:
        out.append(table("ckpts", ("line", "name", "kind", "batch", "epoch", "state_path",
                                   "sampler_path"), map(_checkpoint_row, rows, repeat(resume))))
    return section("checkpoints", "Checkpoints", "".join(out))


def _checkpoint_row(row: tuple[int, dict[str, Any], str], resume: ResumePoint | None) -> str:
    line, rec, kind = row
    cells = [line, rec.get("name"), kind, rec.get("batch"), rec.get("epoch"),
             rec.get("state_path"), rec.get("sampler_path")]
    tds = "".join(f"<td>{escape('' if v is None else str(v))}</td>" for v in cells)
    marked = resume is not None and resume.line == line
    return f'<tr class="is-resume">{tds}</tr>' if marked else f"<tr>{tds}</tr>"


def _finding_row(f: Finding) -> str:
    where = (f.file or ".") + (f":{f.line}" if f.line is not None else "")
    where += f" {f.pointer}" if f.pointer else ""
    sev = escape(str(f.severity))
    return (f'<tr class="sev-{sev}"><td>{sev}</td><td>{escape(f.code)}</td>'
            f"<td><code>{escape(where)}</code></td><td>{escape(f.message)}</td></tr>")


def section_validation(report: Report | str) -> str:
    """The validator's verdict, counts and findings (most severe first, capped), or why it could
    not run."""
    if isinstance(report, str):
        return section("validation", "Validation",
                       f'<p class="unavailable">Validation failed to run: {escape(report)}</p>')
    counts = report.counts
    out = [f'<p class="verdict {"ok" if report.ok else "failed"}">'
           f'<span class="word">{"ok" if report.ok else "FAILED"}</span>: '
           + ", ".join(f'<span class="{f"sev-{sev}" if counts[sev] else "zero"}">'
                       f"{counts[sev]:,} {label}</span>"
                       for sev, label in (("error", "error(s)"), ("warning", "warning(s)"),
                                          ("info", "info")))
           + "</p>"]
    findings = sorted(report.findings, key=lambda f: -int(f.severity))
    shown = findings[:MAX_FINDINGS]
    if len(findings) > len(shown):
        out.append(f'<p class="note">Showing the first {len(shown):,} of {len(findings):,} '
                   "findings (most severe first); <code>rlio validate</code> lists all.</p>")
    if shown:
        out.append(table("findings", ("severity", "code", "where", "message"),
                         map(_finding_row, shown)))
    return section("validation", "Validation", "".join(out))


def document(name: str, facts: Sequence[tuple[str, str]], config: tuple[str, bool] | None,
             sections: Sequence[str]) -> str:
    """The whole page: head (CSP, inline CSS), the run's facts and config, then ``sections``."""
    cfg = ""
    if config is not None:
        text, cut = config
        cfg = (f'<details class="config"><summary>config.json{" (truncated)" if cut else ""}'
               f"</summary><pre>{escape(text)}</pre></details>")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f'<meta name="generator" content="rlio {escape(__version__)}">'
        f"<title>Run report: {escape(name)}</title><style>{CSS}</style></head>\n<body>"
        f'<header><h1>Run report <span class="run">{escape(name)}</span></h1><dl class="facts">'
        + "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts)
        + '</dl><nav class="toc"><a href="#metrics">Metrics</a><a href="#checkpoints">'
        'Checkpoints</a><a href="#validation">Validation</a><a href="#iterations">Iterations'
        f"</a></nav>{cfg}</header>\n<main>"
        + "\n".join(sections)
        + f"</main>\n<footer>Written by rlio {escape(__version__)}.</footer></body></html>\n"
    )
