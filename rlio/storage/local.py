"""Local run directories: plain ``os`` calls, O_APPEND appends, fsync and ``os.replace``."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from typing import BinaryIO, cast

from rlio.storage.base import TEMP_INFIX, Appender, Entry, Storage


def _fsync_dir(path: str) -> None:
    fd = os.open(path or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: Linux starts writing a file's dirty pages back when told they are not needed soon (pages
#: still dirty or under write-back stay cached); elsewhere the final fsync does it all.
_fadvise = getattr(os, "posix_fadvise", None)
_DONTNEED: int = getattr(os, "POSIX_FADV_DONTNEED", 4)


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    n = os.write(fd, data)
    if n != len(data):  # a short write (a full disk, a signal): write the rest
        view = memoryview(data)[n:]
        while view:
            view = view[os.write(fd, view):]


class _LocalAppender(Appender):
    """O_APPEND file descriptor: one ``write`` per call is atomic against other appenders."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                                       0o644)

    def _require_fd(self) -> int:
        if self._fd is None:
            raise ValueError(f"append to closed file {self._path}")
        return self._fd

    # Also the ``line_appender`` (not overridden): a closure over the descriptor is no faster,
    # and this refuses a closed handle instead of writing to a descriptor number reused since.
    def append(self, data: bytes) -> None:
        fd = self._fd  # the metrics hot path: one os.write, a loop only after a short write
        if fd is None:
            raise ValueError(f"append to closed file {self._path}")
        n = os.write(fd, data)
        if n != len(data):
            _write_all(fd, memoryview(data)[n:])

    def append_durable(self, data: bytes) -> None:
        fd = self._require_fd()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class LocalStorage(Storage):
    """A run directory on a local filesystem: plain ``os`` calls, fsync and ``os.replace``."""

    is_local = True

    def __init__(self, root: str) -> None:
        self.root = root
        self._real_root = os.path.realpath(root)

    def _abs(self, rel: str) -> str:
        return os.path.join(self.root, *rel.split("/")) if rel else self.root

    def exists(self) -> bool:
        return os.path.isdir(self.root)

    def create(self) -> None:
        os.makedirs(self.root, exist_ok=True)

    def _entry(self, rel: str, st: os.stat_result, full: str) -> Entry:
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(full)
            inside = target == self._real_root or target.startswith(self._real_root + os.sep)
            return Entry(rel, "symlink", 0, inside)
        if stat.S_ISREG(st.st_mode):
            return Entry(rel, "file", st.st_size)
        if stat.S_ISDIR(st.st_mode):
            return Entry(rel, "dir")
        return Entry(rel, "other")

    def walk(self) -> Iterator[Entry]:
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                it = os.scandir(self._abs(rel_dir))
            except OSError:
                continue
            with it:
                for de in sorted(it, key=lambda d: d.name):
                    rel = f"{rel_dir}/{de.name}" if rel_dir else de.name
                    try:
                        st = de.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(rel)
                    yield self._entry(rel, st, de.path)

    def stat(self, rel: str) -> Entry | None:
        full = self._abs(rel)
        try:
            st = os.lstat(full)
        except OSError:
            return None
        return self._entry(rel, st, full)

    def open_read(self, rel: str) -> BinaryIO:
        fd = os.open(self._abs(rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        return os.fdopen(fd, "rb", buffering=1 << 20)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        fd = os.open(self._abs(rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            return os.pread(fd, max(0, end - start), start)
        finally:
            os.close(fd)

    def replace(self, rel: str, data: bytes) -> None:
        with self.replacing(rel) as write:
            write(data)

    def _replace_unsynced(self, rel: str, data: bytes) -> None:
        """Temp file in the same directory, then rename: never a torn file, but no fsync."""
        full = self._abs(rel)
        parent = os.path.dirname(full)
        os.makedirs(parent or ".", exist_ok=True)
        tmp = os.path.join(parent, f".{os.path.basename(full)}{TEMP_INFIX}{os.urandom(4).hex()}")
        f = open(tmp, "xb")  # noqa: SIM115 (closed below; the name is unlinked on failure)
        try:
            with f:
                f.write(data)
            os.replace(tmp, full)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def replacing(self, rel: str) -> Iterator[Callable[[bytes | bytearray], None]]:
        """Replace ``rel`` atomically with bytes written in pieces, streamed: yields ``write``.

        Unlike the base class's, which keeps the pieces until the end, this is ``replace``
        (temp file in the same directory, fsync, rename, directory fsync) for data produced
        while it is written: each piece goes to the temp file at once and its write-back to disk
        is started (``posix_fadvise``), so the fsync when the block exits has little left to
        wait for. When the block raises, the temp file is removed and ``rel`` is unchanged.
        """
        full = self._abs(rel)
        parent = os.path.dirname(full)
        os.makedirs(parent or ".", exist_ok=True)
        tmp = os.path.join(parent, f".{os.path.basename(full)}{TEMP_INFIX}{os.urandom(4).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        offset = 0

        def write(data: bytes | bytearray) -> None:
            nonlocal offset
            _write_all(fd, data)
            if _fadvise is not None and data:
                with contextlib.suppress(OSError):  # only a hint: the fsync below is the rule
                    _fadvise(fd, offset, len(data), _DONTNEED)  # starts write-back now
            offset += len(data)

        try:
            try:
                yield write
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, full)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(parent)

    def appender(self, rel: str) -> Appender:
        full = self._abs(rel)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        return _LocalAppender(full)

    @contextlib.contextmanager
    def lock(self, rel: str) -> Iterator[None]:
        full = self._abs(rel)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        fd = os.open(full, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        full = self._abs(rel)
        size = os.path.getsize(full)
        if offset >= size:
            return 0
        moved = self.read_range(rel, offset, size)
        side = self._abs(sidecar)
        fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            _write_all(fd, moved if moved.endswith(b"\n") else moved + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.truncate(full, offset)
        fd = os.open(full, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return len(moved)

    def open(self, rel: str, mode: str = "rb") -> BinaryIO:
        if mode != "ab":
            return super().open(rel, mode)
        full = self._abs(rel)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        fd = os.open(full, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return cast(BinaryIO, os.fdopen(fd, "ab", buffering=0))  # one write() per call
