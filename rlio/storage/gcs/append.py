"""Appends to one live GCS object: batched, composed conditionally, exactly once.

GCS has no append; rewriting the object per record sends the whole file each time and loses
records to concurrent writers, and staging on local disk loses them on a crash. Instead:

1. ``append`` buffers lines; a daemon thread commits them once the oldest is ``interval`` old
   (GCS takes about one update per second per object) or past ``max_records``/``max_bytes``, so
   ``append`` never waits on the network (past ``max_pending`` bytes it commits: back-pressure);
   ``append_durable``, ``flush`` and ``close`` commit in the caller's thread.
2. A commit uploads the batch as this writer's part object (``.rlio-parts/<file>.<writer>``, one
   reused name per appender: emulators slow down with every object ever deleted), then composes
   ``[log@G, part@P]`` into the log with ``ifGenerationMatch=G``. A 412 means another writer
   appended first (or ours landed and its answer was lost): read the log's metadata, try again.
   The log stays one object of pure JSONL; the part is deleted when the appender closes.
3. Exactly once: every writer has a random id and numbers its batches; each compose records
   ``writer:seq`` in the log's custom metadata (the last ``KEEP_WRITERS`` writers). After any
   failure the writer reads that metadata first, and a batch already there is not composed
   again. A new log is first created empty (``ifGenerationMatch=0``), so no batch ever travels
   in a create that could race another writer's.

4. Fenced: a lease holder's appender (``fence``: its lease) checks the lease before every
   compose and refuses a log whose ``rlio-epoch`` metadata names a newer holder; every compose
   carries ``ifMetagenerationMatch``, so the metadata patch a new holder makes when it takes the
   run over (``GcsStorage.acquire_lease``) makes the store itself refuse the old holder's next
   compose, and its retry then reads the newer epoch (``LeaseLostError``).
5. Never glued onto a fragment: when the log's last byte (read unless our own compose made
   that generation) is not a newline, the batch starts with one.

Crashes: a batch whose commit had not returned is lost (never acknowledged); its part object
is swept when a writer reopens the run (a writer whose part was swept uploads it again).
"""

from __future__ import annotations

import atexit
import logging
import random
import secrets
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from rlio.storage.base import Appender
from rlio.storage.gcs.api import META_APPENDS, META_EPOCH, META_REWRITES, GcsApi, generation
from rlio.storage.lease import Lease

#: How many recent writers' ``writer:seq`` entries a log's metadata keeps (GCS allows 8 KiB of
#: custom metadata; 64 entries take about 1.7 KB).
KEEP_WRITERS = 64
_log = logging.getLogger("rlio")
_LIVE: weakref.WeakSet[GcsAppender] = weakref.WeakSet()  # committed at interpreter exit
_ATEXIT = threading.Lock()
_atexit_registered = False


def _entries(resource: Mapping[str, Any] | None) -> dict[str, int]:
    """The ``writer -> last seq`` map of a log's metadata, oldest first."""
    meta = (resource or {}).get("metadata") or {}
    out: dict[str, int] = {}
    for item in str(meta.get(META_APPENDS, "")).split():
        wid, _, seq = item.partition(":")
        if seq.isascii() and seq.isdigit():
            out[wid] = int(seq)
    return out


def landed(resource: Mapping[str, Any] | None, writer: str, seq: int) -> bool:
    """True when ``resource`` records that batch ``seq`` of ``writer`` is in the log."""
    return _entries(resource).get(writer, 0) >= seq


def epoch_of(resource: Mapping[str, Any] | None) -> int:
    """The ``rlio-epoch`` a log's metadata records (0 when none)."""
    value = str(((resource or {}).get("metadata") or {}).get(META_EPOCH, "0"))
    return int(value) if value.isascii() and value.isdigit() else 0


def _metageneration(resource: Mapping[str, Any]) -> int | None:
    value = resource.get("metageneration")
    return None if value is None else int(value)


