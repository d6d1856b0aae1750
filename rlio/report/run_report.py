"""``rlio report``: one self-contained HTML page for a whole run, and the iteration and prompt
pages it links to.

The page shows the main metrics as inline SVG charts (downsampled, so a run of a million lines
stays small), reward distributions, the checkpoint timeline with the resume point, the validation
summary and every iteration's page. It needs no script and loads nothing: a strict
Content-Security-Policy forbids both, and every piece of run text is escaped.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Sequence
from urllib.parse import quote

from rlio import layout
from rlio._codec.jsonl import DecodeError, decode
from rlio.errors import UnknownMetricError
from rlio.findings import Report
from rlio.report import page as _page
from rlio.report import svg as _svg
from rlio.report.columns import EVAL_REWARD_SUFFIX, MetricsScan
from rlio.report.iterations import index_run, iterate, place_pages
from rlio.report.prompts import PromptTracker, prompt_location, prompts_view, render_prompt_page
from rlio.report.reading import (
    MetricsObserver,
    read_checkpoints,
    read_metrics,
    resume_point,
    validation,
)
from rlio.report.trajectories import (
    Rollouts,
    extremes_view,
    grpo_view,
    iterations_view,
    rewards_view,
)
from rlio.report.usual import closest_keys, usual_keys
from rlio.storage.base import Storage
from rlio.storage.opener import open_storage
from rlio.storage.run_root import open_run_storage

#: File name of the report when it is written inside the run.
REPORT_NAME = "report.html"
_MAX_CONFIG_CHARS = 20_000


def _local_output(output: str) -> str | None:
    """The absolute local path of ``output``, or None when it is a remote URI."""
    scheme, sep, _ = output.partition("://")
    if sep and scheme.isidentifier() and scheme != "file":
        return None
    return os.path.abspath(output.removeprefix("file://"))


def _run_relative(storage: Storage, output: str | None) -> str | None:
    """The page's run-relative path when it is written inside the run, else None."""
    if output is None:
        return REPORT_NAME
    root = storage.root.rstrip("/")
    local = _local_output(output)
    if storage.is_local and local is not None:
        rel = os.path.relpath(local, os.path.abspath(root))
        return None if rel.startswith(os.pardir) else rel.replace(os.sep, "/")
    return output[len(root) + 1:] if output.startswith(root + "/") else None


def _linker(storage: Storage, output: str | None, inside: str | None) -> Callable[[str], str]:
    """``rel -> href``: relative from where the page is written; absolute URIs when a local page
    shows a remote run (or the reverse)."""
    if inside is not None:
        base = posixpath.dirname(inside) or "."
        return lambda rel: quote(posixpath.relpath(rel, base))
    local = None if output is None else _local_output(output)
    if storage.is_local and local is not None:
        base, run_abs = os.path.dirname(local), os.path.abspath(storage.root)
        return lambda rel: quote(
            os.path.relpath(os.path.join(run_abs, *rel.split("/")), base).replace(os.sep, "/"))
    return lambda rel: quote(storage.display(rel), safe=":/")


def _chart_keys(m: MetricsScan, extra: Sequence[str]) -> list[str]:
    """The usual keys the run logged (``rlio.report.usual``), evaluator rewards, then the
    user's keys."""
    keys = usual_keys(k for k in m.keys if k in m.columns)
    keys += [k for k in m.columns if k.endswith(EVAL_REWARD_SUFFIX) and k not in keys]
    keys += [k for k in extra if k not in keys]
    return keys


def _check_metrics(m: MetricsScan, metrics: Sequence[str], run: str) -> None:
    """Refuse a ``--metric`` key the run never logged, naming the closest keys."""
    for key in metrics:
        if key in m.keys:
            continue
        close = closest_keys(key, m.keys)
        hint = (f"; closest: {', '.join(close)}" if close else
                f"; it logs {len(m.keys):,} keys (rlio show {run} lists them)" if m.keys else
                "; it logs no metrics")
        raise UnknownMetricError(f"metric {key!r} is not in {run}'s metrics.jsonl{hint}",
                                 key=key, closest=close)


def _read_config(storage: Storage) -> tuple[str, bool] | None:
    """``config.json`` pretty-printed (at most ``_MAX_CONFIG_CHARS``) and whether it was cut."""
    entry = storage.stat(layout.CONFIG)
    if entry is None or entry.kind != "file":
        return None
    data = storage.read_range(layout.CONFIG, 0, 4 * _MAX_CONFIG_CHARS)
    try:
        text = json.dumps(decode(data)[0], indent=2, ensure_ascii=False)
    except (DecodeError, ValueError, RecursionError):
        text = data.decode("utf-8", "replace")
    return text[:_MAX_CONFIG_CHARS], len(text) > _MAX_CONFIG_CHARS or entry.size > len(data)


