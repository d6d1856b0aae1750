"""``RlioStorage``: the Tinker cookbook's ``Storage`` and ``AsyncStorage`` protocols over rlio's
storage, so that a cookbook training loop writes its run with rlio's guarantees unchanged.

The cookbook's protocol is structural (``typing.Protocol``): this module never imports the
cookbook. Its semantics are the cookbook's: paths are relative to the root (``""`` is the root
itself; one that leaves it raises ValueError), ``read`` of a missing file raises
FileNotFoundError, ``stat`` of one is None, ``read_range`` past the end is ``b""``, ``list_dir``
of a missing prefix is ``[]``, ``remove`` of a missing file and ``remove_dir`` of a missing or
non-empty directory do nothing. What rlio adds:

- the run's lease: the first ``RlioStorage`` of a run holds it (a second one raises
  ``RunInUseError`` naming the holder); a copy made by pickling (a Ray or multiprocessing
  worker) joins the run attached, without the lease; once the lease is lost nothing more is
  acknowledged (``RunInUseError``);
- appends handed to rlio's appenders: on a local disk one ``write`` to the OS before ``append``
  returns; on object stores composed durably before it returns (no local staging folder, so a
  crash loses nothing acknowledged) and exactly once; ``checkpoints.jsonl`` always durably, after
  everything appended before it;
- ``write`` is an atomic replace (attached: of per-iteration files only, never a rewind nor a
  replace of the owner's files); over an append-only log (``truncate_metrics`` rewinding
  ``metrics.jsonl``) the lines it drops are moved to the log's ``.superseded`` sidecar under the
  file's lock and the rest is appended, so nothing is ever deleted and no appender is cut off;
- torn tails of the run's JSONL logs are moved aside (``.torn``) when the lease holder opens it.
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from rlio import layout as L
from rlio.storage.base import HIDDEN_PREFIXES, TEMP_INFIX, Appender, Storage
from rlio.storage.lease import LEASE_SECONDS, Lease

__all__ = ["RlioStorage", "StorageStat"]

#: The run's JSONL logs whose torn tails the lease holder moves aside on open.
_REPAIRED = tuple(sorted(k.name for k in L.FILE_KINDS
                         if k.append_only and not k.per_iteration and k.format == "jsonl"))


@dataclass(frozen=True)
class StorageStat:
    """File metadata, shaped like the cookbook's ``StorageStat``: size and mtime (seconds)."""

    size: int
    mtime: float


def _shared_lines(old: bytes, new: bytes) -> int:
    """The length of the whole (newline-terminated) lines ``old`` and ``new`` begin with."""
    cut = 0
    for a, b in zip(old.splitlines(keepends=True), new.splitlines(keepends=True), strict=False):
        if a != b or not a.endswith(b"\n"):
            break
        cut += len(a)
    return cut