def _metadata_after(resource: Mapping[str, Any] | None, writer: str, seq: int,
                    fence: Lease | None) -> dict[str, str]:
    meta = {k: str(v) for k, v in ((resource or {}).get("metadata") or {}).items()}
    if fence is not None:
        meta[META_EPOCH] = str(max(fence.epoch, epoch_of(resource)))
    entries = _entries(resource)
    entries.pop(writer, None)
    entries[writer] = seq
    kept = list(entries.items())[-KEEP_WRITERS:]
    meta[META_APPENDS] = " ".join(f"{w}:{s}" for w, s in kept)
    meta.setdefault(META_REWRITES, "0")
    return meta


def _close_all_at_exit() -> None:
    for appender in list(_LIVE):
        try:
            appender.close()
        except Exception:  # the library never prints; say it through logging
            _log.exception("rlio: could not flush %s at exit", appender.display)


def _register(appender: GcsAppender) -> None:
    """Track open appenders so that buffered lines are committed at interpreter exit.

    Registered with the first appender, after gcsfs opened its session (and its own exit
    hook): exit hooks run last-registered first, so ours commits while the session is open.
    """
    global _atexit_registered
    with _ATEXIT:
        _LIVE.add(appender)
        if not _atexit_registered:
            atexit.register(_close_all_at_exit)
            _atexit_registered = True


