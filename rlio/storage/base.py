"""Where bytes go: one interface, a backend per kind of location.

This module owns rlio's write semantics per backend (DESIGN principle 5): atomic whole-file
replace, appends handed to the OS (or batched and composed on object stores), durable appends
under an inter-process lock, tail reads, and moving a file's tail aside into a sidecar.

Backends: local paths (and ``file://``) take a fast path of plain ``os`` calls; ``memory://`` uses
fsspec's in-process memory filesystem; ``gs://`` is implemented in ``rlio._gcs`` over the JSON API
requests of a gcsfs filesystem. This is the only module that imports fsspec (and, through it,
gcsfs), and only when a non-local URI is opened: ``rlio._gcs*`` receive the filesystem object and
never import either package themselves.

What object stores refuse (``UnsafeStorageError``): opening a file in an append or update mode
(gcsfs turns append into an overwrite), and rewriting an existing append-only log with
``replace``; logs change only through ``appender`` and ``move_tail``, conditional there.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import secrets
import stat
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, BinaryIO, Literal, cast

from .errors import RunNotFoundError, UnsafeStorageError
from .layout import APPEND_ONLY, parse_path

EntryKind = Literal["file", "dir", "symlink", "other"]

#: Infix of temporary files written next to their target before an atomic rename.
TEMP_INFIX = ".rlio-tmp-"

#: Run-relative prefixes object-store backends keep for themselves: batch parts waiting to be
#: composed into a log, lease objects, and the empty marker that makes a new run exist before
#: its first file is written. ``walk`` never yields them.
HIDDEN_PREFIXES = (".rlio-parts/", ".rlio-locks/", ".rlio-run")


def is_log(rel: str) -> bool:
    """True for an append-only file (``metrics.jsonl``, ...) or one of its sidecars."""
    return rel in APPEND_ONLY or parse_path(rel).kind == "sidecar"


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry found when walking a run.

    Attributes:
        path: run-relative POSIX path.
        kind: ``file``, ``dir`` (a real directory: reported, then walked into), ``symlink``
            (reported, never followed) or ``other`` (fifo, socket, device).
        size: size in bytes for files, else 0.
        target_inside: for symlinks, whether the target resolves inside the run.
    """

    path: str
    kind: EntryKind
    size: int = 0
    target_inside: bool | None = None


class Appender(ABC):
    """An open append-only file.

    ``append`` hands complete lines to the backend quickly (local: one ``write`` to the OS before it
    returns); ``append_durable`` returns only once the bytes are durable and is safe against
    concurrent writers in other processes.
    """

    @abstractmethod
    def append(self, data: bytes) -> None:
        """Append complete lines (``data`` ends with ``\\n``)."""

    @abstractmethod
    def append_durable(self, data: bytes) -> None:
        """Append complete lines durably, under the file's inter-process lock."""

    @abstractmethod
    def flush(self) -> None:
        """Make everything appended so far durable."""

    @abstractmethod
    def close(self) -> None:
        """Flush and release the file. Idempotent."""


