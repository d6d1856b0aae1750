"""``rlio report``: one self-contained HTML page for a whole run.

The page shows the main metrics against step as inline SVG charts (downsampled, so a run of a
million lines stays small), the checkpoint timeline with the resume point, the validation summary,
and links to every iteration's page. It reads the run only through ``rlio.storage`` (any backend)
and ``rlio._jsonl.decode`` (tolerant of NaN tokens, blank lines and a torn last line), streams the
JSONL files, needs no script and loads nothing: a strict Content-Security-Policy forbids both, and
every piece of run text is escaped.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import posixpath
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from . import _svg, layout
from . import _svg_page as _page
from ._jsonl import DecodeError, decode
from .storage import Storage, open_storage

#: File name of the report when it is written inside the run.
REPORT_NAME = "report.html"
#: Metrics charted by default, in this order (the KL chart takes v1, or v2 when v1 is absent).
DEFAULT_METRICS = ("env/all/reward/total", "progress/done_frac", "optim/kl_sample_train_v1",
                   "optim/entropy")
_KL_V1, _KL_V2 = "optim/kl_sample_train_v1", "optim/kl_sample_train_v2"
_EVAL_REWARD_SUFFIX = "/env/all/reward/total"
_MAX_EVAL_CHARTS = 8
_MAX_CONFIG_CHARS = 20_000


__all__ = ["DEFAULT_METRICS", "REPORT_NAME", "render_run_report", "write_run_report"]


# --------------------------------------------------------------------------- reading the run


def _iter_jsonl(storage: Storage, rel: str, stats: FileStats) -> Iterator[Any]:
    """Decoded records of a JSONL file, streamed; blank, bad and torn lines are counted, skipped."""
    with storage.open_read(rel) as f:
        for raw in f:
            stats.lines += 1
            if not raw.endswith(b"\n"):
                stats.torn = True  # what a crash leaves: readers ignore it (SPEC §2)
                return
            if not raw.strip():
                stats.blank += 1
                continue
            try:
                value, had_nonfinite = decode(raw)
            except DecodeError:
                stats.bad += 1
                continue
            stats.nonfinite_lines += had_nonfinite
            yield value


@dataclass
class FileStats:
    lines: int = 0
    blank: int = 0
    bad: int = 0
    nonfinite_lines: int = 0
    torn: bool = False

    def notes(self) -> list[str]:
        out = []
        if self.torn:
            out.append("the last line is torn (no final newline): ignored")
        if self.bad:
            out.append(f"{self.bad:,} line(s) are not JSON: skipped")
        if self.blank:
            out.append(f"{self.blank:,} blank line(s)")
        if self.nonfinite_lines:
            out.append(f"{self.nonfinite_lines:,} line(s) hold NaN/Infinity tokens")
        return out


@dataclass
class Column:
    xs: array[float] = field(default_factory=lambda: array("d"))
    ys: array[float] = field(default_factory=lambda: array("d"))
    ordered: bool = True
    skipped: int = 0  # null, NaN or infinite values

    def add(self, x: float, y: float) -> None:
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
    stats: FileStats = field(default_factory=FileStats)
    columns: dict[str, Column] = field(default_factory=dict)
    keys: dict[str, None] = field(default_factory=dict)  # every key seen, in first-seen order
    records: int = 0
    x_label: str = "line"
    last_x: float | None = None
    restarts: list[float] = field(default_factory=list)
    present: bool = False


def _number(v: Any) -> float | None:
    if type(v) is float or type(v) is int:  # bool is not a metric value
        return float(v)
    return None


def _read_metrics(storage: Storage, wanted: Sequence[str]) -> MetricsScan:
    """Stream ``metrics.jsonl`` once, keeping only the wanted (and eval reward) columns."""
    m = MetricsScan()
    if storage.stat(layout.METRICS) is None:
        return m
    m.present = True
    want = dict.fromkeys(wanted)
    seen: set[str] = set()
    x_kind = 3  # 0 step, 1 progress/batch, 2 training_client/step, 3 line index
    for rec in _iter_jsonl(storage, layout.METRICS, m.stats):
        if not isinstance(rec, dict):
            m.stats.bad += 1
            continue
        if not seen.issuperset(rec):
            for k in rec:
                if k not in seen:
                    seen.add(k)
                    m.keys[k] = None
                    if (k.endswith(_EVAL_REWARD_SUFFIX) and k not in want
                            and sum(1 for w in want if w.endswith(_EVAL_REWARD_SUFFIX))
                            <= _MAX_EVAL_CHARTS):
                        want[k] = None
        x: float | None = None
        for kind, name in enumerate(("step", "progress/batch", "training_client/step")):
            v = rec.get(name)
            if type(v) is int:
                x, x_kind = float(v), min(x_kind, kind)
                break
        if x is None:
            x = float(m.records)
        if m.last_x is not None and x < m.last_x:
            m.restarts.append(x)
        m.last_x = x
        m.records += 1
        for k in want:
            v = rec.get(k)
            if v is None and k not in rec:
                continue
            col = m.columns.get(k)
            if col is None:
                col = m.columns[k] = Column()
            y = _number(v)
            if y is None or not math.isfinite(y):
                col.skipped += 1
            else:
                col.add(x, y)
    m.x_label = ("step", "progress/batch", "training_client/step", "line")[x_kind]
    return m


@dataclass
class CheckpointScan:
    stats: FileStats = field(default_factory=FileStats)
    #: (1-based line, record, kind) with kind ``periodic``, ``rolling`` or ``final``.
    records: list[tuple[int, dict[str, Any], str]] = field(default_factory=list)
    present: bool = False


def _read_checkpoints(storage: Storage) -> CheckpointScan:
    c = CheckpointScan()
    if storage.stat(layout.CHECKPOINTS) is None:
        return c
    c.present = True
    for rec in _iter_jsonl(storage, layout.CHECKPOINTS, c.stats):
        if isinstance(rec, dict):
            c.records.append((c.stats.lines, rec, checkpoint_kind(rec)))
        else:
            c.stats.bad += 1
    return c


def checkpoint_kind(rec: dict[str, Any]) -> str:
    """``final`` (named ``final``), ``rolling`` (``rolling: true``) or ``periodic``."""
    if rec.get("name") == "final" or rec.get("final") is True:
        return "final"
    return "rolling" if rec.get("rolling") is True else "periodic"


@dataclass(frozen=True)
class ResumePoint:
    line: int | None  # 1-based line of the resumable record in checkpoints.jsonl
    batch: int | None
    text: str
    detail: str = ""


def _optional_module(name: str) -> Any | None:
    """Import ``rlio.<name>`` if this build has it (another part of rlio may not exist yet)."""
    try:
        return importlib.import_module(f"rlio.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"rlio.{name}":
            return None
        raise


def _resume_text(name: Any, batch: int | None, line: int | None) -> str:
    where = f"batch {batch}" if batch is not None else "an unknown batch (the record has none)"
    return f"restart at {where} from checkpoint {name!s} (checkpoints.jsonl line {line})"


def _resume_point(run: str, ckpts: CheckpointScan) -> ResumePoint | None:
    """Where a resume would restart: ``rlio.resume`` when present, else the ledger's last
    record with a ``state_path`` (SPEC §5)."""
    mod = _optional_module("resume")
    if mod is not None:
        try:
            state = mod.read_resume_state(run)
        except Exception as exc:  # a ResumeError is data to show, not a reason to fail the page
            return ResumePoint(getattr(exc, "line", None), None, f"cannot resume: {exc}")
        if state is None:
            return None
        batch = getattr(state, "next_batch", None)
        line = getattr(state, "line", None)
        name = getattr(state, "checkpoint", {}).get("name")
        describe = getattr(state, "describe", None)
        b = batch if type(batch) is int else None
        ln = line if type(line) is int else None
        return ResumePoint(ln, b, _resume_text(name, b, ln),
                           str(describe()) if callable(describe) else "")
    for line, rec, _kind in reversed(ckpts.records):
        if isinstance(rec.get("state_path"), str):
            batch = rec.get("batch")
            b = batch if type(batch) is int else None
            return ResumePoint(line, b, _resume_text(rec.get("name"), b, line))
    return None


@dataclass
class PageIndex:
    """Per-iteration pages found in the run, by split: {split: {iteration: path}}."""

    splits: dict[str, dict[int, str]] = field(default_factory=dict)
    layout: str | None = None
    files: int = 0


def _find_pages(storage: Storage) -> PageIndex:
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


def _validation(run: str) -> Any | None:
    mod = _optional_module("validate")
    return None if mod is None else mod.validate_run(run)


# --------------------------------------------------------------------------- links


def _is_uri(location: str) -> bool:
    head, sep, _ = location.partition("://")
    return bool(sep) and head.isidentifier()


def _linker(storage: Storage, output: str | None) -> Callable[[str], str]:
    """``rel -> href``: relative from where the report is written, absolute URIs otherwise."""
    if output is None:
        return lambda rel: quote(rel)
    root = storage.root.rstrip("/")
    if storage.is_local and (not _is_uri(output) or output.startswith("file://")):
        out = os.path.abspath(output.removeprefix("file://"))
        base = os.path.dirname(out)
        run_abs = os.path.abspath(root)
        return lambda rel: quote(
            os.path.relpath(os.path.join(run_abs, *rel.split("/")), base).replace(os.sep, "/"))
    if output.startswith(root + "/"):
        base = posixpath.dirname(output[len(root) + 1:])
        return lambda rel: quote(posixpath.relpath(rel, base or "."))
    return lambda rel: quote(storage.display(rel), safe=":/")


def _chart_keys(m: MetricsScan, extra: Sequence[str]) -> list[str]:
    """Defaults (KL v1, or v2 when only v2 was logged), eval rewards, then the user's keys."""
    keys = [k for k in DEFAULT_METRICS if k != _KL_V1]
    keys.insert(2, _KL_V1 if (_KL_V1 in m.columns or _KL_V2 not in m.columns) else _KL_V2)
    keys += [k for k in m.columns if k.endswith(_EVAL_REWARD_SUFFIX) and k not in keys]
    keys += [k for k in extra if k not in keys]
    return keys