class GcsAppender(Appender):
    """An open gs:// log: batched appends composed into the one live object."""

    #: When the buffer is committed (see the module docstring), and how long a commit may retry.
    interval, max_records, max_bytes, max_pending = 1.0, 1000, 4 << 20, 64 << 20
    give_up_after = 300.0

    def __init__(self, api: GcsApi, key: str, part_prefix: str, *, ctype: str,
                 display: str, fence: Lease | None = None) -> None:
        self.api, self.key, self.display = api, key, display
        self._ctype = ctype
        self._fence = fence
        self._clean_gen: int | None = None  # a generation our compose made: it ends with "\n"
        #: This appender's random id, recorded with each batch it lands (see ``landed``); from
        #: os.urandom, so processes forked from one parent never share one.
        self.writer = secrets.token_hex(8)
        self._part = f"{part_prefix}.{self.writer}"
        self._part_used = False
        self._cond = threading.Condition()  # guards the buffer, _closed, _error, _urgent
        self._commit_lock = threading.Lock()  # one commit at a time, batches in append order
        self._buf: list[bytes] = []
        self._nbytes = 0
        self._since = 0.0
        self._urgent = False
        self._closed = False
        self._error: BaseException | None = None
        self._seq = 0
        self._pending: tuple[int, bytes] | None = None  # taken from the buffer, not yet landed
        self._known: dict[str, Any] | None = None  # the log's resource after our last write
        self._thread: threading.Thread | None = None
        _register(self)

    def append(self, data: bytes) -> None:
        with self._cond:
            self._check()
            if not self._buf:
                self._since = time.monotonic()
            self._buf.append(data)
            self._nbytes += len(data)
            if len(self._buf) >= self.max_records or self._nbytes >= self.max_bytes:
                self._urgent = True
            over = self._nbytes >= self.max_pending
            self._cond.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name=f"rlio-gcs-flush:{self.display}")
                self._thread.start()
        if over:
            self.flush()

    def append_durable(self, data: bytes) -> None:
        with self._cond:
            self._check()
            self._buf.append(data)
            self._nbytes += len(data)
        self.flush()

    def flush(self) -> None:
        with self._commit_lock:
            self._drain()
        with self._cond:
            self._error = None

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        try:
            with self._commit_lock:
                self._drain()
        finally:
            _LIVE.discard(self)
        if self._part_used:
            try:
                self.api.delete(self._part)
            except Exception:  # an orphan part is swept when a writer reopens the run
                _log.warning("rlio: could not delete batch part %s", self._part, exc_info=True)

    def _check(self) -> None:
        if self._closed:
            raise ValueError(f"append to closed log {self.display}")
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _run(self) -> None:
        """The timer thread: commit when the oldest buffered line is ``interval`` old."""
        while True:
            with self._cond:
                while not self._closed:
                    if self._buf or self._pending is not None:
                        due = self._since + self.interval
                        wait = 0.0 if self._urgent else due - time.monotonic()
                        if wait <= 0:
                            break
                        self._cond.wait(wait)
                    else:
                        self._cond.wait()
                if self._closed:
                    return
            try:
                with self._commit_lock:
                    self._drain()
            except Exception as exc:  # reported to the caller's next append/flush/close
                with self._cond:
                    self._error = exc
                    self._cond.wait(self.interval)  # then retry the same batch

    def _drain(self) -> None:
        """Commit the pending batch, then everything buffered now. Holds ``_commit_lock``."""
        for _ in range(2):
            if self._pending is None:
                with self._cond:
                    if not self._buf:
                        return
                    data = b"".join(self._buf)
                    self._buf, self._nbytes, self._urgent = [], 0, False
                self._seq += 1
                self._pending = (self._seq, data)
            seq, data = self._pending
            self._commit(seq, data)
            self._pending = None

    def _commit(self, seq: int, data: bytes) -> None:
        """Put batch ``seq`` into the log exactly once (see the module docstring)."""
        part: tuple[int, bytes] | None = None  # (generation, bytes) of our part holding it
        known, verify = self._known, False
        deadline = time.monotonic() + self.give_up_after
        conflicts = 0
        try:
            while True:
                if verify or known is None:
                    known = self.api.get(self.key)
                    if landed(known, self.writer, seq):
                        break
                verify = True  # from here on, any failure is checked against the log first
                self._check_fence(known)
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"could not append {len(data)} bytes to {self.display} within "
                        f"{self.give_up_after:.0f} s ({conflicts} conflicts with other writers)")
                try:
                    if known is None:  # a new log: create it empty, then compose as usual
                        meta = {META_REWRITES: "0"}
                        if self._fence is not None:
                            meta[META_EPOCH] = str(self._fence.epoch)
                        self.api.upload(self.key, b"", metadata=meta, if_generation_match=0,
                                        ctype=self._ctype)
                        continue
                    gen = generation(known)
                    body = b"\n" + data if self._ends_torn(known) else data
                    if part is None or part[1] != body:
                        self._part_used = True
                        part = (generation(self.api.upload(self._part, body)), body)
                    try:
                        # ifGenerationMatch pins the first source too: it is the destination
                        known = self.api.compose(
                            self.key, [(self.key, None), (self._part, part[0])],
                            metadata=_metadata_after(known, self.writer, seq, self._fence),
                            if_generation_match=gen,
                            if_metageneration_match=_metageneration(known), ctype=self._ctype)
                    except FileNotFoundError:  # our part was swept, or the log was deleted
                        part = None
                        continue
                    break
                except FileExistsError:  # 412: another writer's commit came first (or ours)
                    conflicts += 1
                    time.sleep(random.uniform(0, min(0.005 * 2 ** min(conflicts, 8), 0.5)))
                except FileNotFoundError:  # the generation we read the last byte of is gone
                    continue
        except BaseException:
            self._known = None
            raise
        self._known = known
        self._clean_gen = None if known is None else generation(known)

    def _check_fence(self, known: Mapping[str, Any] | None) -> None:
        """A lease holder's appender: raise ``LeaseLostError`` once its lease is lost (or may
        be), or the log names a newer holder's epoch."""
        fence = self._fence
        if fence is None:
            return
        fence.check()
        theirs = epoch_of(known)
        if theirs > fence.epoch:
            fence.lose(f"a newer holder (epoch {theirs}) took the run over and fenced "
                       f"{self.display}")
            raise fence.error()

    def _ends_torn(self, known: Mapping[str, Any]) -> bool:
        """True when the log ends in a fragment (not a newline): a crash's cut-off line."""
        size = int(known.get("size", 0))
        if size == 0 or generation(known) == self._clean_gen:
            return False
        return self.api.read(self.key, size - 1, size, gen=generation(known)) != b"\n"
