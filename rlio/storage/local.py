"""Local run directories: plain ``os`` calls, O_APPEND appends, fsync and ``os.replace``.

One lock discipline (DESIGN §8): every append to a log, plain or durable, and every tail move
(``move_tail``: torn-tail repair, resume rewind) holds the file's ``flock`` across processes, so
no append lands between a tail move's copy and its cut. Under the lock an append looks at the
file's last byte and starts on a new line after a fragment (a crashed writer's cut-off line),
never glued onto it. A failed append (ENOSPC, EIO, EDQUOT, a short write) leaves nothing
behind: under the lock nobody appended after its bytes, so they are cut off again before
``AppendError`` is raised (where even that fails, the next append starts on a new line).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator
from typing import Any, BinaryIO

from rlio.errors import AppendError
from rlio.storage import intent, locking
from rlio.storage.base import HIDDEN_PREFIXES, TEMP_INFIX, Appender, Entry, Storage, is_log
from rlio.storage.lease import LEASE_NAME, LEASE_SECONDS, Lease, LocalLease, local_holder

#: Where the ``filelock`` fallback keeps its lock files when ``fcntl`` is missing.
LOCKS_DIR = ".rlio-locks"


class _Failed(OSError):
    """A write that failed after ``written`` of its bytes reached the file."""

    def __init__(self, written: int, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.written = written


def _write_all(fd: int, data: bytes | memoryview, done: int = 0) -> None:
    """Write ``data[done:]``, completing short writes (a full disk, a signal)."""
    view = memoryview(data)
    while done < len(view):
        try:
            n = os.write(fd, view[done:])
        except OSError as exc:
            raise _Failed(done, exc) from exc
        if n <= 0:
            raise _Failed(done, OSError(errno.ENOSPC, "short write: no byte was written"))
        done += n


class _LocalAppender(Appender):
    """An O_APPEND descriptor; every append is written whole under the file's lock."""

    def __init__(self, fd: int, path: str, lock_path: str) -> None:
        self._path = path
        self._lock_path = lock_path
        self._fd: int | None = fd

    def append(self, data: bytes) -> None:
        self._append_locked(data, durable=False)

    def append_durable(self, data: bytes) -> None:
        self._append_locked(data, durable=True)

    def _append_locked(self, data: bytes, *, durable: bool) -> None:
        """Under the file's lock: on a new line, written whole, fsync'd when ``durable``."""
        fd = self._fd
        if fd is None:
            raise ValueError(f"append to closed file {self._path}")
        with locking.exclusive(fd, self._lock_path):
            size = os.lseek(fd, 0, os.SEEK_END)  # the size (O_APPEND writes ignore the offset)
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # after a fragment: it stays a line of its own (torn)
            try:
                done = os.write(fd, data)
                if done != len(data):  # a short write (a full disk, a signal): the rest
                    _write_all(fd, data, done)
                if durable:
                    os.fsync(fd)
            except OSError as exc:  # nobody appended since (we hold the lock): cut ours off
                with contextlib.suppress(OSError):  # else the next append starts a new line
                    os.ftruncate(fd, size)
                    if durable:
                        os.fsync(fd)
                raise self._error(exc) from None

    def _error(self, exc: OSError) -> AppendError:
        return AppendError(exc.errno or errno.EIO,
                           f"append failed ({exc.strerror or exc}); the file was left at its last "
                           "complete line", self._path)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _temp_name(name: str) -> str:
    """The temp file of an atomic replace of ``name``: ``.NAME.rlio-tmp-XXXXXXXX``, with NAME
    cut so that it stays within 255 bytes (a 250-byte run file is still written atomically)."""
    tail = f"{TEMP_INFIX}{os.urandom(4).hex()}"
    room = 255 - 1 - len(tail.encode())
    head = os.fsencode(name)[:room].decode("utf-8", "ignore") if len(os.fsencode(name)) > room \
        else name
    return f".{head}{tail}"


