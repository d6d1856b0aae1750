"""``rlio compare``: one self-contained page comparing the runs of a sweep.

The page holds a runs table (status, iterations, last checkpoint, and each chosen metric's last
value, best value and the step of the best), the config keys whose values differ, one overlay
chart per metric (a series per run, coloured as its row of the table) and, for two runs or
against a baseline, the prompts both runs logged, improved / regressed / unchanged. Like the run
report it needs no script and loads nothing (the same strict Content-Security-Policy), and every
piece of run text is escaped. The runs are found as ``rlio validate`` finds them and read in
parallel on the fleet's executor (``rlio.report.sweep_runs``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from html import escape
from typing import Any, Final
from urllib.parse import quote

import orjson

from rlio._version import __version__
from rlio.report import svg as _svg
from rlio.report.page import CSP, section, table
from rlio.report.run_report import REPORT_NAME, write_run_report
from rlio.report.style import CSS
from rlio.report.sweep_runs import AXES, RunSummary, lower_is_better, summarize
from rlio.storage.base import Entry
from rlio.validate.fleet import Found, Unreadable, discover_named, each_run

#: At most this many default metrics are charted (the user's ``--metric`` keys are all charted).
MAX_DEFAULT_METRICS: Final = 6
#: Points one overlay chart draws over all its series (each series gets an equal share).
CHART_POINTS: Final = 12_000
_MIN_SERIES_POINTS: Final = 40
#: The prompt table of a pair lists this many prompts (largest change first).
TOP_PROMPTS: Final = 50
#: A prompt's reward changed when it moved by more than this.
UNCHANGED: Final = 1e-9
_RUN_COLUMNS: Final = ("name", "status", "iterations", "checkpoint")
_MAX_VALUE: Final = 80

#: One colour per series class ``s0``..``s9`` (``rlio.report.svg.series_class``).
COLOURS: Final = ("#2563eb", "#d9480f", "#0f9d76", "#b5359b", "#a86400", "#5b8def", "#c62828",
                  "#6b7280", "#7c3aed", "#0891b2")
_EXTRA_CSS: Final = "".join(f"svg .line.s{i},.sw.s{i}{{stroke:{c};background:{c}}}"
                            for i, c in enumerate(COLOURS)) + """
svg .line.d1{stroke-dasharray:6 3}svg .line.d2{stroke-dasharray:2 2}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px}
.sw.d1,.sw.d2{opacity:.6}.legend-runs{display:flex;flex-wrap:wrap;gap:2px 12px;font-size:12px}
.legend-runs span{overflow-wrap:anywhere}td.num{text-align:right;font-variant-numeric:tabular-nums}
.up{color:var(--ok)}.down{color:var(--err)}.counts{font-weight:600}
"""


@dataclass(frozen=True)
class SortKey:
    """``--sort KEY[:asc|:desc]``: a run column (name, status, iterations, checkpoint) or a
    metric (sorted by its best value)."""

    key: str
    descending: bool = False

    @classmethod
    def parse(cls, text: str) -> SortKey:
        """``KEY``, ``KEY:asc`` or ``KEY:desc``."""
        key, sep, order = text.rpartition(":")
        if sep and order in ("asc", "desc"):
            return cls(key, order == "desc")
        return cls(text)


def _sort_value(s: RunSummary, key: str) -> Any:
    if key == "name":
        return s.name
    if key == "status":
        return s.status
    if key == "iterations":
        return s.iterations
    if key == "checkpoint":
        return s.last_checkpoint
    m = s.metrics.get(key)
    return None if m is None else m.best


def sort_runs(runs: Sequence[RunSummary], sort: SortKey | None) -> list[RunSummary]:
    """``runs`` in ``sort`` order (runs without the value last), else as found."""
    if sort is None:
        return list(runs)
    have = [r for r in runs if _sort_value(r, sort.key) is not None]
    rest = [r for r in runs if _sort_value(r, sort.key) is None]
    have.sort(key=lambda r: _sort_value(r, sort.key), reverse=sort.descending)
    return have + rest


def default_metrics(runs: Sequence[RunSummary]) -> list[str]:
    """The reward and loss keys every run with metrics logged (numbers), in the first such
    run's order (a run without metrics, a config-only one, has no say)."""
    logged = [r for r in runs if r.metrics]
    if not logged:
        return []
    common = set.intersection(*(set(r.metrics) for r in logged))
    return [k for k in logged[0].keys if k in common][:MAX_DEFAULT_METRICS]


