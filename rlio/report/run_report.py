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
    """The objects of a JSONL file, streamed; blank, bad and torn lines are counted, skipped.

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
#: Keys only training lines carry: async eval lines repeat or trail a step, they don't resume.
_TRAINING_KEYS = ("progress/batch", "progress/done_frac", "env/all/reward/total")


def _read_metrics(storage: Storage, wanted: Sequence[str]) -> MetricsScan:
    """Stream ``metrics.jsonl`` once, keeping only the wanted (and eval reward) columns.

    x is ``step``, else ``progress/batch``, else ``training_client/step``, else the record's
    index. Evaluator reward keys (``<name>/env/all/reward/total``) are charted as they appear.
    """
    m = MetricsScan(present=storage.stat(layout.METRICS) is not None)
    want = dict.fromkeys(wanted)
    evals = 0
    x_kind = len(_X_KEYS)
    last_train_x: float | None = None
    for rec in _iter_jsonl(storage, layout.METRICS, m.stats):
        if not m.keys.keys() >= rec.keys():
            for k in rec:
                if k not in m.keys:
                    m.keys[k] = None
                    if (k.endswith(_EVAL_REWARD_SUFFIX) and k not in want
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
        if any(k in rec for k in _TRAINING_KEYS):
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


def _read_checkpoints(storage: Storage) -> CheckpointScan:
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


def _validation(run: str, own: str | None) -> Any | None:
    """``validate_run(run)``, less the one finding the report causes: itself as an unknown file."""
    mod = _optional_module("validate")
    if mod is None:
        return None
    report = mod.validate_run(run)
    mine = [f for f in report.findings if f.file == own and f.code == "RL301"]
    if not mine:
        return report
    from .findings import Report

    kept = [f for f in report.findings if f not in mine]
    return Report.build(report.run, kept, layout=getattr(report, "layout", None))


# --------------------------------------------------------------------------- links


def _is_uri(location: str) -> bool:
    head, sep, _ = location.partition("://")
    return bool(sep) and head.isidentifier()


def _local_output(output: str) -> str | None:
    """The absolute local path of ``output``, or None when it is a remote URI."""
    if _is_uri(output) and not output.startswith("file://"):
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


def _linker(storage: Storage, output: str | None) -> Callable[[str], str]:
    """``rel -> href``: relative from where the page is written; absolute URIs when a local page
    shows a remote run (or the reverse)."""
    inside = _run_relative(storage, output)
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
    except (DecodeError, ValueError, RecursionError):
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
            report = _validation(run_s, _run_relative(storage, output))
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
    if output is not None and _local_output(output) is not None and os.path.isdir(
            output.removeprefix("file://")):
        output = os.path.join(output, REPORT_NAME)
    page = render_run_report(run_s, metrics=metrics, output=output, validate=validate).encode()
    if output is None:
        storage = open_storage(run_s)
        storage.replace(REPORT_NAME, page)
        return storage.display(REPORT_NAME)
    local = _local_output(output)
    if local is not None:
        parent, base = os.path.split(local)
    else:
        parent, _, base = output.rstrip("/").rpartition("/")
    open_storage(parent or ".", create=True).replace(base, page)
    return output