class Storage(ABC):
    """A run directory: a local folder or an fsspec URI. Paths are run-relative POSIX strings."""

    #: The run's location as given by the user (normalized).
    root: str
    #: True for the local fast path.
    is_local: bool = False

    def display(self, rel: str) -> str:
        """A full path or URI of ``rel`` for messages."""
        return f"{self.root.rstrip('/')}/{rel}" if rel else self.root

    @abstractmethod
    def exists(self) -> bool:
        """True when the run directory itself exists (an object store: has any object)."""

    @abstractmethod
    def walk(self) -> Iterator[Entry]:
        """Every entry under the run, recursively, sorted by name per directory.

        Directories are yielded and then descended into; symlinks are yielded, never followed.
        Object stores yield only files.
        """

    @abstractmethod
    def stat(self, rel: str) -> Entry | None:
        """The entry at ``rel`` (without following a final symlink), or None when absent."""

    @abstractmethod
    def open_read(self, rel: str) -> BinaryIO:
        """A buffered binary stream of the file, for streaming reads."""

    @abstractmethod
    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the file (shorter at the end of the file)."""

    def read_bytes(self, rel: str) -> bytes:
        """The whole file."""
        with self.open_read(rel) as f:
            return f.read()

    def size(self, rel: str) -> int:
        """Size of the file in bytes; FileNotFoundError when absent."""
        e = self.stat(rel)
        if e is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", self.display(rel))
        return e.size

    @abstractmethod
    def replace(self, rel: str, data: bytes) -> None:
        """Write a whole file atomically: readers see the old or the new bytes, never a mix."""

    @abstractmethod
    def appender(self, rel: str) -> Appender:
        """Open ``rel`` for appends, creating it (and its directory) when absent."""

    @abstractmethod
    def lock(self, rel: str) -> contextlib.AbstractContextManager[None]:
        """An inter-process lock guarding repairs and durable appends of ``rel``."""

    @abstractmethod
    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        """Move bytes ``[offset:]`` of ``rel`` to the end of ``sidecar``, then cut ``rel`` there.

        The bytes reach the sidecar durably before ``rel`` is shortened, so a crash in between
        leaves them in both places, never in neither. Returns the number of bytes moved. Callers
        hold ``lock(rel)``.
        """

    def open(self, rel: str, mode: str = "rb") -> BinaryIO:
        """Open ``rel`` as a binary file object.

        ``"rb"`` streams (``open_read``); ``"wb"`` buffers and, when the file object is closed
        without an exception, writes the whole file with ``replace`` (atomic). Append and update
        modes are refused on every backend but the local one: object stores have no append
        (gcsfs silently truncates), so appends go through ``appender`` instead.

        Raises:
            UnsafeStorageError: an append or update mode (``a``, ``+``) on a non-local backend.
            ValueError: any other mode.
        """
        if mode == "rb":
            return self.open_read(rel)
        if "a" in mode or "+" in mode:
            raise UnsafeStorageError(
                errno.EOPNOTSUPP,
                f"refusing to open {self.display(rel)} in mode {mode!r}: only 'ab' on a local "
                "disk appends safely (object stores cannot append in place: gcsfs turns append "
                "into an overwrite); use appender()",
            )
        if mode == "wb":
            return cast(BinaryIO, _ReplaceOnClose(self, rel))
        raise ValueError(f"mode must be 'rb', 'wb' or (local only) 'ab', got {mode!r}")

    @abstractmethod
    def create(self) -> None:
        """Make the run exist (``exists()`` is then true) before anything is written in it.

        ``open_storage(..., create=True)`` calls this. Object stores have no directories: a new
        run gets an empty hidden marker object instead, so that a reader opening it right after
        a writer did (``read_resume_state`` on a fresh run) finds an empty run, as on disk.
        """

    def sweep_orphans(self) -> int:
        """Delete batch parts a crashed writer left behind; the number deleted.

        Only object stores have any (``.rlio-parts/``); ``open_storage(..., create=True)`` calls
        this, so a writer that reopens a run cleans up after a crash. Safe while other writers
        append: a writer whose part is swept before it was composed uploads it again.
        """
        return 0


class _ReplaceOnClose(io.BytesIO):
    """The file object of ``Storage.open(rel, "wb")``: a buffer replaced into place on close."""

    def __init__(self, storage: Storage, rel: str) -> None:
        super().__init__()
        self._storage = storage
        self._rel = rel
        self._discard = False

    def close(self) -> None:
        if not self.closed and not self._discard:
            self._storage.replace(self._rel, self.getvalue())
        super().close()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._discard = exc_type is not None  # a failed write must not replace the old file
        self.close()


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

    def fileno(self) -> int:
        """The O_APPEND descriptor, for a caller that serializes its writes with ``close``."""
        return self._require_fd()

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

    @contextlib.contextmanager
    def replacing(self, rel: str) -> Iterator[Callable[[bytes | bytearray], None]]:
        """Replace ``rel`` atomically with bytes written in pieces: yields their ``write``.

        Like ``replace`` (temp file in the same directory, fsync, rename, directory fsync) for
        data produced while it is written: each piece goes to the temp file at once and its
        write-back to disk is started (``posix_fadvise``), so the fsync when the block exits
        has little left to wait for. When the block raises, the temp file is removed and
        ``rel`` is unchanged.
        """
        full = self._abs(rel)
        parent = os.path.dirname(full)
        os.makedirs(parent or ".", exist_ok=True)
        tmp = os.path.join(parent, f".{os.path.basename(full)}{TEMP_INFIX}{secrets.token_hex(4)}")
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


_MEMORY_MUTEX = threading.Lock()  # memory:// is process-local: one mutex orders all its writes
_MEMORY_LOCKS: dict[str, threading.Lock] = {}  # lock(rel) per path, like a process-wide flock


class _MemoryAppender(Appender):
    """Appends to a ``memory://`` file: each call rewrites the file under the process mutex."""

    def __init__(self, fs: Any, path: str) -> None:
        self._fs = fs
        self._path: str | None = path

    def append(self, data: bytes) -> None:
        if self._path is None:
            raise ValueError("append to a closed memory:// appender")
        with _MEMORY_MUTEX:
            old = self._fs.cat_file(self._path) if self._fs.isfile(self._path) else b""
            self._fs.pipe_file(self._path, old + data)

    def append_durable(self, data: bytes) -> None:
        self.append(data)  # visible to every reader in the process at once

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
        if info["type"] == "file":
            return Entry(rel, "file", int(info["size"]))
        return Entry(rel, "dir")

    def open_read(self, rel: str) -> BinaryIO:
        return io.BytesIO(self._fs.cat_file(self._abs(rel)))

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        return bytes(self._fs.cat_file(self._abs(rel), start, end))

    def replace(self, rel: str, data: bytes) -> None:
        path = self._abs(rel)
        with _MEMORY_MUTEX:
            if is_log(rel) and self._fs.isfile(path):
                raise UnsafeStorageError(
                    errno.EEXIST, f"refusing to rewrite the append-only log {self.display(rel)} "
                    "with replace(); logs change only through appender() and move_tail()")
            self._fs.pipe_file(path, bytes(data))

    def appender(self, rel: str) -> Appender:
        return _MemoryAppender(self._fs, self._abs(rel))

    @contextlib.contextmanager
    def lock(self, rel: str) -> Iterator[None]:
        with _MEMORY_MUTEX:
            lk = _MEMORY_LOCKS.setdefault(self._abs(rel), threading.Lock())
        with lk:
            yield

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        path, side = self._abs(rel), self._abs(sidecar)
        with _MEMORY_MUTEX:
            data = bytes(self._fs.cat_file(path))
            moved = data[offset:]
            if not moved:
                return 0
            old = self._fs.cat_file(side) if self._fs.isfile(side) else b""
            self._fs.pipe_file(side, old + (moved if moved.endswith(b"\n") else moved + b"\n"))
            self._fs.pipe_file(path, data[:offset])
        return len(moved)


