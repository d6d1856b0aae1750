"""Incremental re-validation of a live run: each ``check()`` re-reads only what changed.

A file is known by its signature (size, modification time and inode on a local disk; size
elsewhere). An append-only JSONL log that only grew is read on from the end of its last complete
line, with its per-record checks' state kept between checks. A log is known to have only grown
by its identity and content, not its size alone: the same inode (locally), the same bytes just
before where it was read up to (``FINGERPRINT`` of them), and sidecars (``.torn``,
``.superseded``) that did not grow (a tail move appends to one before it cuts the log), so a log
cut back and regrown past the old offset is read again from its start, never from the middle
of a line. Any other changed file (replaced, shrunk, new) is validated again whole; an
unchanged file's findings and facts are reused. The cross-file checks run on every check (they
read the files' facts, not the files). The library never prints: ``check()`` returns the
findings that are new since the previous call.
"""

from __future__ import annotations

import contextlib
import copy
import os
from dataclasses import dataclass
from typing import Any

from rlio import layout
from rlio.errors import NotARunError
from rlio.findings import Finding, Report
from rlio.storage.base import Storage
from rlio.storage.opener import open_storage
from rlio.validate.checks.registry import KIND_CHECKS, NO_CHECKS, RecordChecks
from rlio.validate.checks.view import RunView
from rlio.validate.engine import Validator, require_run, utf8
from rlio.validate.scan import Sink, scan_jsonl

#: Bytes before a log's read offset whose hash must be unchanged for it to be read on from there.
FINGERPRINT = 4096


@dataclass
class _Log:
    """An append-only log read up to ``offset`` (the end of its last complete line)."""

    sig: tuple[int, ...]
    offset: int
    lines: int
    sink: Sink
    hook: RecordChecks | None
    restart: frozenset[int]
    sidecars: tuple[int, ...] = ()
    fingerprint: int = 0  # hash of the FINGERPRINT bytes before offset


