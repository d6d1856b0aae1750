"""Local run directories: plain ``os`` calls, O_APPEND appends, fsync and ``os.replace``.

A failed append (ENOSPC, EIO, EDQUOT, a short write) leaves nothing behind: the bytes it wrote
are cut off again under the file's lock before ``AppendError`` is raised, or, where another
writer appended after them, the next append starts on a new line (never glued onto them).
"""

from __future__ import annotations

import contextlib
import errno
import operator
import os
import stat
import time
from collections.abc import Iterator
from typing import BinaryIO

from rlio.errors import AppendError
from rlio.storage import intent, locking
from rlio.storage.base import HIDDEN_PREFIXES, TEMP_INFIX, Appender, Entry, Storage
from rlio.storage.lease import LEASE_NAME, LEASE_SECONDS, Lease, LocalLease

#: Where the ``filelock`` fallback keeps its lock files when ``fcntl`` is missing.
LOCKS_DIR = ".rlio-locks"
_NAME = operator.attrgetter("name")


def _fsync_dir(path: str) -> None:
    fd = os.open(path or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    n = os.write(fd, data)
    if n != len(data):  # a short write (a full disk, a signal): write the rest
        view = memoryview(data)[n:]
        while view:
            view = view[os.write(fd, view):]


class _Failed(Exception):
    """An append that failed after ``written`` of its bytes reached the file."""

    def __init__(self, written: int, cause: OSError) -> None:
        super().__init__(written, cause)
        self.written = written
        self.cause = cause


def _write_counted(fd: int, data: bytes | memoryview, done: int = 0) -> None:
    """Write ``data[done:]`` to the end; ``_Failed`` says how much of ``data`` got written."""
    view = memoryview(data)
    while done < len(view):
        try:
            n = os.write(fd, view[done:])
        except OSError as exc:
            raise _Failed(done, exc) from exc
        if n <= 0:
            raise _Failed(done, OSError(errno.ENOSPC, "short write: no byte was written"))
        done += n


@contextlib.contextmanager
def _exclusive(fd: int, lock_path: str) -> Iterator[None]:
    """The file's inter-process lock: ``flock`` on ``fd``, else the ``filelock`` fallback."""
    if locking.HAVE_FLOCK:
        locking.flock(fd)
        try:
            yield
        finally:
            locking.funlock(fd)
    else:
        with locking.fallback_lock(lock_path):
            yield


class _LocalAppender(Appender):
    """O_APPEND file descriptor: one ``write`` per call is atomic against other appenders."""

    def __init__(self, path: str, lock_path: str) -> None:
        self._path = path
        self._lock_path = lock_path
        self._real: int | None = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT
                                         | os.O_CLOEXEC, 0o644)
        # None while closed, or while a failed append's fragment could not be cut off: the
        # next append then starts on a fresh line (``_append_slow``).
        self._fd: int | None = self._real

    def _require_fd(self) -> int:
        if self._real is None:
            raise ValueError(f"append to closed file {self._path}")
        return self._real

    def append(self, data: bytes) -> None:
        fd = self._fd  # one os.write; a loop only after a short write
        if fd is None:
            self._append_slow(data)
            return
        try:
            n = os.write(fd, data)
        except OSError as exc:
            raise self._error(exc) from None  # nothing was written
        if n != len(data):  # a short write (a signal, a full disk): write the rest
            try:
                _write_counted(fd, data, n)
            except _Failed as failed:
                raise self._cut_back(fd, failed) from None

    def _append_slow(self, data: bytes) -> None:
        """Append after a fragment that could not be cut off: on a new line (or refuse)."""
        fd = self._require_fd()
        with _exclusive(fd, self._lock_path):
            size = os.fstat(fd).st_size
            lead = b"" if size == 0 or os.pread(fd, 1, size - 1) == b"\n" else b"\n"
            try:
                _write_counted(fd, lead + data)
            except _Failed as failed:
                raise self._cut_back(fd, failed, locked=True) from None
        self._fd = fd  # the file ends on a complete line again

    def _error(self, exc: OSError) -> AppendError:
        return AppendError(exc.errno or errno.EIO,
                           f"append failed ({exc.strerror or exc}); the file was left at its last "
                           "complete line", self._path)

    def _cut_back(self, fd: int, failed: _Failed, *, locked: bool = False) -> AppendError:
        """Cut a failed append's bytes off the file again (under its lock); the error to raise."""
        if failed.written:
            end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: just past the bytes this call wrote
            ctx = contextlib.nullcontext() if locked else _exclusive(fd, self._lock_path)
            cut = False
            with ctx, contextlib.suppress(OSError):
                if os.fstat(fd).st_size == end:  # nobody appended after them: cut them off
                    os.ftruncate(fd, end - failed.written)
                    cut = True
            if not cut:
                self._fd = None  # the next append starts on a new line
        return self._error(failed.cause)

    def append_durable(self, data: bytes) -> None:
        fd = self._require_fd()
        if not locking.HAVE_FLOCK:
            with locking.fallback_lock(self._lock_path):
                self._durable(fd, data)
            return
        locking.flock(fd)  # (a with block of _exclusive costs more than the rest of the call)
        try:
            self._durable(fd, data)
        finally:
            locking.funlock(fd)

    def _durable(self, fd: int, data: bytes) -> None:
        """``append_durable``'s work, under the file's lock: on a new line, then fsync."""
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            n = os.write(fd, data)
        except OSError as exc:
            raise self._error(exc) from None  # nothing was written
        try:
            if n != len(data):
                _write_counted(fd, data, n)
            os.fsync(fd)
        except _Failed as failed:
            raise self._cut_back(fd, failed, locked=True) from None
        except OSError as exc:  # the fsync: the bytes may not be durable; take them back
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError:
                self._fd = None
            raise self._error(exc) from None
        if self._fd is None:
            self._fd = fd

    def flush(self) -> None:
        if self._real is not None:
            os.fsync(self._real)

    def close(self) -> None:
        fd, self._real, self._fd = self._real, None, None
        if fd is not None:
            os.close(fd)


