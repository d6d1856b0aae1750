"""Batched appends for object stores: lines buffered in memory, committed off the caller's thread.

An object store has no cheap append, and a request per record would cost the training loop a
round trip each. ``BatchingAppender`` keeps the buffering every object-store appender shares;
how one batch lands exactly once (``_commit``) is ``rlio.storage.committing``'s one loop:

- ``append`` buffers lines; a daemon thread commits them once the oldest is ``interval`` old or
  past ``max_records``/``max_bytes``, so ``append`` never waits on the network (past
  ``max_pending`` bytes it commits in the caller: back-pressure). ``append_durable``, ``flush``
  and ``close`` commit in the caller's thread and return once the batch landed.
- Batches are numbered per appender (``seq``) and committed one at a time, in append order; a
  batch whose commit failed stays pending and is committed again (the backend's ``_commit``
  must recognise a batch that landed although its answer was lost).
- Exactly once: each landed batch is recorded as ``writer:seq`` in the log's own metadata (the
  last ``keep`` writers: ``metadata_after``), so that after any failure the backend reads it
  back and does not land a batch again (``landed``).
- A failure of the background thread is raised by the caller's next append, flush or close.
- Appenders still open at interpreter exit are closed (their lines committed) by an exit hook.

Crashes: a batch whose commit had not returned was never acknowledged and may be lost.
"""

from __future__ import annotations

import atexit
import logging
import secrets
import threading
import time
import weakref
from abc import abstractmethod
from collections.abc import Mapping

from rlio.storage.base import Appender

#: The metadata entry of a log listing the last batch each recent writer landed
#: (``"<writer>:<seq> ..."``, most recent last).
META_APPENDS = "rlio-appends"
_log = logging.getLogger("rlio")
_LIVE: weakref.WeakSet[BatchingAppender] = weakref.WeakSet()  # committed at interpreter exit
_ATEXIT = threading.Lock()
_atexit_registered = False


def _entries(metadata: Mapping[str, str] | None) -> dict[str, int]:
    """The ``writer -> last seq`` map of a log's metadata, oldest first."""
    out: dict[str, int] = {}
    for item in str((metadata or {}).get(META_APPENDS, "")).split():
        wid, _, seq = item.partition(":")
        if seq.isascii() and seq.isdigit():
            out[wid] = int(seq)
    return out


def landed(metadata: Mapping[str, str] | None, writer: str, seq: int) -> bool:
    """True when a log's ``metadata`` records that batch ``seq`` of ``writer`` is in it."""
    return _entries(metadata).get(writer, 0) >= seq


def metadata_after(metadata: Mapping[str, str] | None, writer: str, seq: int,
                   keep: int) -> dict[str, str]:
    """A log's metadata once batch ``seq`` of ``writer`` landed: its entry moved last, only the
    ``keep`` most recent writers kept, every other entry unchanged."""
    meta = {k: str(v) for k, v in (metadata or {}).items()}
    entries = _entries(metadata)
    entries.pop(writer, None)
    entries[writer] = seq
    meta[META_APPENDS] = " ".join(f"{w}:{s}" for w, s in list(entries.items())[-keep:])
    return meta


def _close_all_at_exit() -> None:
    for appender in list(_LIVE):
        try:
            appender.close()
        except Exception:  # the library never prints; say it through logging
            _log.exception("rlio: could not flush %s at exit", appender.display)


def _register(appender: BatchingAppender) -> None:
    """Track open appenders so that buffered lines are committed at interpreter exit.

    Registered with the first appender, after the backend opened its session (and its own exit
    hook): exit hooks run last-registered first, so ours commits while the session is open.
    """
    global _atexit_registered
    with _ATEXIT:
        _LIVE.add(appender)
        if not _atexit_registered:
            atexit.register(_close_all_at_exit)
            _atexit_registered = True


class BatchingAppender(Appender):
    """An open object-store log: buffered lines committed in numbered batches (see module)."""

    #: When the buffer is committed (see the module docstring), and how long a commit may retry.
    interval, max_records, max_bytes, max_pending = 1.0, 1000, 4 << 20, 64 << 20
    give_up_after = 300.0

    def __init__(self, display: str) -> None:
        self.display = display
        #: This appender's random id, recorded with each batch it lands; from os.urandom, so
        #: processes forked from one parent never share one.
        self.writer = secrets.token_hex(8)
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
        self._thread: threading.Thread | None = None
        _register(self)

    @abstractmethod
    def _commit(self, seq: int, data: bytes) -> None:
        """Put batch ``seq`` (complete lines) into the log exactly once, or raise."""

    def _closed_cleanup(self) -> None:
        """Called once after the last commit of ``close`` (e.g. delete a staging object)."""

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
                                                name=f"rlio-flush:{self.display}")
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
        self._closed_cleanup()

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
