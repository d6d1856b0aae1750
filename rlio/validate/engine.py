"""validate_run(): check a run directory against the schemas and docs/format.md's cross-file rules.

One pass over the run: list it (never following a symbolic link), classify every entry by its name
(``rlio.layout``), stream each file through its schema and the checks its kind declares
(``rlio.validate.scan``, ``rlio.validate.checks.registry``), in the registry's run order, then
run the cross-file checks. Only the ``Storage`` interface is used, so a
``gs://`` run is validated the same way as a local one. Bad data never raises: it becomes a finding.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any, Final

import orjson

from rlio import layout
from rlio._codec.lines import MAX_LINE, ForwardLines, next_line_start
from rlio.errors import RunNotFoundError, StorageUnavailableError
from rlio.findings import Finding, Report, finding
from rlio.storage.base import Entry, Storage
from rlio.storage.listed import ListedStorage
from rlio.storage.opener import open_storage
from rlio.storage.run_root import no_run, top_level_names
from rlio.validate.checks.cross_file import CROSS_FILE_CHECKS
from rlio.validate.checks.registry import (
    KIND_CHECKS,
    NO_CHECKS,
    RUN_ORDER,
    KindChecks,
    RecordChecks,
)
from rlio.validate.checks.rollout_lines import PairOrder, duplicate_pairs
from rlio.validate.checks.view import RunView
from rlio.validate.parallel import RangeResult, RangeTask, RemoteScan, scan_range
from rlio.validate.scan import (
    MAX_DOCUMENT,
    Sink,
    capped,
    check_document,
    check_html,
    check_utf8_text,
    scan_jsonl,
)

#: Rollout-summary files at least this large are split across processes (when ``jobs`` > 1).
PARALLEL_MIN_BYTES: Final = 48 << 20
_HTML_SNIFF: Final = 1024
#: The head start of this process over a helper, which first starts an interpreter (~0.12 s):
#: half of what one process scans meanwhile (~170 MB/s), so that both finish together.
_HELPER_START_BYTES: Final = 10 << 20
#: A document at least this large is first given to its kind's ``large_document`` check: parsed
#: whole, a logtree takes over ten times its size in memory (benchmarks/fleet.py, peak memory).
LARGE_DOCUMENT: Final = 8 << 20
#: Kinds whose files are reported, never read.
_NOT_VALIDATED: Final = ("unknown", "sidecar")
#: ``validate_run(observe=...)``: ``(file kind, sink, record checks) -> record checks``.
Observe = Callable[[str, Sink, "RecordChecks | None"], "RecordChecks | None"]


def validate_run(
    location: str | os.PathLike[str], *, max_findings_per_code: int = 100,
    jobs: int | None = None, observe: Observe | None = None,
) -> Report:
    """Validate the run directory at ``location`` (local path or URI).

    Args:
        location: the run's ``log_path``.
        max_findings_per_code: findings of one code listed per file; the rest are counted in one
            RL112 finding.
        jobs: processes used for very large rollout-summary files (None: 2 when the machine has
            two cores or more, else 1).
        observe: ``(kind, sink, checks) -> checks``: may wrap a JSONL file's record checks to
            see its parsed records too (the run report reads its charts from this one parse).

    Returns:
        The report: every finding, sorted by (file, line, pointer, code).

    Raises:
        RunNotFoundError: the run does not exist or cannot be listed. Bad data never raises.
        NotARunError: ``location`` is missing, a file, or a folder that is not a run
            (``rlio.layout.is_run_root``).
        StorageUnavailableError: a cloud store that cannot be reached (or has no credentials).
    """
    return validate_run_sized(location, max_findings_per_code=max_findings_per_code,
                              jobs=jobs, observe=observe)[0]


def validate_run_sized(
    location: str | os.PathLike[str], *, max_findings_per_code: int = 100,
    jobs: int | None = None, observe: Observe | None = None, entries: list[Entry] | None = None,
) -> tuple[Report, int, int]:
    """``validate_run`` and how much it read: ``(report, files, bytes)`` (for progress).

    ``entries``: the run's listing, when the caller has it (a fleet lists an object-store
    prefix once for all its runs): the run is then neither looked up nor listed again.
    """
    loc = os.fspath(location)
    try:
        storage = open_storage(loc, listed=entries is not None)
        if entries is not None:
            storage = ListedStorage(storage, entries)
    except RunNotFoundError:
        raise no_run(loc) from None
    except StorageUnavailableError:
        raise  # the store cannot be reached: not "no run here"
    except (OSError, ValueError, NotImplementedError, ImportError) as exc:
        raise RunNotFoundError(errno.ENOENT, f"run cannot be opened ({exc})", loc) from exc
    entries = require_run(storage, loc)
    jobs = min(2, os.cpu_count() or 1) if jobs is None else max(1, jobs)
    validator = Validator(storage, loc, cap=max_findings_per_code, jobs=jobs, observe=observe)
    findings = validator.run(entries)
    report = Report.build(utf8(loc), findings, layout=validator.layout)
    return report, len(validator.sizes), sum(validator.sizes.values())


def require_run(storage: Storage, location: str) -> list[Entry]:
    """The entries of the run at ``location``; raises unless it is a run that can be listed
    (``NotARunError`` in the words of ``rlio.storage.run_root.no_run``)."""
    if storage.is_local:
        if not os.path.isdir(storage.root):
            raise no_run(location)
        top_level_names(storage, location)  # a folder that cannot be listed says so
    try:  # (an object store: one listing, the walk's)
        entries = list(storage.walk())
    except (RunNotFoundError, StorageUnavailableError):
        raise  # said already; an unreachable store is not "cannot list the run"
    except OSError as exc:
        raise RunNotFoundError(errno.EIO, f"run cannot be listed ({exc})", location) from exc
    if not layout.is_run_root(e.path for e in entries if "/" not in e.path):
        raise no_run(location)
    return entries


def utf8(text: str) -> str:
    """``text`` as valid UTF-8 (undecodable file-name bytes become ``\\xNN`` escapes)."""
    if text.isascii():
        return text
    try:  # (valid UTF-8 text comes back as it is)
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _clean(f: Finding) -> Finding:
    """A finding whose strings all encode as UTF-8 (JSON output must never fail)."""
    file, pointer, message = utf8(f.file), utf8(f.pointer), utf8(f.message)
    message = message.replace("\r", " ").replace("\n", " ") or "(no message)"
    if (file, pointer, message) == (f.file, f.pointer, f.message):
        return f
    return Finding(f.code, f.severity, file, f.line, pointer, message)


class Validator:
    """One validation of one run: the per-file pass, then the cross-file checks."""

    def __init__(self, storage: Storage, location: str, *, cap: int, jobs: int,
                 observe: Observe | None = None) -> None:
        self.storage = storage
        self.location = location
        self.cap = cap
        self.jobs = jobs
        self.observe = observe
        self.findings: list[Finding] = []
        self.layout: str | None = None
        self.sizes: dict[str, int] = {}

    def run(self, entries: list[Entry]) -> list[Finding]:
        """Validate every entry of the run, then run the cross-file checks."""
        self.sizes = {e.path: e.size for e in entries if e.kind == "file"}
        view = self._classify(entries)
        view.storage = self.storage
        self.layout = view.layout
        rank = {kind: i for i, kind in enumerate(RUN_ORDER)}
        for rel in sorted(view.files, key=lambda r: (rank.get(view.files[r].kind, len(rank)), r)):
            facts = self._guard(rel, view)
            name = KIND_CHECKS.get(view.files[rel].kind, NO_CHECKS).facts
            if name is not None:
                setattr(view, name, facts)
        for check in CROSS_FILE_CHECKS:
            self.findings.extend(check(view))
        return [_clean(f) for f in self.findings]

    def _classify(self, entries: list[Entry]) -> RunView:
        """The run's regular files of known kinds; a finding for each other entry."""
        files: dict[str, layout.RunPath] = {}
        present: dict[str, str] = {}
        display: dict[str, str] = {}
        hidden: set[str] = set()  # directories where a file belongs: contents not validated
        unknown = 0
        for e in entries:
            rel = e.path
            shown = display[rel] = rel if rel.isascii() else utf8(rel)
            if hidden and any(rel.startswith(d + "/") for d in hidden):
                continue
            present[rel] = e.kind
            rp = layout.parse_path(rel)
            name = rel.rsplit("/", 1)[-1]
            if e.kind == "dir":
                if rp.kind not in _NOT_VALIDATED:
                    self._add("RL107", shown, f"{shown} is a directory where a {rp.kind} file "
                                              "belongs")
                    hidden.add(rel)
            elif layout.is_temp_file(name):
                self._add("RL306", shown, "temporary file left by an interrupted atomic write "
                                          "(safe to delete once no writer runs)")
            elif e.kind == "symlink":
                where = "inside" if e.target_inside else "out of"
                self._add("RL303", shown, f"symbolic link pointing {where} the run; never followed")
            elif e.kind == "other" and rp.kind in _NOT_VALIDATED:
                self._add("RL301", shown, "not a regular file (fifo, socket or device); not read")
            elif e.kind == "other":
                self._add("RL107", shown, f"{shown} is not a regular file (fifo, socket or device) "
                                          f"where a {rp.kind} file belongs; not read")
            elif rp.kind == "sidecar":
                self._add("RL305", shown, "the cookbook's copy of metrics.jsonl from before it "
                          "rewound on resume; not validated" if ".pre_resume_" in rel else
                          "sidecar kept by rlio (a torn tail or lines a resume superseded); not "
                          "validated")
            elif rp.kind == "unknown":
                unknown += 1
                if unknown <= self.cap:
                    self._add("RL301", shown, "file matches no known pattern; not validated")
            else:
                if rp.problem is not None:
                    self._add("RL302", shown, rp.problem)
                if rp.kind == "capture":
                    self._add("RL307", shown, f"capture kind {layout.capture_kind(rel)!r} has no "
                              "schema in rlio (known: "
                              f"{', '.join(layout.CAPTURE_KINDS)}); only kind, scope and "
                              "created_at are checked")
                files[rel] = rp
        if unknown > self.cap:
            self.findings.append(capped("RL301", unknown - self.cap, self.cap, file=""))
        return RunView(layout.layout_of(rp.layout for rp in files.values()), files, present,
                       display)

    def _add(self, code: str, file: str, message: str) -> None:
        self.findings.append(finding(code, message, file=file))

    def _guard(self, rel: str, view: RunView) -> Any:
        """``file``; an I/O error (or a validator bug) becomes RL107, never a raise."""
        shown = view.display[rel]
        try:
            return self.file(rel, view)
        except OSError as exc:
            self._add("RL107", shown, f"cannot be read: {exc.strerror or exc}")
        except Exception as exc:  # a validator bug must not crash a CI job: report it instead
            self._add("RL107", shown, f"could not be validated ({type(exc).__name__}: {exc})"[:300])
        return None

    def record_checks(self, rp: layout.RunPath, sink: Sink, view: RunView) -> RecordChecks | None:
        """The record checks of one JSONL file (as ``observe`` wraps them)."""
        factory = KIND_CHECKS.get(rp.kind, NO_CHECKS).records
        hook = factory(sink, rp, view) if factory is not None else None
        return self.observe(rp.kind, sink, hook) if self.observe is not None else hook

    def file(self, rel: str, view: RunView) -> Any:
        """Read one file as its kind's row says and run its kind's checks; the checks' facts."""
        rp = view.files[rel]
        kind = layout.KINDS[rp.kind]
        checks = KIND_CHECKS.get(rp.kind, NO_CHECKS)
        sink = Sink(view.display[rel], self.cap)
        try:
            if checks.ranged:
                self._rollouts(rel, rp, sink)
            elif kind.format == "jsonl":
                hook = self.record_checks(rp, sink, view)
                with self.storage.open_read(rel) as stream:
                    scan_jsonl(stream, sink, schema=kind.schema or "",
                               append_only=kind.append_only, on_record=hook)
                return hook.finish() if hook is not None else None
            elif kind.format == "json":
                self._document(rel, rp, kind, sink, checks)
            elif kind.format == "html":
                size = self._size(rel)
                head = self.storage.read_range(rel, 0, _HTML_SNIFF)
                tail = self.storage.read_range(rel, max(0, size - _HTML_SNIFF), size)
                check_html(head, tail, size, sink, chart=checks.chart)
            elif kind.format == "text":
                with self.storage.open_read(rel) as stream:
                    check_utf8_text(stream, sink)
        finally:
            self.findings.extend(sink.finish())
        return None

    def _size(self, rel: str) -> int:
        """The size the listing gave (one stat per file saved), else asked of the storage."""
        size = self.sizes.get(rel)
        return self.storage.size(rel) if size is None else size

    def _document(self, rel: str, rp: layout.RunPath, kind: layout.FileKind, sink: Sink,
                  checks: KindChecks) -> None:
        size = self._size(rel)
        if size > MAX_DOCUMENT:
            sink.add("RL114", f"document is {size >> 20} MiB, over the validator's "
                              f"{MAX_DOCUMENT >> 20} MiB limit; not parsed")
            return
        # a large document is millions of containers that all live until the checks end: a
        # collection pass finds no garbage among them, and several would run during the parse
        enabled = gc.isenabled()
        gc.disable()
        try:
            data = self.storage.read_bytes(rel)
            large = checks.large_document
            if large is not None and len(data) >= LARGE_DOCUMENT and large(data, sink, rp):
                return
            parsed, doc = check_document(data, sink, schema=kind.schema or "", kind=rp.kind)
            del data
            if parsed and checks.document is not None:
                checks.document(doc, sink, rp)
            del doc
        finally:
            if enabled:
                gc.enable()

    def _rollouts(self, rel: str, rp: layout.RunPath, sink: Sink) -> None:
        """Stream a rollout-summary file by byte ranges, split across processes when very large."""
        size = self._size(rel)
        if size == 0:
            return
        # helper processes reopen the run by its location: only local runs are worth it (a
        # memory:// run is invisible to another process; object stores are network-bound)
        parts = self.jobs if size >= PARALLEL_MIN_BYTES and self.storage.is_local else 1
        tasks = [RangeTask(self.location, rel, sink.file, rp.iteration, rp.label, a, b,
                           b >= size, self.cap) for a, b in self._split(rel, size, parts)]
        if len(tasks) == 1:  # the whole file here, into this sink: no helpers, nothing to merge
            order = scan_range(tasks[0], self.storage, sink).order
        else:
            offset = 0
            order = PairOrder()
            for res in self._run_ranges(tasks):
                sink.merge(res.sink, offset)
                offset += res.lines
                order = order.then(res.order)
        if not order.ordered:
            duplicate_pairs(self._records(rel), sink)

    def _split(self, rel: str, size: int, parts: int) -> list[tuple[int, int]]:
        """``parts`` byte ranges of the file, each starting on a line boundary."""
        points = [0]
        # this process starts at once; helpers first start an interpreter: give it a head start
        shift = min(size // (4 * parts), _HELPER_START_BYTES)
        for k in range(1, parts):
            off = max(size * k // parts + shift, points[-1])
            points.append(next_line_start(self.storage, rel, off, size))
        points.append(size)
        return [(a, b) for a, b in itertools.pairwise(points) if b > a]

    def _run_ranges(self, tasks: list[RangeTask]) -> list[RangeResult]:
        remote: list[RemoteScan | None] = []
        for task in tasks[1:]:
            try:
                remote.append(RemoteScan(task))
            except (OSError, ValueError):
                remote.append(None)
        try:
            results = [scan_range(tasks[0], self.storage)]
            for task, scan in zip(tasks[1:], remote, strict=True):
                try:
                    results.append(scan.result() if scan is not None else
                                   scan_range(task, self.storage))
                except Exception:  # whatever broke the helper, the range is scanned here
                    results.append(scan_range(task, self.storage))
        finally:
            for scan in remote:
                if scan is not None:
                    scan.cancel()
        return results

    def _records(self, rel: str) -> Iterator[tuple[int, Any]]:
        """Every decodable record of a JSONL file with its line (for the duplicate-pair pass)."""
        with self.storage.open_read(rel) as stream:
            for n, line, _ in ForwardLines(stream, max_line=MAX_LINE):
                if line is not None:
                    with contextlib.suppress(orjson.JSONDecodeError):
                        yield n, orjson.loads(line)