def _render(run_s: str, metrics: Sequence[str], output: str | None, validate: bool,
            write: Callable[[str, bytes], None] | None) -> str:
    storage = open_run_storage(run_s)
    wanted = list(metrics)
    inside = _run_relative(storage, output)
    report_name = REPORT_NAME if output is None else (
        posixpath.basename(output.rstrip("/")) or REPORT_NAME)
    folder = posixpath.splitext(report_name)[0] or "report"
    verdict: Report | str = ""
    observer = MetricsObserver(storage, wanted)  # the charts: the validator's parse
    if validate:
        try:
            verdict = validation(run_s, inside, folder, observer)
        except Exception as exc:  # the page still shows metrics when the validator fails
            verdict = f"{type(exc).__name__}: {exc}"
    m = observer.scan if observer.scan is not None else read_metrics(storage, wanted)
    _check_metrics(m, metrics, run_s)
    ckpts = read_checkpoints(storage)
    resume = resume_point(run_s)
    idx = index_run(storage)
    places = place_pages(storage, idx, folder, inside is not None and "/" not in inside)
    run_href = _linker(storage, output, inside)
    rollouts, tracker = Rollouts(), PromptTracker()
    for p, trajs, transcripts in iterate(storage, places, report_name, run_href, write):
        rollouts.add(p.split, p.iteration, trajs, quote(p.location), transcripts)
        tracker.add(p.split, p.iteration, p.location, transcripts, trajs)
    prompt_href: dict[str, str] = {}
    for track in tracker.pages():
        loc = prompt_location(folder, track.key)
        prompt_href[track.key] = quote(loc)
        if write is not None:
            write(loc, render_prompt_page(track, loc, report_name).encode())
    name = posixpath.basename(storage.root.rstrip("/")) or storage.root
    x_max = max([m.last_x or 0.0, *(c.last_x for k, c in m.columns.items() if k not in m.axes)])
    evals = sorted(s for s in idx.splits if s.startswith("eval/"))
    last = f" (last {m.x_label} {_svg.fmt(m.last_x)})" if m.last_x is not None else ""
    facts = [
        ("location", storage.display("")),
        ("layout", idx.layout or "no per-iteration files"),
        ("metrics records", f"{m.records:,}{last}"),
        ("iteration pages", f"{len(idx.splits.get('train', {})):,} training" + (
            f", evaluators: {', '.join(e.removeprefix('eval/') for e in evals)}" if evals else "")),
        ("checkpoints", f"{len(ckpts.records):,}"),
        ("files", f"{idx.files:,}"),
    ]
    listing, timing = iterations_view(rollouts, idx.timing, run_href)
    sections = {
        "metrics": _page.metrics_view(m, _chart_keys(m, metrics)),
        "rewards": rewards_view(rollouts) if rollouts.boxes else None,
        "grpo": grpo_view(rollouts),
        "extremes": extremes_view(rollouts),
        "prompts": prompts_view(tracker, prompt_href),
        "checkpoints": _page.checkpoints_view(ckpts, resume, x_max),
        "validation": _page.validation_view(verdict) if validate else None,
        "iterations": listing,
        "timing": timing,
    }
    return _page.render_report(name, facts, _read_config(storage), sections)


def render_run_report(run: str | os.PathLike[str], *, metrics: Sequence[str] = (),
                      output: str | None = None, validate: bool = True) -> str:
    """The report page of ``run`` (a local path or URI) as an HTML string; only the page (the
    iteration and prompt pages it links to are written by ``write_run_report``).

    Args:
        metrics: metric keys to chart besides the usual ones the run logged (reward, KL,
            entropy, learning rate, tokens, cost, time...: ``rlio.report.usual``).
        output: where the page will be written (links are made relative to it); None means
            ``<run>/report.html``.
        validate: include the validation summary (runs ``rlio.validate.validate_run``).

    Raises:
        RunNotFoundError: the run does not exist.
        UnknownMetricError: a key of ``metrics`` is not in the run's metrics (names the
            closest keys).
    """
    return _render(os.fspath(run), metrics, output, validate, None)


def write_run_report(run: str | os.PathLike[str], *, output: str | None = None,
                     metrics: Sequence[str] = (), validate: bool = True) -> str:
    """Write the report page of ``run`` (a local path or URI) and its pages; where it went.

    ``output`` is a local path or URI for the page (a local directory gets ``report.html``
    inside), default ``<run>/report.html``. Every page is replaced atomically but not synced
    (``replace_derived``): it is derived from the run and can be written again. ``metrics`` and
    ``validate`` are ``render_run_report``'s.

    Raises:
        NotARunError: ``run`` is missing or not a run (nothing is written).
    """
    run_s = os.fspath(run)
    open_run_storage(run_s)  # nothing is written for a location that is not a run
    local = None if output is None else _local_output(output)
    if output is not None and local is not None and os.path.isdir(local):
        output, local = os.path.join(output, REPORT_NAME), os.path.join(local, REPORT_NAME)
    if output is None:
        target, base = open_storage(run_s), REPORT_NAME
    else:
        if local is not None:
            parent, base = os.path.split(local)
        else:
            parent, _, base = output.rstrip("/").rpartition("/")
        target = open_storage(parent or ".", create=True)
    # every page is derived from the run and can be written again: atomic, but not synced
    page = _render(run_s, metrics, output, validate, target.replace_derived).encode()
    target.replace_derived(base, page)
    return output if output is not None else target.display(REPORT_NAME)