class RlioStorage:
    """A run directory (local path, ``file://`` or an object-store URI rlio opens) as the
    cookbook's ``Storage`` and ``AsyncStorage``.

    ``TrainingRunStore(RlioStorage(log_path))`` and ``JsonLogger(log_path, store=...)`` then
    write the files the cookbook writes. Thread-safe. ``close()`` (or leaving the ``with``
    block) makes every append durable and releases the lease; writes raise ValueError after it.

    Args:
        root: the run directory.
        attach: join without the lease (a helper beside the run's one owner); the run must
            exist, and nothing is repaired.
        lease_seconds: expiry of the lease on object stores (renewed every third of it).
    """

    def __init__(self, root: str | os.PathLike[str], *, attach: bool = False,
                 lease_seconds: float = LEASE_SECONDS) -> None:
        from rlio.storage.opener import open_storage
        from rlio.writer import ownership

        text = os.fspath(root)
        self._location = os.path.expanduser(text) if "://" not in text else text
        self._attach = attach
        self._lease_seconds = lease_seconds
        self._storage: Storage = open_storage(self._location, create=not attach)
        self._lock = threading.Lock()  # guards the appender tables and the closed flag
        self._appenders: dict[str, Appender] = {}
        self._path_locks: dict[str, threading.Lock] = {}
        self._closed = False
        self._lease: Lease | None = ownership.join_run(
            self._storage, attach=attach, resume=False, lease_seconds=lease_seconds)
        if self._lease is not None:
            try:
                self._repair()
            except BaseException:
                self._lease.release()
                raise

    def _repair(self) -> None:
        """Move the torn tails a crash left in the run's JSONL logs to their ``.torn`` sidecars."""
        from rlio.storage.tail import repair_torn_tail

        for rel in _REPAIRED:
            repair_torn_tail(self._storage, rel)

    # -- paths and state ---------------------------------------------------------------------

    @property
    def root(self) -> str:
        """The run's location as rlio's storage names it (a local path or a URI)."""
        return self._storage.root

    @property
    def storage(self) -> Storage:
        """The rlio storage backend underneath."""
        return self._storage

    def _rel(self, path: str) -> str:
        """``path`` as a run-relative POSIX path (``""`` for the root); ValueError outside it."""
        text = str(path).replace("\\", "/")
        rel = posixpath.normpath(text.strip("/")) if text.strip("/") else ""
        rel = "" if rel == "." else rel
        if text.startswith("/") or rel == ".." or rel.startswith("../"):
            raise ValueError(f"Path escapes storage root: {path!r} is not inside {self.root}")
        return rel

    def _writable(self, path: str) -> str:
        """The run-relative path of a write, refused when closed, lease lost or reserved."""
        from rlio.writer import ownership

        rel = self._rel(path)
        if self._closed:
            raise ValueError(f"RlioStorage for {self.root} is closed")
        ownership.require_lease(self._lease)
        if not rel or (rel + "/").startswith(HIDDEN_PREFIXES) or TEMP_INFIX in rel:
            raise ValueError(f"{path!r}: not a file rlio lets a caller write in {self.root} "
                             "(the root, or a name rlio keeps for itself)")
        return rel

    def _path_lock(self, rel: str) -> threading.Lock:
        with self._lock:
            lk = self._path_locks.get(rel)
            if lk is None:
                lk = self._path_locks[rel] = threading.Lock()
            return lk

    def _flush_appender(self, rel: str) -> None:
        """Make appends to ``rel`` visible to a read (object stores batch them)."""
        app = self._appenders.get(rel)
        if app is not None and not self._storage.is_local:
            with self._path_lock(rel):
                app.flush()

    def _drop_appender(self, rel: str) -> None:
        """Close this storage's appender of ``rel`` (before the file is rewritten). Callers
        hold ``_path_lock(rel)``."""
        with self._lock:
            app = self._appenders.pop(rel, None)
        if app is not None:
            app.close()

    # -- the Storage protocol ----------------------------------------------------------------

    def url(self, path: str = "") -> str:
        """A URI of ``path``: ``file:///...`` on a local disk, else the store's own URI."""
        rel = self._rel(path)
        if self._storage.is_local:
            return Path(os.path.abspath(self._storage.display(rel))).as_uri()
        return self._storage.display(rel)

    def read(self, path: str) -> bytes:
        """The whole file; FileNotFoundError when it is missing."""
        rel = self._rel(path)
        self._flush_appender(rel)
        return self._storage.read_bytes(rel)

    def write(self, path: str, data: bytes) -> None:
        """Replace the whole file atomically (readers see the old bytes or the new ones).

        Over an existing append-only log the lines that change are moved to its
        ``.superseded`` sidecar and the new ones appended (see the module docstring). An
        attached storage only writes per-iteration files: it never rewinds a log nor replaces
        the owner's files (``RlioError``).
        """
        rel = self._writable(path)
        if self._attach and L.parse_path(rel).iteration is None:
            from rlio.writer import ownership

            ownership.refuse_attached(True, f"write {rel!r} (a rewind or replace)", self.root)
        data = bytes(data)
        with self._path_lock(rel):
            self._drop_appender(rel)
            entry = self._storage.stat(rel) if rel in L.APPEND_ONLY else None
            if entry is not None and entry.kind == "file":
                self._rewrite_log(rel, data)
            else:
                self._storage.replace(rel, data)

    def _rewrite_log(self, rel: str, data: bytes) -> None:
        """Make the log ``rel`` hold ``data``: keep the longest common prefix of whole lines,
        move the rest to ``rel + ".superseded"`` under the file's lock, append what remains."""
        with self._storage.lock(rel):
            old = self._storage.read_bytes(rel)
            cut = _shared_lines(old, data)
            if cut < len(old):
                self._storage.move_tail(rel, cut, rel + L.SUPERSEDED_SUFFIX)
        rest = data[cut:]
        if rest:
            app = self._storage.appender(rel)
            try:
                app.append_durable(rest)
            finally:
                app.close()

    def append(self, path: str, data: bytes) -> None:
        """Append ``data`` (whole lines: the cookbook's records end in a newline), creating the
        file. Acknowledged when it returns: handed to the OS on a local disk, durable on an
        object store; ``checkpoints.jsonl`` durable everywhere, after every earlier append."""
        rel = self._writable(path)
        if not data:
            return
        data = bytes(data)
        if rel == L.CHECKPOINTS:
            self.flush()  # ordered durability: what was logged before a checkpoint comes first
        with self._path_lock(rel):
            with self._lock:
                if self._closed:
                    raise ValueError(f"RlioStorage for {self.root} is closed")
                app = self._appenders.get(rel)
                if app is None:
                    app = self._appenders[rel] = self._storage.appender(rel)
            if rel == L.CHECKPOINTS or not self._storage.is_local:
                app.append_durable(data)
            else:
                app.append(data)

    def exists(self, path: str) -> bool:
        """True when the file (or directory; ``""``: the run) exists."""
        rel = self._rel(path)
        if not rel:
            return self._storage.exists()
        self._flush_appender(rel)
        return self._storage.stat(rel) is not None

    def stat(self, path: str) -> StorageStat | None:
        """Size and mtime of ``path``, or None when it is missing."""
        rel = self._rel(path)
        self._flush_appender(rel)
        entry = self._storage.stat(rel)
        if entry is None:
            return None
        return StorageStat(size=entry.size, mtime=self._storage.mtime(rel) or 0.0)

    def read_range(self, path: str, offset: int, length: int | None = None) -> bytes:
        """Bytes from ``offset`` (``length`` of them, or to the end); ``b""`` past the end;
        FileNotFoundError when the file is missing."""
        rel = self._rel(path)
        self._flush_appender(rel)
        entry = self._storage.stat(rel)
        if entry is None or entry.kind != "file":
            raise FileNotFoundError(2, "no such file", self._storage.display(rel))
        start = max(0, offset)
        end = entry.size if length is None else min(entry.size, start + max(0, length))
        return self._storage.read_range(rel, start, end) if end > start else b""

    def list_dir(self, prefix: str) -> list[str]:
        """The sorted names of the immediate children of ``prefix`` (``[]`` when missing)."""
        rel = self._rel(prefix)
        head = rel + "/" if rel else ""
        names: set[str] = set()
        for entry in self._storage.walk():
            if entry.path.startswith(head) and entry.path != rel:
                names.add(entry.path[len(head):].split("/", 1)[0])
        return sorted(names)

    def remove(self, path: str) -> None:
        """Delete the file; nothing when it is missing."""
        rel = self._writable(path)
        with self._path_lock(rel):
            self._drop_appender(rel)
            self._storage.remove(rel)

    def remove_dir(self, path: str) -> None:
        """Remove an empty directory; nothing when missing or not empty (object stores: no-op)."""
        self._storage.remove_dir(self._writable(path))

    def remove_tree(self, path: str) -> None:
        """Delete every file under ``path`` (a file: that file); nothing when missing."""
        rel = self._writable(path)
        head = rel + "/"
        doomed = [e.path for e in self._storage.walk()
                  if e.kind != "dir" and (e.path == rel or e.path.startswith(head))]
        for p in doomed:
            self.remove(p)
        dirs = [e.path for e in self._storage.walk()
                if e.kind == "dir" and (e.path == rel or e.path.startswith(head))]
        for d in sorted(dirs, key=len, reverse=True):
            self._storage.remove_dir(d)

    def exists_tree(self, path: str) -> bool:
        """True when ``path`` is a file or has any file under it."""
        rel = self._rel(path)
        if not rel:
            return any(e.kind != "dir" for e in self._storage.walk())
        head = rel + "/"
        return any(e.kind != "dir" and (e.path == rel or e.path.startswith(head))
                   for e in self._storage.walk())

    def flush(self) -> None:
        """Make every append so far durable (fsync on a local disk)."""
        with self._lock:
            items = list(self._appenders.items())
        for rel, app in items:
            with self._path_lock(rel):
                app.flush()

    def close(self) -> None:
        """Flush and close every appender, then release the lease. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            items, self._appenders = list(self._appenders.items()), {}
        try:
            for rel, app in items:
                with self._path_lock(rel):
                    try:
                        app.flush()
                    finally:
                        app.close()
        finally:
            if self._lease is not None:
                self._lease.release()

    def __enter__(self) -> RlioStorage:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        role = "attached" if self._attach else "lease holder"
        return f"RlioStorage({self.root!r}) [{role}{', closed' if self._closed else ''}]"

    # -- pickling: a copy joins the run attached ---------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self._location, "lease_seconds": self._lease_seconds}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"], attach=True,  # type: ignore[misc]
                      lease_seconds=state["lease_seconds"])

    # -- the AsyncStorage protocol: the same calls on a worker thread ------------------------

    async def aread(self, path: str) -> bytes:
        """``read`` on a worker thread."""
        return await asyncio.to_thread(self.read, path)

    async def awrite(self, path: str, data: bytes) -> None:
        """``write`` on a worker thread."""
        await asyncio.to_thread(self.write, path, data)

    async def aappend(self, path: str, data: bytes) -> None:
        """``append`` on a worker thread."""
        await asyncio.to_thread(self.append, path, data)

    async def aexists(self, path: str) -> bool:
        """``exists`` on a worker thread."""
        return await asyncio.to_thread(self.exists, path)

    async def astat(self, path: str) -> StorageStat | None:
        """``stat`` on a worker thread."""
        return await asyncio.to_thread(self.stat, path)

    async def aread_range(self, path: str, offset: int, length: int | None = None) -> bytes:
        """``read_range`` on a worker thread."""
        return await asyncio.to_thread(self.read_range, path, offset, length)

    async def alist_dir(self, prefix: str) -> list[str]:
        """``list_dir`` on a worker thread."""
        return await asyncio.to_thread(self.list_dir, prefix)

    async def aremove(self, path: str) -> None:
        """``remove`` on a worker thread."""
        await asyncio.to_thread(self.remove, path)

    async def aremove_dir(self, path: str) -> None:
        """``remove_dir`` on a worker thread."""
        await asyncio.to_thread(self.remove_dir, path)

    async def __aenter__(self) -> RlioStorage:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await asyncio.to_thread(self.close)
