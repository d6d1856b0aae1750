"""``memory://`` runs: fsspec's process-wide in-memory filesystem (tests, demos)."""

from __future__ import annotations

import _thread  # its lock, without the threading module a reader never needs
import contextlib
import io
from collections.abc import Iterator
from typing import Any, BinaryIO

from rlio.storage.base import HIDDEN_PREFIXES, Appender, Entry, Storage, is_log, rewrite_refused

_MEMORY_MUTEX = _thread.allocate_lock()  # memory:// is process-local: one mutex orders its writes
_MEMORY_LOCKS: dict[str, _thread.LockType] = {}  # lock(rel) per path, like a process-wide flock


def _append_to(fs: Any, path: str, data: bytes) -> None:
    """Rewrite ``path`` with ``data`` added at its end. Holds ``_MEMORY_MUTEX``."""
    fs.pipe_file(path, (fs.cat_file(path) if fs.isfile(path) else b"") + data)


class _MemoryAppender(Appender):
    """Appends to a ``memory://`` file, visible to every reader in the process at once."""

    def __init__(self, fs: Any, path: str) -> None:
        self._fs = fs
        self._path: str | None = path

    def append(self, data: bytes) -> None:
        if self._path is None:
            raise ValueError("append to a closed memory:// appender")
        with _MEMORY_MUTEX:
            _append_to(self._fs, self._path, data)

    append_durable = append

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._path = None


class MemoryStorage(Storage):
    """A ``memory://`` run: fsspec's process-wide in-memory filesystem (tests, demos)."""

    def __init__(self, root: str, fs: Any) -> None:
        self.root = root.rstrip("/")
        self._fs = fs
        self._base = fs._strip_protocol(self.root).rstrip("/")

    def _abs(self, rel: str) -> str:
        return f"{self._base}/{rel}" if rel else self._base

    def create(self) -> None:
        self._fs.makedirs(self._base, exist_ok=True)

    def exists(self) -> bool:
        return bool(self._fs.exists(self._base))

    def walk(self) -> Iterator[Entry]:
        found = self._fs.find(self._base, detail=True) if self.exists() else {}
        cut = len(self._base) + 1
        for name in sorted(found):
            rel = name[cut:]
            if found[name]["type"] == "file" and not rel.startswith(HIDDEN_PREFIXES):
                yield Entry(rel, "file", int(found[name]["size"]))

    def stat(self, rel: str) -> Entry | None:
        try:
            info = self._fs.info(self._abs(rel))
        except FileNotFoundError:
            return None
        is_file = info["type"] == "file"
        return Entry(rel, "file", int(info["size"])) if is_file else Entry(rel, "dir")

    def open_read(self, rel: str) -> BinaryIO:
        return io.BytesIO(self._fs.cat_file(self._abs(rel)))

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        return bytes(self._fs.cat_file(self._abs(rel), start, end)) if end > start else b""

    def replace(self, rel: str, data: bytes) -> None:
        path = self._abs(rel)
        with _MEMORY_MUTEX:
            if is_log(rel) and self._fs.isfile(path):
                raise rewrite_refused(self.display(rel))
            self._fs.pipe_file(path, bytes(data))

    def appender(self, rel: str) -> Appender:
        return _MemoryAppender(self._fs, self._abs(rel))

    @contextlib.contextmanager
    def lock(self, rel: str) -> Iterator[None]:
        with _MEMORY_MUTEX:
            lk = _MEMORY_LOCKS.setdefault(self._abs(rel), _thread.allocate_lock())
        with lk:
            yield

    def remove(self, rel: str) -> None:
        with _MEMORY_MUTEX, contextlib.suppress(FileNotFoundError):
            self._fs.rm_file(self._abs(rel))

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        path = self._abs(rel)
        with _MEMORY_MUTEX:
            data = bytes(self._fs.cat_file(path))
            moved = data[offset:]
            if moved:
                _append_to(self._fs, self._abs(sidecar), moved if moved.endswith(b"\n")
                           else moved + b"\n")
                self._fs.pipe_file(path, data[:offset])
        return len(moved)
