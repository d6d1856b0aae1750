"""The text of ``rlio show`` (one run at a glance) and ``rlio diff`` (two runs side by side).

Pure rendering over a ``Run``: the functions return strings and print nothing; the CLI escapes
and prints them. Values are shown with six significant digits; NaN as ``nan``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from rlio._codec.numtext import number_text
from rlio.errors import ResumeError
from rlio.findings import counts_text
from rlio.reader.run import Run
from rlio.reader.source import LineStats
from rlio.rules import TRAINING_KEYS, X_AXIS_KEYS

__all__ = [
    "REWARD_KEY", "config_diff", "diff_lines", "render_diff", "render_show", "show_lines",
    "sparkline", "step_series",
]

REWARD_KEY: Final = "env/all/reward/total"
_BARS: Final = "▁▂▃▄▅▆▇█"
_MAX_LAST: Final = 20
_MAX_DIFF_KEYS: Final = 12


def fmt(value: Any) -> str:
    """A value for a terminal: numbers as ``number_text`` writes them, the rest as written."""
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "null"
    if isinstance(value, (int, float)):
        return number_text(value)
    return str(value)


def sparkline(values: Sequence[float], width: int = 40) -> str:
    """``values`` as a row of block characters, averaged into at most ``width`` buckets."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    n = len(finite)
    buckets = min(width, n)
    means = []
    for b in range(buckets):
        chunk = finite[b * n // buckets:(b + 1) * n // buckets]
        means.append(sum(chunk) / len(chunk))
    lo, hi = min(means), max(means)
    span = hi - lo
    return "".join(_BARS[0 if span == 0 else min(7, int((m - lo) / span * 8))] for m in means)


def _x_of(rec: Mapping[str, Any]) -> int | None:
    for key in X_AXIS_KEYS:
        v = rec.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def step_series(records: Iterable[Mapping[str, Any]],
                keys: Iterable[str]) -> dict[str, dict[int, float]]:
    """``{key: {step: value}}`` over the lines with a step; where a step repeats (a resume logged
    it again) the last value wins. Non-numeric values are left out; NaN stays."""
    wanted = list(keys)
    out: dict[str, dict[int, float]] = {k: {} for k in wanted}
    for rec in records:
        x = _x_of(rec)
        if x is None:
            continue
        for k in wanted:
            y = _number(rec.get(k))
            if y is not None:
                out[k][x] = y
    return out


def _verdict(location: str) -> str:
    from rlio.validate import validate_run

    try:
        report = validate_run(location)
    except OSError as exc:
        return f"not validated: {exc}"
    c = report.counts
    word = "ok" if report.ok else "errors"
    return f"{word}: {counts_text(c)}"


def _resume_line(run: Run) -> str:
    try:
        state = run.resume_state()
    except ResumeError as exc:
        return f"cannot resume: {exc}"
    if state is None:
        return "no resumable checkpoint: a restart begins at iteration 0"
    return (f"restart at batch {state.next_batch} from checkpoint "
            f"{state.checkpoint.get('name')!r} (checkpoints.jsonl line {state.line})")


def render_show(run: Run, *, validate: bool = True) -> str:
    """The terminal summary of one run: layout, iterations, metrics, trend, checkpoints, resume
    point and (with ``validate``) the validator's verdict."""
    return "\n".join(show_lines(run, validate=validate))


def show_lines(run: Run, *, validate: bool = True) -> list[str]:
    """``render_show``'s lines; a line may hold any character a run holds (a key with a newline),
    so a terminal printer escapes each line."""
    stats = LineStats()
    keys: dict[str, None] = {}
    last_train: Mapping[str, Any] | None = None
    records: list[dict[str, Any]] = []  # the few keys the trend needs, not whole lines
    kept = (*X_AXIS_KEYS, *TRAINING_KEYS, REWARD_KEY)
    for rec in run.iter_metrics(stats):
        keys.update(dict.fromkeys(rec))
        if any(k in rec for k in TRAINING_KEYS) or last_train is None:
            last_train = rec
        records.append({k: v for k, v in rec.items() if k in kept})
    iterations = run.iterations()
    evaluators = sorted({e for it in iterations for e in it.evaluators})
    from rlio.status import run_status

    lines = [f"run          {run.location}",
             f"status       {run_status(run.storage).text()}",
             f"layout       {run.layout or 'none (no iteration files)'}"]
    if iterations:
        first, last_it = iterations[0].index, iterations[-1].index
        lines.append(f"iterations   {len(iterations)} ({first}-{last_it})"
                     f"; evaluators: {', '.join(evaluators) or 'none'}")
    else:
        lines.append("iterations   none")
    notes = []
    if stats.torn:
        notes.append("torn last line skipped")
    if stats.skipped:
        notes.append(f"{stats.skipped} bad line(s) skipped")
    lines.append(f"metrics      {stats.records} line(s), {len(keys)} key(s)"
                 + (f" ({'; '.join(notes)})" if notes else ""))
    checkpoints = run.checkpoints()
    if checkpoints:
        last = checkpoints[-1]
        lines.append(f"checkpoints  {len(checkpoints)} (last {last.get('name')!r}, "
                     f"batch {fmt(last.get('batch'))})")
    else:
        lines.append("checkpoints  none")
    lines.append(f"resume       {_resume_line(run)}")
    if validate:
        lines.append(f"validation   {_verdict(run.location)}")
    if last_train is not None:
        x = _x_of(last_train)
        lines += ["", f"last metrics{'' if x is None else f' (step {x})'}:"]
        shown = [k for k in last_train if k not in X_AXIS_KEYS]
        width = max((len(k) for k in shown[:_MAX_LAST]), default=0)
        lines += [f"  {k:<{width}}  {fmt(last_train[k])}" for k in shown[:_MAX_LAST]]
        if len(shown) > _MAX_LAST:
            lines.append(f"  ... and {len(shown) - _MAX_LAST} more")
    series = step_series(records, [REWARD_KEY])[REWARD_KEY]
    if series:
        steps = sorted(series)
        ys = [series[s] for s in steps]
        finite = [y for y in ys if math.isfinite(y)]
        lines += ["", f"reward trend ({REWARD_KEY}, steps {steps[0]}-{steps[-1]}):"]
        if finite:
            lines.append(f"  {sparkline(ys)}  min {fmt(min(finite))}  max {fmt(max(finite))}  "
                         f"last {fmt(ys[-1])}")
        else:
            lines.append("  no finite value")
    return lines


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def config_diff(a: Any, b: Any) -> list[tuple[str, Any, Any, str]]:
    """``(key path, value in a, value in b, how)`` for every differing leaf; ``how`` is
    ``changed``, ``only in A`` or ``only in B``. Paths join keys with ``.`` and index lists."""
    fa: dict[str, Any] = {}
    fb: dict[str, Any] = {}
    _flatten(a, "", fa)
    _flatten(b, "", fb)
    out = []
    for path in sorted(fa.keys() | fb.keys()):
        if path not in fb:
            out.append((path, fa[path], None, "only in A"))
        elif path not in fa:
            out.append((path, None, fb[path], "only in B"))
        elif not _same(fa[path], fb[path]):
            out.append((path, fa[path], fb[path], "changed"))
    return out


def _default_keys(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]) -> list[str]:
    def numeric(records: Sequence[Mapping[str, Any]]) -> dict[str, None]:
        found: dict[str, None] = {}
        for rec in records:
            for k, v in rec.items():
                if k not in X_AXIS_KEYS and _number(v) is not None:
                    found[k] = None
        return found

    both = [k for k in numeric(a) if k in numeric(b)]
    both.sort(key=lambda k: k != REWARD_KEY)
    return both[:_MAX_DIFF_KEYS]


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip()
            for r in rows]