class _Cached(Validator):
    """A validator that reuses the per-file results of the previous round."""

    def __init__(self, watcher: Watcher, storage: Storage, location: str) -> None:
        super().__init__(storage, location, cap=watcher.cap, jobs=1)
        self.w = watcher
        # this round's results, for the next
        self.files: dict[str, tuple[tuple[int, ...], list[Finding], Any]] = {}
        self.logs: dict[str, _Log] = {}

    def file(self, rel: str, view: RunView) -> Any:
        sig = self._signature(rel)
        rp = view.files[rel]
        kind = layout.KINDS[rp.kind]
        if kind.append_only and kind.format == "jsonl" and not KIND_CHECKS.get(
                rp.kind, NO_CHECKS).ranged:
            return self._log(rel, rp, kind.schema or "", view, sig)
        hit = self.w.files.get(rel)
        if hit is not None and hit[0] == sig:
            self.findings.extend(hit[1])
            return hit[2]
        start = len(self.findings)
        facts = super().file(rel, view)
        self.files[rel] = (sig, self.findings[start:], facts)
        return facts

    def _signature(self, rel: str) -> tuple[int, ...]:
        """What identifies a file's content: size, mtime and inode locally, else the size."""
        if self.storage.is_local:
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(self.storage.root, *rel.split("/")),
                             follow_symlinks=False)
                return (st.st_size, st.st_mtime_ns, st.st_ino)
        return (self.sizes.get(rel, 0),)

    def _log(self, rel: str, rp: layout.RunPath, schema: str, view: RunView,
             sig: tuple[int, ...]) -> Any:
        log = self.w.logs.get(rel)
        size = sig[0]
        restart = frozenset(view.restart_steps)
        # read again from the start: replaced (inode), shrunk (rewound), or a new checkpoint
        # restart point changes how earlier metrics lines are judged
        sidecars = tuple(self.sizes.get(rel + suffix, 0)
                         for suffix in (layout.TORN_SUFFIX, layout.SUPERSEDED_SUFFIX))
        if (log is None or size < log.offset or (len(sig) > 2 and sig[2] != log.sig[2])
                or restart != log.restart or sidecars != log.sidecars
                or self._fingerprint(rel, log.offset) != log.fingerprint):
            sink = Sink(view.display[rel], self.cap)
            log = _Log(sig, 0, 0, sink, self.record_checks(rp, sink, view), restart)
        elif log.hook is not None and hasattr(log.hook, "iterations"):
            # new lines are judged against the iteration files present now
            log.hook.iterations = view.iterations
        self.logs[rel] = log
        if size > log.offset:
            end = self._last_line_end(rel, log.offset, size)
            if end > log.offset:
                lines, consumed = self._scan(rel, schema, log, log.sink, log.hook,
                                             limit=end - log.offset, at_eof=False)
                log.offset += consumed
                log.lines += lines
        log.sig, log.sidecars = sig, sidecars
        log.fingerprint = self._fingerprint(rel, log.offset)
        # a torn tail and the end-of-file checks are judged on copies: the log reads on later
        sink, hook = copy.deepcopy((log.sink, log.hook))
        if size > log.offset:
            self._scan(rel, schema, log, sink, hook)
        facts = hook.finish() if hook is not None else None
        self.findings.extend(sink.finish())
        return facts

    def _scan(self, rel: str, schema: str, log: _Log, sink: Sink, hook: RecordChecks | None,
              **how: Any) -> tuple[int, int]:
        """Judge the log's lines from where it was read up to (``how``)."""
        with self.storage.open_read(rel) as stream:
            stream.seek(log.offset)
            return scan_jsonl(stream, sink, schema=schema, append_only=True, on_record=hook,
                              first_line=log.lines + 1, **how)

    def _fingerprint(self, rel: str, offset: int) -> int:
        """The hash of the ``FINGERPRINT`` bytes before ``offset`` (0 at the start)."""
        if offset <= 0:
            return 0
        return hash(self.storage.read_range(rel, max(0, offset - FINGERPRINT), offset))

    def _last_line_end(self, rel: str, start: int, size: int) -> int:
        """The offset just past the last newline in ``[start, size)`` (``start`` if none)."""
        pos = size
        while pos > start:
            lo = max(start, pos - (1 << 16))
            chunk = self.storage.read_range(rel, lo, pos)
            at = chunk.rfind(b"\n")
            if at >= 0:
                return lo + at + 1
            pos = lo
        return start


class Watcher:
    """Re-validates one run on each ``check()``, reading only what changed since the last."""

    def __init__(self, location: str | os.PathLike[str], *, max_findings_per_code: int = 100
                 ) -> None:
        self.location = os.fspath(location)
        self.cap = max_findings_per_code
        self.files: dict[str, tuple[tuple[int, ...], list[Finding], Any]] = {}
        self.logs: dict[str, _Log] = {}
        self.seen: set[Finding] = set()
        self.report: Report | None = None
        self._storage: Storage | None = None

    def check(self) -> list[Finding]:
        """Validate what changed; the findings not reported by an earlier ``check()``.

        A run checked before that is gone for now (moved away, to come back) gives nothing
        new and keeps the last report.

        Raises:
            RunNotFoundError: the run cannot be listed; NotARunError: it is not a run.
        """
        if self._storage is None:
            self._storage = open_storage(self.location)
        try:
            entries = require_run(self._storage, self.location)
        except NotARunError:
            if self.report is None or self._storage.exists():
                raise
            return []  # a run checked before and gone for now (moved away): wait for it
        validator = _Cached(self, self._storage, self.location)
        findings = validator.run(entries)
        self.files, self.logs = validator.files, validator.logs
        self.report = Report.build(utf8(self.location), findings, layout=validator.layout)
        new = [f for f in self.report.findings if f not in self.seen]
        self.seen = set(self.report.findings)
        return new