class LocalStorage(Storage):
    """A run directory on a local filesystem: plain ``os`` calls, fsync and ``os.replace``."""

    is_local = True

    def __init__(self, root: str) -> None:
        self.root = root
        self._real_root = os.path.realpath(root)
        text = os.fspath(root)  # (a caller may hand in a path object)
        self._prefix = text if text.endswith("/") else text + "/"

    def _abs(self, rel: str) -> str:
        return self._prefix + rel if rel else self.root

    def exists(self) -> bool:
        """True when the run directory exists; permission and I/O errors raise (never "absent")."""
        try:
            return stat.S_ISDIR(os.stat(self.root).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def create(self) -> None:
        os.makedirs(self.root, exist_ok=True)

    def _entry(self, rel: str, st: os.stat_result, full: str) -> Entry:
        if stat.S_ISREG(st.st_mode):
            return Entry(rel, "file", st.st_size)
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(full)
            inside = target == self._real_root or target.startswith(self._real_root + os.sep)
            return Entry(rel, "symlink", 0, inside)
        return Entry(rel, "dir" if stat.S_ISDIR(st.st_mode) else "other")

    def walk(self) -> Iterator[Entry]:
        """See ``Storage.walk``. A run directory that cannot be listed (permission, I/O) raises:
        only a missing one is empty; a subdirectory that cannot be listed is not descended into."""
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
                listing = sorted(it, key=lambda de: de.name)
            prefix = f"{rel_dir}/" if rel_dir else ""
            for de in listing:
                if not rel_dir and (de.name + "/").startswith(HIDDEN_PREFIXES):
                    continue
                try:
                    entry = self._entry(prefix + de.name, de.stat(follow_symlinks=False), de.path)
                except OSError:
                    continue
                if entry.kind == "dir":
                    stack.append(entry.path)
                yield entry

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

    def replace_derived(self, rel: str, data: bytes) -> None:
        """Temp file in the same directory, then rename: never torn, but no fsync (a log: as
        ``replace``)."""
        self.replace_all([(rel, data)], sync=is_log(rel))

    def replace_all(self, files: list[tuple[str, bytes]], *, sync: bool = True) -> None:
        """Every temp file written and fsync'd, then renamed in order, then one fsync of each
        directory: n + 1 syncs for n files in one directory, not 2n."""
        temps: list[tuple[str, str]] = []
        try:
            for rel, data in files:
                full = self._abs(rel)
                parent, name = os.path.split(full)
                os.makedirs(parent or ".", exist_ok=True)
                tmp = os.path.join(parent, _temp_name(name))
                temps.append((tmp, full))
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
                try:
                    _write_all(fd, data)
                    if sync:
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
        if sync:
            for parent in dict.fromkeys(os.path.dirname(self._abs(rel)) for rel, _ in files):
                locking.fsync_path(parent, directory=True)

    def _lock_path(self, rel: str) -> str:
        """The ``filelock`` fallback's lock file of ``rel`` (unused where ``flock`` exists)."""
        return os.path.join(self.root, LOCKS_DIR, *rel.split("/")) + ".lock"

    def _open_append(self, rel: str, *, read: bool = False) -> int:
        """An O_APPEND descriptor of ``rel``, created (with its directory) when absent."""
        full = self._abs(rel)
        os.makedirs(os.path.dirname(full) or ".", exist_ok=True)
        mode = os.O_RDWR if read else os.O_WRONLY
        return os.open(full, mode | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def appender(self, rel: str) -> Appender:
        fd = self._open_append(rel, read=True)  # read: a locked append looks at the last byte
        return _LocalAppender(fd, self._abs(rel), self._lock_path(rel))

    @contextlib.contextmanager
    def lock(self, rel: str) -> Iterator[None]:
        fd = self._open_append(rel)
        try:
            with locking.exclusive(fd, self._lock_path(rel)):
                yield
        finally:
            os.close(fd)

    def acquire_lease(self, *, lease_seconds: float = LEASE_SECONDS) -> Lease:
        """An exclusive lock on ``<run>/.rlio-lease`` the OS drops when the holder dies."""
        return LocalLease(self._abs(LEASE_NAME))

    def lease_holder(self) -> dict[str, Any] | None:
        """See ``Storage.lease_holder``: the lease file's holder, if its process is alive."""
        return local_holder(self._abs(LEASE_NAME))

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        """Undo half-done tail moves (``intent.recover``), then delete the temp files of atomic
        replaces last modified before ``older_than`` (all without it); the files deleted."""
        intent.recover(self.root)
        cutoff = time.time() if older_than is None else older_than
        n = 0
        for entry in self.walk():
            name = entry.path.rpartition("/")[2]
            if entry.kind == "file" and name.startswith(".") and TEMP_INFIX in name:
                with contextlib.suppress(FileNotFoundError):
                    if os.lstat(self._abs(entry.path)).st_mtime <= cutoff:
                        os.unlink(self._abs(entry.path))
                        n += 1
        return n

    def tail_moving(self, rel: str) -> bool:
        """True while the intent record of a move of ``rel`` exists (see ``move_tail``)."""
        return intent.pending(self.root, rel)

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
        fd = self._open_append(sidecar)
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
        locking.fsync_path(full)
        intent.clear(record)
        return len(moved)

    def remove(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._abs(rel))

    def remove_dir(self, rel: str) -> None:
        with contextlib.suppress(OSError):  # missing or not empty: left alone
            os.rmdir(self._abs(rel))

    def mtime(self, rel: str) -> float | None:
        try:
            return os.lstat(self._abs(rel)).st_mtime
        except (FileNotFoundError, NotADirectoryError):
            return None

    def open(self, rel: str, mode: str = "rb") -> BinaryIO:
        if mode != "ab":
            return super().open(rel, mode)
        return os.fdopen(self._open_append(rel), "ab", buffering=0)  # one write() a call
