"""The run lease: one writer per run at a time (``RunInUseError`` for a second one), fenced.

A ``Lease`` is held for the writer's whole life and released by ``release()`` or by the
holder's death. Its holder, ``{"host", "pid", "since", "epoch"}`` (``since``: an ISO 8601 UTC
time), is stored with the lease so that a refused writer can say who holds the run.

Fencing (DESIGN §8): every lease has an ``epoch`` that grows with each new holder of the run.
A holder that lost its lease, or may have, acknowledges nothing more: ``check()`` raises
``LeaseLostError``. The writer's hot path only compares ``valid_until`` (a ``time.monotonic()``
deadline) with the clock and calls ``check()`` once it passed; ``check()`` then renews what can
be renewed locally (a lease file's identity) or refuses. ``verify()`` is the full check of the
durable verbs. A forked child never holds its parent's lease (``os.register_at_fork``).

- Local disk (``LocalLease``): an exclusive ``flock`` on ``<run>/.rlio-lease`` (the holder's
  JSON written into it), held on an open descriptor: the OS releases it when the process dies,
  so a SIGKILLed writer never blocks its restart. The file is removed on release. Where
  ``fcntl`` is missing, ``filelock`` locks ``<run>/.rlio-lease.lock`` instead. The lock cannot
  expire, but its file can be deleted, replaced or moved with its run directory (a second
  writer could then take a new one): the file's identity (device, inode, bytes) is rechecked
  by ``verify()`` and at least every ``RECHECK_SECONDS`` by ``check()``.
- memory:// (``InProcessLease``): a table in this process, where memory:// runs live.
- gs:// and s3:// share one renewed lease object (``rlio.storage.lease_object``); az:// an
  Azure blob lease (``rlio.storage.azure.lease``).
"""

from __future__ import annotations

import _thread  # its lock, without the threading module a validator never needs
import contextlib
import math
import os
import time
import weakref
from abc import ABC, abstractmethod
from typing import Any

from rlio.errors import LeaseLostError, RunInUseError
from rlio.storage import locking

#: Run-relative name of the lease (a file on disk, an object on gs://); hidden from ``walk``.
LEASE_NAME = ".rlio-lease"
#: Default lease expiry on object stores, in seconds (renewed every third of it).
LEASE_SECONDS = 60.0
#: How often at most ``check()`` lets a local lease go without rechecking its file's identity.
RECHECK_SECONDS = 0.25
#: The fraction of ``lease_seconds`` before its expiry at which an expiring lease's holder stops
#: trusting it (clock skew between hosts, a renewal answered late).
EXPIRY_MARGIN = 0.2


def holder_info(since: float) -> dict[str, Any]:
    """This process as a lease holder: host, pid and since when (ISO 8601, UTC)."""
    import socket  # here: a validator or reader imports this module, never takes a lease

    return {"host": socket.gethostname(), "pid": os.getpid(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(since))}


def parse_holder(data: bytes) -> dict[str, Any]:
    """The holder a lease's bytes name (an empty dict when unreadable)."""
    import json

    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def in_use(where: str, holder: dict[str, Any]) -> RunInUseError:
    """The error a second writer gets: who holds ``where`` and how to join it instead."""
    host, pid, since = holder.get("host"), holder.get("pid"), holder.get("since")
    who = (f"process {pid} on host {host!r} since {since}" if host or pid
           else "another writer (its holder record is not written yet)")
    return RunInUseError(
        f"run {where} is in use: {who} holds its lease. A run has one writer at a time; a "
        "helper that logs beside it joins with RunWriter(path, attach=True)",
        host=host if isinstance(host, str) else None,
        pid=pid if isinstance(pid, int) else None,
        since=since if isinstance(since, str) else None,
    )


