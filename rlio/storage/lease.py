"""The run lease: one writer per run at a time (``RunInUseError`` for a second one).

A ``Lease`` is held for the writer's whole life and released by ``release()`` or by the
holder's death. Its holder, ``{"host", "pid", "since"}`` (an ISO 8601 UTC time), is stored with
the lease so that a refused writer can say who holds the run.

- Local disk (``LocalLease``): an exclusive ``flock`` on ``<run>/.rlio-lease`` (the holder's
  JSON written into it), held on an open descriptor: the OS releases it when the process dies,
  so a SIGKILLed writer never blocks its restart. The file is removed on release. Where
  ``fcntl`` is missing, ``filelock`` locks ``<run>/.rlio-lease.lock`` instead.
- memory:// (``InProcessLease``): a table in this process, where memory:// runs live.
- gs:// and s3:// have their own, renewed lease objects (``rlio.storage.gcs.lease``,
  ``rlio.storage.s3.lease``); az:// an Azure blob lease (``rlio.storage.azure.lease``).
"""

from __future__ import annotations

import _thread  # its lock, without the threading module a validator never needs
import contextlib
import os
import time
from abc import ABC, abstractmethod
from typing import Any

from rlio.errors import RunInUseError
from rlio.storage import locking

#: Run-relative name of the lease (a file on disk, an object on gs://); hidden from ``walk``.
LEASE_NAME = ".rlio-lease"
#: Default lease expiry on object stores, in seconds (renewed every third of it).
LEASE_SECONDS = 60.0


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
    """A held run lease: ``since`` is when it was taken (``time.time()``), ``lost`` turns true
    once another writer took it over (only an expiring lease can be lost)."""

    def __init__(self) -> None:
        self.since = time.time()
        self.holder = holder_info(self.since)
        self.lost = False

    @abstractmethod
    def release(self) -> None:
        """Give the lease up. Idempotent."""


class LocalLease(Lease):
    """An exclusive lock on ``<run>/.rlio-lease``, held on an open descriptor (see module)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path
        self._fallback: Any = None if locking.HAVE_FLOCK else self._take_fallback()
        self._fd: int | None = (self._take_flock() if locking.HAVE_FLOCK
                                else os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644))
        import json

        with contextlib.suppress(OSError):  # a full disk: the lock holds, its record is missing
            os.ftruncate(self._fd, 0)
            os.write(self._fd, json.dumps(self.holder).encode())

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

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):  # while still held: a waiter that opened it retries
            os.unlink(self._path)
        os.close(fd)  # closing releases the flock
        if self._fallback is not None:
            self._fallback.release()


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
        super().__init__()
        self._where = where
        with _HELD_LOCK:
            if where in _HELD:
                raise in_use(where, _HELD[where])
            _HELD[where] = self.holder

    def release(self) -> None:
        with _HELD_LOCK:
            if _HELD.get(self._where) is self.holder:
                del _HELD[self._where]
