"""``rlio compare``: one self-contained page comparing the runs of a sweep.

The page holds a runs table (status, iterations, last checkpoint, and each chosen metric's last
value, best value and the step of the best), the config keys whose values differ, one overlay
chart per metric (a series per run, coloured as its row of the table) and, for two runs or
against a baseline, the per-prompt change with statistics (``rlio.report.sweep_change``) and the
prompts both runs logged, improved / regressed / unchanged. Like the run
report it needs no script and loads nothing (the same strict Content-Security-Policy), and every
piece of run text is escaped. The runs are found as ``rlio validate`` finds them and read in
parallel on the fleet's executor (``rlio.report.sweep_runs``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import orjson

from rlio._codec.numtext import number_text
from rlio._version import __version__
from rlio.errors import UnknownMetricError
from rlio.report import svg as _svg
from rlio.report.page import CSP
from rlio.report.run_report import REPORT_NAME, write_run_report
from rlio.report.style import CSS
from rlio.report.sweep_change import ChangeView, change_view
from rlio.report.sweep_runs import AXES, RunSummary, lower_is_better, summarize
from rlio.report.usual import closest_keys
from rlio.storage.base import Entry
from rlio.templating import render
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
.legend-runs span{overflow-wrap:break-word}
td[data-col=name],.config-diff td:first-child{white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.up{color:var(--ok)}.down{color:var(--err)}.counts{font-weight:600}
.change h4{margin:12px 0 4px;font-size:14px}.change .footnote{font-size:12px}
.movers td.num{white-space:nowrap}
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
    text = value if isinstance(value, str) else (
        number_text(value) if isinstance(value, (int, float)) and not isinstance(value, bool)
        else _json(value))
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


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run of the runs table: its swatch class, link, cells (value, data-col, numeric)."""

    name: str
    swatch: str
    href: str | None
    cells: list[tuple[str, str, bool]]


def runs_view(runs: Sequence[RunSummary], metrics: Sequence[str],
              links: _Links) -> tuple[list[str], list[RunRow]]:
    """The runs table: the heads, then one row per run, its swatch matching its series."""
    heads = ["run", "status", "iterations", "last checkpoint"]
    for k in metrics:
        word = "lowest" if lower_is_better(k) else "highest"
        heads += [f"{k} last", f"{k} best ({word})", f"{k} best step"]
    rows = []
    for i, r in enumerate(runs):
        cells = [(r.status, "status", False), (str(r.iterations), "iterations", True),
                 (r.last_checkpoint or "", "checkpoint", False)]
        for k in metrics:
            m = r.metrics.get(k)
            last, best, step = ("", "", "") if m is None else (_svg.fmt(m.last),
                                                               _svg.fmt(m.best), str(m.best_step))
            cells += [(last, f"{k}|last", True), (best, f"{k}|best", True),
                      (step, f"{k}|best_step", True)]
        rows.append(RunRow(r.name, _svg.series_class(i), links.href(r, REPORT_NAME), cells))
    return heads, rows


def config_view(runs: Sequence[RunSummary]) -> tuple[list[str], list[tuple[str, list[Any]]]]:
    """The config keys whose values differ across the runs, and per run its cells (the value's
    text, or None where the run lacks the key)."""
    keys = differing_config(runs)
    return keys, [(r.name, [(k, _cell(r.config[k]) if k in r.config else None) for k in keys])
                  for r in runs]