def differing_config(runs: Sequence[RunSummary]) -> list[str]:
    """The flattened config keys whose values are not the same in every run (a key some run
    lacks counts), in first-seen order."""
    keys: dict[str, None] = {}
    for r in runs:
        keys.update(dict.fromkeys(r.config))

    def same(k: str) -> bool:
        return len({_json(r.config[k]) if k in r.config else "\0" for r in runs}) == 1

    return [k for k in keys if not same(k)]


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr(value)


def _cell(value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    return text if len(text) <= _MAX_VALUE else text[:_MAX_VALUE] + "…"


@dataclass
class PromptPair:
    """Two runs' rewards of the prompts both logged: counts and the largest changes."""

    base: RunSummary
    other: RunSummary
    rows: list[tuple[float, str, str]]  # (change, split, key), largest change first
    improved: int
    regressed: int
    unchanged: int


def pair_prompts(base: RunSummary, other: RunSummary) -> PromptPair:
    """Classify the (split, prompt) pairs both runs logged with a reward by ``other - base``."""
    rows = []
    counts = [0, 0, 0]
    for split, key in sorted(set(base.prompts) & set(other.prompts)):
        delta = other.prompts[(split, key)].reward - base.prompts[(split, key)].reward
        counts[0 if delta > UNCHANGED else 1 if delta < -UNCHANGED else 2] += 1
        rows.append((delta, split, key))
    rows.sort(key=lambda r: (-abs(r[0]), r[1], r[2]))
    return PromptPair(base, other, rows, *counts)


class _Links:
    """Hrefs from the page to a run's files (local runs; remote ones are not linked)."""

    def __init__(self, output: str) -> None:
        self.base = os.path.dirname(os.path.abspath(output))

    def href(self, run: RunSummary, rel: str) -> str | None:
        """The relative href of ``rel`` (``path#anchor``) of ``run`` when the file exists."""
        if not run.local:
            return None
        path, _, anchor = rel.partition("#")
        target = os.path.join(os.path.abspath(run.location.removeprefix("file://")),
                              *path.split("/"))
        if not os.path.isfile(target):
            return None
        href = quote(os.path.relpath(target, self.base).replace(os.sep, "/"))
        return href + (f"#{quote(anchor)}" if anchor else "")


def _num(v: float) -> str:
    return escape(_svg.fmt(v))


def _run_name(i: int, r: RunSummary, links: _Links) -> str:
    href = links.href(r, REPORT_NAME)
    name = escape(r.name)
    shown = f'<a href="{href}">{name}</a>' if href else name
    return f'<span class="sw {_svg.series_class(i)}"></span> {shown}'


def section_runs(runs: Sequence[RunSummary], metrics: Sequence[str], links: _Links,
                 sort: SortKey | None) -> str:
    """The runs table: one row per run, its swatch matching its series in every chart."""
    heads = ["run", "status", "iterations", "last checkpoint"]
    for k in metrics:
        word = "lowest" if lower_is_better(k) else "highest"
        heads += [f"{escape(k)} last", f"{escape(k)} best ({word})", f"{escape(k)} best step"]
    rows = []
    for i, r in enumerate(runs):
        cells = [f'<td data-col="name">{_run_name(i, r, links)}</td>',
                 f'<td data-col="status">{escape(r.status)}</td>',
                 f'<td data-col="iterations" class="num">{r.iterations}</td>',
                 f'<td data-col="checkpoint">{escape(r.last_checkpoint or "")}</td>']
        for k in metrics:
            m = r.metrics.get(k)
            key = escape(k)
            last, best, step = ("", "", "") if m is None else (_num(m.last), _num(m.best),
                                                               str(m.best_step))
            cells += [f'<td data-col="{key}|last" class="num">{last}</td>',
                      f'<td data-col="{key}|best" class="num">{best}</td>',
                      f'<td data-col="{key}|best_step" class="num">{step}</td>']
        rows.append(f'<tr data-run="{escape(r.name)}">{"".join(cells)}</tr>')
    order = "" if sort is None else (f'<p class="note">Sorted by {escape(sort.key)} '
                                     f'({"descending" if sort.descending else "ascending"}; '
                                     "a metric by its best value).</p>")
    note = ('<p class="note">Best is the highest value (the lowest for a key naming a loss); '
            "each run's name links to its report where <code>rlio report RUN</code> (or "
            "<code>rlio compare --reports</code>) wrote one.</p>")
    return section("runs", "Runs", order + note + table("runs", heads, rows))


def section_config(runs: Sequence[RunSummary]) -> str:
    """The config keys whose values differ across the runs: a row per run, a column per key."""
    keys = differing_config(runs)
    if not keys:
        return section("config", "Config differences",
                       '<p class="note">Every run has the same config (or none).</p>')
    rows = []
    for r in runs:
        cells = "".join(f'<td data-key="{escape(k)}">' + (escape(_cell(r.config[k]))
                                                            if k in r.config else
                                                            '<em class="note">absent</em>')
                        + "</td>" for k in keys)
        rows.append(f'<tr data-run="{escape(r.name)}"><td>{escape(r.name)}</td>{cells}</tr>')
    note = (f'<p class="note">{len(keys):,} key(s) differ (nested keys joined with '
            "<code>.</code>).</p>")
    return section("config", "Config differences",
                   note + table("config-diff", ["run", *map(escape, keys)], rows))


def series_points(runs: int) -> int:
    """Points one series of a chart of ``runs`` runs keeps: an equal share of ``CHART_POINTS``,
    at least ``_MIN_SERIES_POINTS`` and at most the run report's ``MAX_POINTS``."""
    return min(_svg.MAX_POINTS, max(_MIN_SERIES_POINTS, CHART_POINTS // max(1, runs)))


def _chart(runs: Sequence[RunSummary], key: str, axis: str, index: int) -> str:
    share = series_points(len(runs))
    series, missing, no_axis = [], [], []
    for i, r in enumerate(runs):
        m = r.metrics.get(key)
        if m is None:
            missing.append(r.name)
        elif not r.has_axis or not m.xs:
            no_axis.append(r.name)
        else:
            series.append((i, _svg.Series(r.name, list(m.xs), list(m.ys), len(m.xs))))
    svg = _svg.overlay_chart(series, x_label=axis, chart_id=f"cmp-{index}", label=key,
                             max_points=share)
    notes = []
    if no_axis:
        notes.append(f"no {axis} axis (not drawn): " + ", ".join(no_axis))
    if missing:
        notes.append("not logged: " + ", ".join(missing))
    legend = "".join(f'<span><span class="sw {_svg.series_class(i)}"></span> {escape(s.key)}'
                     "</span>" for i, s in series)
    return (f'<figure class="card chart-card" data-metric="{escape(key)}" '
            f'data-series="{len(series)}"><figcaption><h3>{escape(key)}</h3><p class="stats">'
            f"{len(series):,} run(s) against {escape(axis)}</p>"
            + "".join(f'<p class="ds" data-note="{"axis" if n.startswith("no ") else "missing"}">'
                      f"{escape(n)}</p>" for n in notes)
            + f'</figcaption>{svg}<p class="legend-runs">{legend}</p></figure>')


def section_charts(runs: Sequence[RunSummary], metrics: Sequence[str], axis: str) -> str:
    """One overlay chart per metric, a series per run."""
    if not metrics:
        return section("charts", "Metrics", '<p class="note">No metric to chart: no reward or '
                       "loss key every run logged; choose some with --metric KEY.</p>")
    note = (f'<p class="note">Each series is drawn with at most {series_points(len(runs)):,} '
            "points: the min and max of equal-count buckets, with the first and last point, so "
            "every series keeps its extremes.</p>")
    body = "".join(_chart(runs, k, axis, i) for i, k in enumerate(metrics))
    return section("charts", "Metrics", note + f'<div class="charts">{body}</div>')


def _transcript(href: str | None, run: RunSummary) -> str:
    if href:
        return f'<td><a href="{href}">transcript</a></td>'
    why = "no page yet" if run.local else "remote run: not linked"
    return f'<td class="note">{why}</td>'


def _pair_table(pair: PromptPair, links: _Links) -> str:
    rows = []
    for delta, split, key in pair.rows[:TOP_PROMPTS]:
        a, b = pair.base.prompts[(split, key)], pair.other.prompts[(split, key)]
        ha, hb = links.href(pair.base, a.page), links.href(pair.other, b.page)
        cls = "up" if delta > UNCHANGED else "down" if delta < -UNCHANGED else ""
        rows.append(
            f'<tr data-prompt="{escape(key)}"><td>{escape(a.label)}</td><td>{escape(split)}</td>'
            f'<td class="num">{_num(a.reward)}</td><td class="num">{_num(b.reward)}</td>'
            f'<td class="num {cls}">{"+" if delta > 0 else ""}{_num(delta)}</td>'
            + "".join(_transcript(h, r) for h, r in ((ha, pair.base), (hb, pair.other)))
            + "</tr>")
    heads = ("prompt", "split", f"{escape(pair.base.name)} reward",
             f"{escape(pair.other.name)} reward", "change", escape(pair.base.name),
             escape(pair.other.name))
    return table("prompts", heads, rows) if rows else ""


def section_prompts(pairs: Sequence[PromptPair] | None, links: _Links) -> str:
    """For each pair, counts of improved / regressed / unchanged prompts and the biggest moves."""
    title = "Prompts in both runs"
    if pairs is None:
        return section("prompts", title, '<p class="note">Compare two runs (or pass --baseline '
                       "RUN) to compare the prompts both logged.</p>")
    out = ['<p class="note">A prompt (the report\'s prompt key, per split) scores the mean '
           "reward of its trajectories at the last iteration logging it; the change is the "
           "second run's minus the first's. Transcript links open the run report's pages "
           "(<code>rlio compare --reports</code> writes them).</p>"]
    for pair in pairs:
        both = pair.improved + pair.regressed + pair.unchanged
        out.append(f'<div class="pair" data-base="{escape(pair.base.name)}" '
                   f'data-other="{escape(pair.other.name)}"><h3>{escape(pair.base.name)} → '
                   f'{escape(pair.other.name)}</h3><p class="counts" '
                   f'data-improved="{pair.improved}" data-regressed="{pair.regressed}" '
                   f'data-unchanged="{pair.unchanged}">{both:,} prompt(s) in both: '
                   f'<span class="up">{pair.improved:,} improved</span>, <span class="down">'
                   f"{pair.regressed:,} regressed</span>, {pair.unchanged:,} unchanged</p>"
                   f"{_pair_table(pair, links)}</div>")
    return section("prompts", title, "".join(out))


def _document(facts: Sequence[tuple[str, str]], sections: Sequence[str]) -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f'<meta name="generator" content="rlio {escape(__version__)}">'
        f"<title>Sweep comparison</title><style>{CSS}{_EXTRA_CSS}</style></head>\n<body>"
        '<header><h1>Sweep comparison</h1><dl class="facts">'
        + "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in facts)
        + '</dl><nav class="toc"><a href="#runs">Runs</a><a href="#config">Config</a>'
        '<a href="#charts">Metrics</a><a href="#prompts">Prompts</a></nav></header>\n<main>'
        + "\n".join(sections)
        + f"</main>\n<footer>Written by rlio {escape(__version__)}.</footer></body></html>\n")


def _unreadable(bad: Sequence[Unreadable]) -> str:
    if not bad:
        return ""
    items = "".join(f"<li><code>{escape(u.path)}</code>: {escape(u.message)}</li>" for u in bad)
    return section("unreadable", "Unreadable", f'<ul class="notes">{items}</ul>')


def render_comparison(paths: Sequence[str | os.PathLike[str]], *, output: str,
                      metrics: Sequence[str] = (), x: str = "step", sort: str | None = None,
                      baseline: str | None = None, executor: Executor | None = None,
                      jobs: int | None = None, reports: bool = False,
                      unreadable: list[Unreadable] | None = None) -> str:
    """The comparison page of every run under ``paths`` (runs, parents, URI prefixes) as HTML.

    Args:
        output: where the page will be written (links are relative to it).
        metrics: keys to chart and tabulate (default: the reward and loss keys every run has).
        x: the charts' x axis, one of ``AXES``.
        sort: ``KEY[:asc|:desc]`` (a metric sorts by its best value).
        baseline: a run's name (as the table shows it) to compare every other run's prompts
            with; without it, two runs are compared with each other.
        executor, jobs: where the runs are read in parallel (``validate_runs``'s meaning).
        reports: first write each run's own report, so every link of the page resolves.
        unreadable: where the paths without a run and the runs that could not be read are
            added (the page lists them too).

    Raises:
        ValueError: ``x`` is not an axis, or ``baseline`` names no run found.
    """
    if x not in AXES:
        raise ValueError(f"x must be one of {', '.join(AXES)}, got {x!r}")
    if unreadable is None:
        unreadable = []
    listings: Found = {}
    found = discover_named(paths, unreadable, listings)
    names = [n for n, _ in found]
    if baseline is not None and baseline not in names:
        raise ValueError(f"--baseline {baseline!r} is none of the runs found: {', '.join(names)}")
    want_prompts = baseline is not None or len(found) == 2
    if reports:
        for _, loc in found:
            try:
                write_run_report(loc)
            except OSError as exc:  # the run is still compared; its link stays unresolved
                unreadable.append(Unreadable(loc, f"its report could not be written: {exc}"))
    order = SortKey.parse(sort) if sort else None
    wanted = tuple(metrics) + ((order.key,) if order and order.key not in _RUN_COLUMNS else ())
    by_loc = {loc: name for name, loc in found}
    summaries: list[RunSummary] = list(each_run(_summarize_named, list(by_loc), by_loc, wanted,
                                                x, want_prompts, executor=executor, jobs=jobs,
                                                listings=None if reports else listings))
    good = [s for s in summaries if s.error is None]
    unreadable += [Unreadable(s.location, s.error) for s in summaries if s.error is not None]
    chosen = list(metrics) or default_metrics(good)
    runs = sort_runs(good, order)
    pairs = _pairs(good, baseline) if want_prompts else None  # PATH order, not the table's
    links = _Links(output)
    facts = [("runs", f"{len(runs):,}"), ("unreadable", f"{len(unreadable):,}"),
             ("x axis", x), ("metrics", ", ".join(chosen) or "none")]
    return _document(facts, [_unreadable(unreadable), section_runs(runs, chosen, links, order),
                             section_config(runs), section_charts(runs, chosen, x),
                             section_prompts(pairs, links)])


def _summarize_named(location: str, names: dict[str, str], metrics: tuple[str, ...], x: str,
                     prompts: bool, *, listing: list[Entry] | None = None) -> RunSummary:
    return summarize(location, names[location], metrics, x, prompts, listing=listing)


def _pairs(runs: Sequence[RunSummary], baseline: str | None) -> list[PromptPair] | None:
    if baseline is None:
        return [pair_prompts(runs[0], runs[1])] if len(runs) == 2 else None
    base = next((r for r in runs if r.name == baseline), None)
    if base is None:  # the baseline could not be read
        return None
    return [pair_prompts(base, r) for r in runs if r is not base]


def write_comparison(paths: Sequence[str | os.PathLike[str]], output: str = "compare.html",
                     **options: Any) -> tuple[str, list[str]]:
    """Write the comparison page (``render_comparison``'s options) to the local file ``output``
    (a folder gets ``compare.html`` inside): where it went, and one message per path without a
    run or run that could not be read."""
    if os.path.isdir(output):
        output = os.path.join(output, "compare.html")
    bad: list[Unreadable] = []
    page = render_comparison(paths, output=output, unreadable=bad, **options)
    tmp = f"{output}.rlio-tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, output)
    return output, [f"{u.path}: {u.message}" if u.path not in u.message else u.message
                    for u in bad]


__all__ = ["AXES", "SortKey", "render_comparison", "write_comparison"]