def _read_config(storage: Storage) -> tuple[str, bool] | None:
    """``config.json`` pretty-printed (at most ``_MAX_CONFIG_CHARS``) and whether it was cut."""
    entry = storage.stat(layout.CONFIG)
    if entry is None or entry.kind != "file":
        return None
    data = storage.read_range(layout.CONFIG, 0, 4 * _MAX_CONFIG_CHARS)
    try:
        text = json.dumps(decode(data)[0], indent=2, ensure_ascii=False)
    except (DecodeError, ValueError):
        text = data.decode("utf-8", "replace")
    return text[:_MAX_CONFIG_CHARS], len(text) > _MAX_CONFIG_CHARS or entry.size > len(data)


def render_run_report(run: str | os.PathLike[str], *, metrics: Sequence[str] = (),
                      output: str | None = None, validate: bool = True) -> str:
    """The report page of ``run`` (a local path or URI) as an HTML string.

    Args:
        run: the run directory.
        metrics: metric keys to chart besides the defaults (reward, done fraction, KL, entropy).
        output: where the page will be written (links are made relative to it); None means
            ``<run>/report.html``.
        validate: include the validation summary (runs ``rlio.validate.validate_run``).

    Raises:
        RunNotFoundError: the run does not exist.
    """
    run_s = os.fspath(run)
    storage = open_storage(run_s)
    wanted = [*DEFAULT_METRICS, _KL_V2, *metrics]
    m = _read_metrics(storage, wanted)
    ckpts = _read_checkpoints(storage)
    resume = _resume_point(run_s, ckpts)
    pages = _find_pages(storage)
    report, v_error = None, None
    if validate:
        try:
            report = _validation(run_s)
        except Exception as exc:  # the page still shows metrics when the validator fails
            v_error = f"{type(exc).__name__}: {exc}"
    name = posixpath.basename(storage.root.rstrip("/")) or storage.root
    x_max = max([m.last_x or 0.0, *(max(c.xs, default=0.0) for c in m.columns.values())])
    evals = sorted(s for s in pages.splits if s.startswith("eval/"))
    last = f" (last {m.x_label} {_svg.fmt(m.last_x)})" if m.last_x is not None else ""
    facts = [
        ("location", storage.display("")),
        ("layout", pages.layout or "no per-iteration files"),
        ("metrics records", f"{m.records:,}{last}"),
        ("iteration pages", f"{len(pages.splits.get('train', {})):,} training" + (
            f", evaluators: {', '.join(e.removeprefix('eval/') for e in evals)}" if evals else "")),
        ("checkpoints", f"{len(ckpts.records):,}"),
        ("files", f"{pages.files:,}"),
    ]
    sections = [
        _page.section_metrics(m, _chart_keys(m, metrics)),
        _page.section_checkpoints(ckpts, resume, x_max),
        _page.section_validation(report, v_error) if validate else "",
        _page.section_iterations(pages, _linker(storage, output)),
    ]
    return _page.document(name, facts, _read_config(storage), sections)


def write_run_report(run: str | os.PathLike[str], *, output: str | None = None,
                     metrics: Sequence[str] = (), validate: bool = True) -> str:
    """Write the report page of ``run`` and return where it went.

    Args:
        run: the run directory (local path or URI).
        output: a local path or URI for the page (a local directory gets ``report.html`` inside);
            default ``<run>/report.html``. Written atomically through ``rlio.storage``.
        metrics: metric keys to chart besides the defaults.
        validate: include the validation summary.
    """
    run_s = os.fspath(run)
    if output is not None and not _is_uri(output) and os.path.isdir(output):
        output = os.path.join(output, REPORT_NAME)
    page = render_run_report(run_s, metrics=metrics, output=output, validate=validate).encode()
    if output is None:
        storage = open_storage(run_s)
        storage.replace(REPORT_NAME, page)
        return storage.display(REPORT_NAME)
    if not _is_uri(output) or output.startswith("file://"):
        parent, base = os.path.split(os.path.abspath(output.removeprefix("file://")))
    else:
        parent, _, base = output.rstrip("/").rpartition("/")
    open_storage(parent or ".", create=True).replace(base, page)
    return output