def series_points(runs: int) -> int:
    """Points one series of a chart of ``runs`` runs keeps: an equal share of ``CHART_POINTS``,
    at least ``_MIN_SERIES_POINTS`` and at most the run report's ``MAX_POINTS``."""
    return min(_svg.MAX_POINTS, max(_MIN_SERIES_POINTS, CHART_POINTS // max(1, runs)))


@dataclass(frozen=True, slots=True)
class OverlayCard:
    """One metric's overlay chart, its notes (kind, text) and legend (swatch, run)."""

    key: str
    axis: str
    chart: _svg.Overlay
    notes: list[tuple[str, str]]
    legend: list[tuple[str, str]]


def _chart(runs: Sequence[RunSummary], key: str, axis: str, index: int) -> OverlayCard:
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
    chart = _svg.overlay_view(series, x_label=axis, chart_id=f"cmp-{index}", label=key,
                              max_points=share)
    notes = []
    if no_axis:
        notes.append(("axis", f"no {axis} axis (not drawn): " + ", ".join(no_axis)))
    if missing:
        notes.append(("missing", "not logged: " + ", ".join(missing)))
    return OverlayCard(key, axis, chart, notes,
                       [(_svg.series_class(i), s.key) for i, s in series])


@dataclass(frozen=True, slots=True)
class PairRow:
    """One prompt both runs logged: both scores, the change and both transcript links."""

    key: str
    label: str
    split: str
    a: float
    b: float
    delta: float
    trend: str
    links: list[tuple[str | None, str]]  # href or None, why not
    anchor: str  # the row's id


@dataclass(frozen=True, slots=True)
class PairView:
    """A pair of runs' prompt comparison: the per-prompt change with statistics, then the
    prompts whose score moved most."""

    pair: PromptPair
    rows: list[PairRow]
    change: ChangeView


def _why(run: RunSummary) -> str:
    return "no page yet" if run.local else "remote run: not linked"


def pair_view(pair: PromptPair, links: _Links, index: int = 0) -> PairView:
    """The per-prompt change of one pair (``rlio.report.sweep_change``) and its biggest moves
    (``TOP_PROMPTS``), each linking both transcripts; ``index`` makes the rows' ids unique."""
    rows = []
    for delta, split, key in pair.rows[:TOP_PROMPTS]:
        a, b = pair.base.prompts[(split, key)], pair.other.prompts[(split, key)]
        trend = "up" if delta > UNCHANGED else "down" if delta < -UNCHANGED else ""
        rows.append(PairRow(key, a.label, split, a.reward, b.reward, delta, trend, [
            (links.href(pair.base, a.page), _why(pair.base)),
            (links.href(pair.other, b.page), _why(pair.other))],
            f"prompt-{index}-{split.replace('/', '-')}-{key}"))
    anchors = {(r.split, r.key): r.anchor for r in rows}
    return PairView(pair, rows, change_view(pair.base.location, pair.other.location, anchors,
                                            (pair.base.name, pair.other.name)))


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
        UnknownMetricError: a key of ``metrics`` that no run logged (names the closest).
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
    _check_metrics(metrics, good)
    chosen = list(metrics) or default_metrics(good)
    runs = sort_runs(good, order)
    pairs = _pairs(good, baseline) if want_prompts else None  # PATH order, not the table's
    links = _Links(output)
    facts = [("runs", f"{len(runs):,}"), ("unreadable", f"{len(unreadable):,}"),
             ("x axis", x), ("metrics", ", ".join(chosen) or "none")]
    heads, rows = runs_view(runs, chosen, links)
    keys, cfg = config_view(runs)
    return render("compare.html.j2", title="Sweep comparison", csp=CSP, css=CSS + _EXTRA_CSS,
                  generator=f"rlio {__version__}", version=__version__, write_id=None,
                  facts=facts, unreadable=unreadable, heads=heads, rows=rows, sort=order,
                  keys=keys, config=cfg, charts=[_chart(runs, k, x, i)
                                                 for i, k in enumerate(chosen)],
                  points=series_points(len(runs)),
                  pairs=None if pairs is None else [pair_view(p, links, i)
                                                    for i, p in enumerate(pairs)])


def _check_metrics(metrics: Sequence[str], runs: Sequence[RunSummary]) -> None:
    """Refuse a ``--metric`` key no run logged, naming the closest keys of any run."""
    if not runs:
        return
    logged = {k for r in runs for k in r.keys}
    for key in metrics:
        if key not in logged:
            close = closest_keys(key, sorted(logged))
            hint = f"; closest: {', '.join(close)}" if close else ""
            raise UnknownMetricError(f"metric {key!r} is in no run's metrics.jsonl{hint}",
                                     key=key, closest=close)


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
