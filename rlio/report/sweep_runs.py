"""What ``rlio compare`` reads from each run of a sweep: one ``RunSummary`` per run.

``summarize`` is module-level and returns plain values, so the fleet's executor (a process pool,
a Dask cluster) reads the runs in parallel. A run is read with the reader (``rlio.reader``): its
config flattened to key paths, its metrics per step (the latest value of a step wins; a training
line whose step drops back, a resume, drops every point at or past it), its checkpoints, and, when
prompts are compared, its logtrees through the report's own iteration walk and prompt key.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rlio.errors import RunNotFoundError
from rlio.reader.run import Run, open_run, run_status
from rlio.reader.table import flatten
from rlio.report.iterations import index_run, iterate, place_pages
from rlio.report.prompts import PromptTracker
from rlio.rules import TRAINING_KEYS, X_AXIS_KEYS
from rlio.storage.base import Entry
from rlio.storage.listed import listed

#: The x axes a chart can use, and what each is read from (docs/format.md §11, compare).
AXES: Final = ("step", "tokens", "cost", "time")
_TOKENS_PREFIX: Final = "tokens/cumulative/"
_COST_KEY: Final = "cost/cumulative_usd"
_TIME_KEY: Final = "time/total"
#: A key is a default metric candidate when its name holds one of these words.
_DEFAULT_WORDS: Final = ("reward", "loss")
#: Only the first keys of a run are candidates (a run logging a key per step stays bounded).
_MAX_CANDIDATE_KEYS: Final = 10_000


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool)."""
    return type(v) in (int, float) and math.isfinite(v)


def lower_is_better(key: str) -> bool:
    """Whether the best value of ``key`` is its lowest (a loss), not its highest."""
    return "loss" in key.lower()


@dataclass(frozen=True, slots=True)
class MetricStats:
    """One metric of one run: last value and its step, best value and its step, and the
    points drawn against the chosen x axis (downsampled by the page)."""

    last: float
    last_step: int
    best: float
    best_step: int
    xs: tuple[float, ...]
    ys: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class PromptResult:
    """One prompt of one run: its reward (mean at the last iteration logging it) and where
    its first transcript there is, relative to the run (the run report's page and anchor)."""

    label: str
    reward: float
    iteration: int
    page: str


@dataclass
class RunSummary:
    """Everything the comparison page shows of one run."""

    name: str
    location: str
    local: bool = True
    error: str | None = None
    status: str = ""
    iterations: int = 0
    last_checkpoint: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # metric keys, first-seen order
    metrics: dict[str, MetricStats] = field(default_factory=dict)
    has_axis: bool = True
    prompts: dict[tuple[str, str], PromptResult] = field(default_factory=dict)


def _step_of(rec: Mapping[str, Any]) -> int | None:
    for k in X_AXIS_KEYS:
        v = rec.get(k)
        if type(v) is int:
            return v
    return None


class _Steps:
    """Per-step values of the wanted keys and of the x axis, as the metrics stream."""

    def __init__(self, wanted: Iterable[str], axis: str) -> None:
        self.wanted = set(wanted)
        self.axis = axis
        self.values: dict[str, dict[int, float]] = {}
        self.x: dict[int, float] = {}
        self.keys: dict[str, None] = {}
        self.train_steps: set[int] = set()
        self.all_steps: set[int] = set()
        self._last_train: int | None = None
        self._elapsed = 0.0

    def add(self, rec: Mapping[str, Any]) -> None:
        if not self.keys.keys() >= rec.keys():
            self._new_keys(rec)
        step = _step_of(rec)
        if step is None:
            return  # a summary row without a step: no point on a per-step chart
        self.all_steps.add(step)
        if not rec.keys().isdisjoint(TRAINING_KEYS):
            self._training(step, rec)
        for k in self.wanted.intersection(rec):
            v = rec[k]
            if is_number(v):
                self.values.setdefault(k, {})[step] = float(v)

    def _new_keys(self, rec: Mapping[str, Any]) -> None:
        """Note keys met for the first time; a reward or loss key becomes a candidate."""
        for k in rec:
            if k not in self.keys:
                self.keys[k] = None
                if len(self.keys) <= _MAX_CANDIDATE_KEYS and any(
                        w in k.lower() for w in _DEFAULT_WORDS):
                    self.wanted.add(k)

    def _training(self, step: int, rec: Mapping[str, Any]) -> None:
        if self._last_train is not None and step < self._last_train:  # a resume: cut back
            for col in (*self.values.values(), self.x):
                for s in [s for s in col if s >= step]:
                    del col[s]
            self.train_steps = {s for s in self.train_steps if s < step}
            self._elapsed = max((v for s, v in self.x.items() if s < step), default=0.0)
        self._last_train = step
        self.train_steps.add(step)
        x = self._axis_value(rec)
        if x is not None:
            self.x[step] = x

    def _axis_value(self, rec: Mapping[str, Any]) -> float | None:
        if self.axis == "step":
            return None
        if self.axis == "cost":
            v: Any = rec.get(_COST_KEY)
            return float(v) if is_number(v) else None
        if self.axis == "tokens":
            parts = [v for k, v in rec.items() if k.startswith(_TOKENS_PREFIX) and is_number(v)]
            return float(sum(parts)) if parts else None
        v = rec.get(_TIME_KEY, None)  # time: the running sum of each iteration's time/total
        if not is_number(v):
            return None
        self._elapsed += float(v)
        return self._elapsed