def _scheme(location: str) -> str | None:
    head, sep, _ = location.partition("://")
    return head.lower() if sep and head.isidentifier() else None


def _open_gcs(location: str) -> Storage:
    """A ``gs://bucket/prefix`` run over a gcsfs filesystem (gcsfs is imported here, not before).

    ``STORAGE_EMULATOR_HOST`` points gcsfs at an emulator; rlio then authenticates anonymously
    (otherwise gcsfs's default credential chain applies). rlio uses gcsfs's core filesystem class,
    never its experimental zonal/HNS subclass, whose probing is a gRPC call an emulator never
    answers (about a minute per bucket); with an emulator the environment variable that enables
    that subclass is also defaulted to off before gcsfs is imported. Listing caches are off:
    another process's writes must be seen at once.
    """
    bucket, _, prefix = location.split("://", 1)[1].partition("/")
    if not bucket:
        raise ValueError(f"a gs:// URI needs a bucket, got {location!r} (expected gs://BUCKET/RUN)")
    emulator = bool(os.environ.get("STORAGE_EMULATOR_HOST"))
    if emulator:
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    from gcsfs.core import GCSFileSystem

    from ._gcs import GcsStorage

    fs = GCSFileSystem(token="anon" if emulator else None, use_listings_cache=False)
    return GcsStorage(fs, bucket, prefix.strip("/"))


def _open_remote(location: str, scheme: str) -> Storage:
    """The fsspec-backed storage of a URI; fsspec (and gcsfs for gs://) is imported here only."""
    if scheme == "memory":
        import fsspec

        return MemoryStorage(location, fsspec.filesystem("memory"))
    if scheme in ("gs", "gcs"):
        return _open_gcs(location)
    raise UnsafeStorageError(
        errno.EPROTONOSUPPORT,
        f"{location}: {scheme}:// run directories are not supported; use a local path, "
        "file://, memory:// or gs://",
    )


def open_storage(location: str | os.PathLike[str], *, create: bool = False) -> Storage:
    """The backend for a local path or URI (``file://``, ``memory://``, ``gs://``).

    Args:
        location: a local directory or an fsspec URI.
        create: create the run directory when it is absent (writers); readers leave it. On an
            object store this also sweeps batch parts a crashed writer left (``sweep_orphans``).

    Raises:
        RunNotFoundError: ``create`` is false and the run does not exist.
        UnsafeStorageError: a scheme rlio cannot write safely (anything but the above).
    """
    loc = os.fspath(location)
    scheme = _scheme(loc)
    storage: Storage
    if scheme in (None, "file"):
        path = loc[len("file://"):] if scheme == "file" else loc
        storage = LocalStorage(path.rstrip("/") or "/")
        if create:
            storage.create()
    else:
        storage = _open_remote(loc, scheme)
        if create:
            storage.create()
            storage.sweep_orphans()  # a writer (re)opens the run: clean up after a crash
    if not create and not storage.exists():
        raise RunNotFoundError(errno.ENOENT, "run directory not found", loc)
    return storage