class Lease(ABC):
    """A held run lease of the run at ``where``.

    ``since`` is when it was taken (``time.time()``); ``epoch`` orders the run's holders (a
    later holder has a larger one); ``valid_until`` is the ``time.monotonic()`` time until which
    the holder may acknowledge without asking ``check()`` (minus infinity once lost);
    ``lost_reason`` says why it was lost (None while held).
    """

    def __init__(self, where: str = "") -> None:
        self.where = where
        self.since = time.time()
        self.holder = holder_info(self.since)
        self.epoch = 0
        self.valid_until = math.inf
        self.lost_reason: str | None = None
        self._pid = os.getpid()
        _LIVE.add(self)

    @property
    def lost(self) -> bool:
        """True once the lease was lost (or may have been); it never comes back."""
        return self.lost_reason is not None

    @lost.setter
    def lost(self, value: bool) -> None:
        """``lost = True``: ``lose`` it, for a backend whose renewal found it taken or gone."""
        if value:
            self.lose("another writer took its lease over, or its lease object is gone")

    def lose(self, reason: str) -> None:
        """Mark the lease lost (the first reason is kept): nothing more is acknowledged."""
        if self.lost_reason is None:
            self.lost_reason = reason
        self.valid_until = -math.inf

    def refresh(self) -> None:
        """Called by ``check()`` once ``valid_until`` passed: renew it, or ``lose`` the lease.
        This default (an expiring lease: a lease that cannot expire keeps ``valid_until`` at
        infinity and never gets here): no renewal landed in time, so it may have expired."""
        self.lose("no renewal of its lease reached the store in time: it may have expired (a "
                  "paused process, or a store that did not answer)")

    def check(self) -> None:
        """Raise ``LeaseLostError`` unless this holder may still acknowledge (cheap)."""
        if self.valid_until > time.monotonic() and self.lost_reason is None:
            return
        if self.lost_reason is None:
            self.refresh()
        if self.lost_reason is not None:
            raise self.error()

    def verify(self) -> None:
        """The check of a durable verb: ``check()``, and what it skips between renewals."""
        self.check()

    def error(self) -> LeaseLostError:
        """The error every verb of a holder that lost its lease raises."""
        return LeaseLostError(
            f"run {self.where}: this writer (epoch {self.epoch}) no longer holds the run's "
            f"lease: {self.lost_reason}; it acknowledges nothing more (stop, and restart with "
            "RunWriter(path, resume=True) once no other writer holds it)")

    @abstractmethod
    def release(self) -> None:
        """Give the lease up. Idempotent."""


_LIVE: weakref.WeakSet[Lease] = weakref.WeakSet()


def _forked() -> None:
    """In a forked child: no lease of the parent is held here (a child joins with attach=True)."""
    for lease in list(_LIVE):
        lease.lose(f"this process ({os.getpid()}) is a fork of the lease holder (process "
                   f"{lease._pid}); a child process joins with RunWriter(path, attach=True)")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