def _stats(values: dict[int, float], x: dict[int, float] | None, lower: bool) -> MetricStats:
    steps = sorted(values)
    ys = [values[s] for s in steps]
    best_i = min(range(len(ys)), key=lambda i: (ys[i], i)) if lower else \
        max(range(len(ys)), key=lambda i: (ys[i], -i))
    if x is None:
        xs = [float(s) for s in steps]
    else:
        kept = [s for s in steps if s in x]
        xs, ys = [x[s] for s in kept], [values[s] for s in kept]
    return MetricStats(values[steps[-1]], steps[-1], values[steps[best_i]], steps[best_i],
                       tuple(xs), tuple(ys))


def _prompts(run: Run) -> dict[tuple[str, str], PromptResult]:
    """Each (split, prompt key): its mean reward at the last iteration logging it with a reward,
    and the page (as ``rlio report RUN`` places it) and anchor of its first transcript there."""
    storage = run.storage
    idx = index_run(storage)
    places = place_pages(storage, idx, "report", True)
    tracker = PromptTracker()
    for p, trajs, transcripts in iterate(storage, places, "report.html", lambda r: r, None):
        tracker.add(p.split, p.iteration, p.location, transcripts, trajs)
    out: dict[tuple[str, str], PromptResult] = {}
    for track in tracker.tracks.values():
        for split, it, mean in track.mean_by_iteration():  # in order: the last one wins
            first = track.samples[(split, it)][0]
            page = f"{first.page}#traj-{first.group}-{first.traj}"
            out[(split, track.key)] = PromptResult(track.label(), mean, it, page)
    return out


def summarize(location: str, name: str, metrics: tuple[str, ...], axis: str,
              prompts: bool, *, listing: list[Entry] | None = None) -> RunSummary:
    """Read one run for the comparison (never raises for a run that cannot be read: ``error``).

    ``metrics``: the keys to summarize besides the default candidates (every numeric key whose
    name holds ``reward`` or ``loss``); ``axis``: one of ``AXES``; ``prompts``: also read the
    logtrees for the prompt comparison; ``listing``: its entries when a fleet's listing has them.
    """
    out = RunSummary(name, location, local="://" not in location or location.startswith("file:"))
    try:
        run = open_run(listed(location, listing))
        cfg = run.config()
        out.config = dict(flatten(cfg)) if cfg is not None else {}
        steps = _Steps(metrics, axis)
        for rec in run.iter_metrics():
            steps.add(rec)
        ckpts = run.checkpoints()
        if prompts:
            out.prompts = _prompts(run)
    except (RunNotFoundError, OSError) as exc:
        out.error = str(exc.strerror or exc)
        return out
    except Exception as exc:  # a reader bug must not take the comparison down: report it
        out.error = f"could not be read ({type(exc).__name__}: {exc})"
        return out
    out.status = run_status(ckpts)
    out.iterations = len(steps.train_steps or steps.all_steps)
    if ckpts:
        last = ckpts[-1]
        batch = last.get("batch")
        out.last_checkpoint = str(last.get("name")) + (f" (batch {batch})"
                                                       if type(batch) is int else "")
    out.keys = [k for k in steps.keys if k not in X_AXIS_KEYS]
    x = None if axis == "step" else steps.x
    out.has_axis = axis == "step" or bool(steps.x)
    for k, values in steps.values.items():
        if values:
            out.metrics[k] = _stats(values, x, lower_is_better(k))
    return out