class LocalStorage(Storage):
    """A run directory on a local filesystem: plain ``os`` calls, fsync and ``os.replace``."""

    is_local = True

    def __init__(self, root: str) -> None:
        self.root = root
        self._real_root = os.path.realpath(root)
        # on POSIX a run-relative path is joined by one concatenation (a validator opens
        # thousands of small files); elsewhere its parts are joined with the local separator
        text = os.fspath(root)
        self._prefix = (text if text.endswith("/") else text + "/") if os.sep == "/" else None

    def _abs(self, rel: str) -> str:
        if not rel:
            return self.root
        if self._prefix is not None:
            return self._prefix + rel
        return os.path.join(self.root, *rel.split("/"))

    def exists(self) -> bool:
        """True when the run directory exists; permission and I/O errors raise (never "absent")."""
        try:
            return stat.S_ISDIR(os.stat(self.root).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

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
        """See ``Storage.walk``; rlio's own hidden files are skipped.

        A run directory that cannot be listed (permission, I/O) raises: only a missing one is
        empty. A subdirectory that cannot be listed is reported and not descended into.
        """
        # a validator lists thousands of small files: one stat each (the size), nothing more
        is_reg, is_dir = stat.S_ISREG, stat.S_ISDIR
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                it = os.scandir(self._abs(rel_dir))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                if not rel_dir:
                    raise
                continue
            with it:
                listing = sorted(it, key=_NAME)
            prefix = f"{rel_dir}/" if rel_dir else ""
            for de in listing:
                name = de.name
                # every hidden prefix starts with a dot: other names skip the prefix test
                if not rel_dir and name[:1] == "." and (name + "/").startswith(HIDDEN_PREFIXES):
                    continue
                try:
                    st = de.stat(follow_symlinks=False)
                except OSError:
                    continue
                mode = st.st_mode
                if is_reg(mode):
                    yield Entry(prefix + name, "file", st.st_size)
                    continue
                rel = prefix + name
                if is_dir(mode):
                    stack.append(rel)
                yield self._entry(rel, st, de.path)

    def stat(self, rel: str) -> Entry | None:
        full = self._abs(rel)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            return None  # only a missing entry is absent: EACCES or EIO raise
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
        """Temp file in the same directory, fsync, rename, directory fsync."""
        self.replace_all([(rel, data)])

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

    def _lock_path(self, rel: str) -> str:
        """The ``filelock`` fallback's lock file of ``rel`` (unused where ``flock`` exists)."""
        return os.path.join(self.root, LOCKS_DIR, *rel.split("/")) + ".lock"

    def replace_all(self, files: list[tuple[str, bytes]]) -> None:
        """Every temp file written and fsync'd, then renamed in order, then one fsync of each
        directory: n + 1 syncs for n files in one directory, not 2n."""
        temps: list[tuple[str, str]] = []
        try:
            for rel, data in files:
                full = self._abs(rel)
                parent = os.path.dirname(full)
                os.makedirs(parent or ".", exist_ok=True)
                tmp = os.path.join(parent,
                                   f".{os.path.basename(full)}{TEMP_INFIX}{os.urandom(4).hex()}")
                temps.append((tmp, full))
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                try:
                    _write_all(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            while temps:  # in order: a file is renamed only after the ones before it
                os.replace(*temps[0])
                temps.pop(0)
        finally:
            for tmp, _ in temps:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        for parent in dict.fromkeys(os.path.dirname(self._abs(rel)) for rel, _ in files):
            _fsync_dir(parent)

    def appender(self, rel: str) -> Appender:
        full = self._abs(rel)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        return _LocalAppender(full, self._lock_path(rel))

    @contextlib.contextmanager
    def lock(self, rel: str) -> Iterator[None]:
        full = self._abs(rel)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        if not locking.HAVE_FLOCK:
            with locking.fallback_lock(self._lock_path(rel)):
                yield
            return
        fd = os.open(full, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            locking.flock(fd)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def acquire_lease(self, *, lease_seconds: float = LEASE_SECONDS) -> Lease:
        """An exclusive lock on ``<run>/.rlio-lease`` the OS drops when the holder dies."""
        return LocalLease(self._abs(LEASE_NAME))

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        """Undo half-done tail moves (``intent.recover``), then delete the temp files of atomic
        replaces last modified before ``older_than`` (all without it); the files deleted."""
        intent.recover(self.root)
        cutoff = time.time() if older_than is None else older_than
        n = 0
        for entry in self.walk():
            name = entry.path.rsplit("/", 1)[-1]
            if entry.kind != "file" or not name.startswith(".") or TEMP_INFIX not in name:
                continue
            full = self._abs(entry.path)
            with contextlib.suppress(FileNotFoundError):
                if os.lstat(full).st_mtime <= cutoff:
                    os.unlink(full)
                    n += 1
        return n

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        """See ``Storage.move_tail``; crash-safe through an intent record (``storage.intent``).

        The intent (file, offset, the sidecar's size before) is made durable before the move
        and removed after it; a lease holder that finds one undoes the half-done move
        (``intent.recover``), so the bytes are never left in both files.
        """
        full = self._abs(rel)
        size = os.path.getsize(full)
        if offset >= size:
            return 0
        moved = self.read_range(rel, offset, size)
        side = self._abs(sidecar)
        fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            side_size = os.fstat(fd).st_size
            record = intent.write(self.root, rel=rel, offset=offset, end=size, sidecar=sidecar,
                                  sidecar_size=side_size)
            try:
                _write_all(fd, moved if moved.endswith(b"\n") else moved + b"\n")
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):  # a full disk: take the copy back
                    os.ftruncate(fd, side_size)
                    os.fsync(fd)
                    intent.clear(record)
                raise
        finally:
            os.close(fd)
        os.truncate(full, offset)
        fd = os.open(full, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        intent.clear(record)
        return len(moved)

    def open(self, rel: str, mode: str = "rb") -> BinaryIO:
        if mode != "ab":
            return super().open(rel, mode)
        full = self._abs(rel)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        fd = os.open(full, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return os.fdopen(fd, "ab", buffering=0)  # one write() per call