class LocalLease(Lease):
    """An exclusive lock on ``<run>/.rlio-lease``, held on an open descriptor (see module)."""

    def __init__(self, path: str) -> None:
        super().__init__(os.path.dirname(path))
        self._path = path
        self._fallback: Any = None if locking.HAVE_FLOCK else self._take_fallback()
        self._fd: int | None = (self._take_flock() if locking.HAVE_FLOCK
                                else os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
        import json

        self.epoch = int(parse_holder(os.pread(self._fd, 1 << 16, 0)).get("epoch") or 0) + 1
        self.holder["epoch"] = self.epoch
        with contextlib.suppress(OSError):  # a full disk: the lock holds, its record is missing
            os.ftruncate(self._fd, 0)
            os.write(self._fd, json.dumps(self.holder).encode())
        st = os.fstat(self._fd)
        self._identity = (st.st_dev, st.st_ino, os.pread(self._fd, 1 << 16, 0))
        self.valid_until = time.monotonic() + RECHECK_SECONDS

    def _take_flock(self) -> int:
        while True:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            if not locking.try_flock(fd):
                os.close(fd)
                raise in_use(os.path.dirname(self._path), _read_holder(self._path))
            try:
                if os.stat(self._path).st_ino == os.fstat(fd).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)  # the previous holder removed this file as it released it: again

    def _take_fallback(self) -> Any:
        import filelock

        lock = locking.portable_lock(self._path + ".lock", timeout=0)
        try:
            lock.acquire()
        except filelock.Timeout:
            raise in_use(os.path.dirname(self._path), _read_holder(self._path)) from None
        return lock

    def _still_ours(self) -> str | None:
        """Why the lease file at its path is no longer this holder's, or None while it is."""
        fd = self._fd
        if fd is None:
            return "it was released"
        if os.fstat(fd).st_nlink == 0:
            return f"its lease file {self._path} was deleted"
        moved = (f"its lease file is no longer at {self._path} (replaced by another file, or "
                 "the run directory was moved or renamed)")
        try:
            st = os.stat(self._path)
        except OSError:
            return moved
        dev, ino, data = self._identity
        if (st.st_dev, st.st_ino) != (dev, ino):
            return moved
        if os.pread(fd, len(data) + 1, 0) != data:
            return f"its lease file {self._path} was rewritten by someone else"
        return None

    def refresh(self) -> None:
        reason = self._still_ours()
        if reason is not None:
            self.lose(reason)
        else:
            self.valid_until = time.monotonic() + RECHECK_SECONDS

    def verify(self) -> None:
        if self.lost_reason is None:
            self.refresh()
        self.check()

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if os.getpid() == self._pid and not self.lost:
            try:  # only our own file: never one a writer took after ours was deleted
                mine = os.stat(self._path).st_ino == os.fstat(fd).st_ino
            except OSError:
                mine = False
            if mine:  # while still held: a waiter that opened it retries
                with contextlib.suppress(OSError):
                    os.unlink(self._path)
        os.close(fd)  # the last descriptor of the lock's file description releases the flock
        if self._fallback is not None and os.getpid() == self._pid:
            self._fallback.release()
        self.lose("it was released")


def _read_holder(path: str) -> dict[str, Any]:
    """The holder record of a lease file, waiting briefly for a holder that is writing it."""
    for _ in range(20):
        try:
            with open(path, "rb") as f:
                holder = parse_holder(f.read())
        except OSError:
            holder = {}
        if holder:
            return holder
        time.sleep(0.01)
    return {}


_HELD: dict[str, dict[str, Any]] = {}
_EPOCHS: dict[str, int] = {}
_HELD_LOCK = _thread.allocate_lock()


def held_in_process(where: str) -> dict[str, Any] | None:
    """The holder of ``where``'s in-process lease (memory://), or None."""
    with _HELD_LOCK:
        holder = _HELD.get(where)
    return dict(holder) if holder is not None else None


def local_holder(path: str) -> dict[str, Any] | None:
    """The holder a local lease file names when that holder looks alive, else None.

    Read only: the file is never locked (a probe could refuse a writer starting at that
    instant). A released lease has no file; a killed holder leaves it, naming a process that
    no longer exists on this host. A holder on another host (a shared disk) cannot be checked
    from here and counts as alive.
    """
    try:
        with open(path, "rb") as f:
            holder = parse_holder(f.read())
    except OSError:
        return None
    if not holder:
        return {}  # taken an instant ago, its record not written yet: a live holder
    pid = holder.get("pid")
    import socket

    if holder.get("host") != socket.gethostname() or type(pid) is not int:
        return holder
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        return holder
    return holder


class InProcessLease(Lease):
    """A lease in a table of this process, for backends whose runs live in one process."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        with _HELD_LOCK:
            if where in _HELD:
                raise in_use(where, _HELD[where])
            self.epoch = self.holder["epoch"] = _EPOCHS.get(where, 0) + 1
            _EPOCHS[where] = self.epoch
            _HELD[where] = self.holder

    def release(self) -> None:
        with _HELD_LOCK:
            if _HELD.get(self.where) is self.holder:
                del _HELD[self.where]
        self.lose("it was released")