def render_diff(a: Run, b: Run, metrics: Sequence[str] = ()) -> str:
    """Config differences by key path, then each metric's last, min and max over the steps both
    runs logged (the default metrics: numeric keys both have, the reward first)."""
    return "\n".join(diff_lines(a, b, metrics))


def diff_lines(a: Run, b: Run, metrics: Sequence[str] = ()) -> list[str]:
    """``render_diff``'s lines (escape each for a terminal, as for ``show_lines``).

    Raises:
        ValueError: a key of ``metrics`` is in neither run; names the metrics both logged.
    """
    lines = [f"A  {a.location}", f"B  {b.location}", ""]
    diffs = config_diff(a.config() or {}, b.config() or {})
    lines.append(f"config: {len(diffs)} difference(s)")
    for path, va, vb, how in diffs:
        if how == "changed":
            lines.append(f"  {path}: {fmt(va)} -> {fmt(vb)}")
        else:
            lines.append(f"  {path}: {how} ({fmt(va if how == 'only in A' else vb)})")
    ra, rb = a.metrics(), b.metrics()
    keys = list(metrics) or _default_keys(ra, rb)
    _require_metrics(metrics, ra, rb)
    sa, sb = step_series(ra, keys), step_series(rb, keys)
    lines += ["", "metrics at matching steps:"]
    header = ["key", "steps", "last A", "last B", "min A", "min B", "max A", "max B"]
    rows = [header]
    for k in keys:
        common = sorted(sa[k].keys() & sb[k].keys())
        if not common:
            rows.append([k, "none", *["-"] * 6])
            continue
        ya = [sa[k][s] for s in common]
        yb = [sb[k][s] for s in common]
        rows.append([k, f"{len(common)} ({common[0]}-{common[-1]})", fmt(ya[-1]), fmt(yb[-1]),
                     *_min_max(ya, yb)])
    lines += _table(rows) if keys else ["  no metric both runs logged"]
    return lines


def _require_metrics(metrics: Sequence[str], ra: list[Any], rb: list[Any]) -> None:
    """Raise ``ValueError`` for a wanted metric neither run logged (a typo, not a "none" row)."""
    seen = {k for rec in (*ra, *rb) for k in rec}
    missing = [k for k in metrics if k not in seen]
    if not missing:
        return
    both = _default_keys(ra, rb)
    shown = ", ".join(both[:20]) + (f", ... ({len(both) - 20} more)" if len(both) > 20 else "")
    raise ValueError(f"--metric {', '.join(map(repr, missing))}: neither run logged it; "
                     f"metrics both runs logged: {shown or 'none'}")


def _min_max(ya: list[float], yb: list[float]) -> list[str]:
    fa = [y for y in ya if math.isfinite(y)] or [math.nan]
    fb = [y for y in yb if math.isfinite(y)] or [math.nan]
    return [fmt(min(fa)), fmt(min(fb)), fmt(max(fa)), fmt(max(fb))]
