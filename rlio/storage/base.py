"""The storage interface every backend implements: ``Storage``, ``Appender`` and ``Entry``.

A backend provides appends (plain and durable), atomic whole-file replace, reads of a whole file
or a range, listing and stat, the run's lease, a per-file lock and moving a file's tail aside
into a sidecar (and, for the cookbook's protocol, ``remove``, ``remove_dir``, ``mtime``); what
is built on those (``replace_all``, ``replace_derived``, ``read_bytes``,
``size``, ``open``) is written here once.

What object stores refuse (``UnsafeStorageError``): opening a file in an append or update mode
(gcsfs turns append into an overwrite), and rewriting an existing append-only log with
``replace``; logs change only through ``appender`` and ``move_tail``, conditional there.
"""

from __future__ import annotations

import contextlib
import errno
import io
from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType
from typing import Any, BinaryIO, Literal, NamedTuple, TypeAlias

from rlio.errors import UnsafeStorageError
from rlio.layout import APPEND_ONLY, parse_path
from rlio.layout import TEMP_INFIX as TEMP_INFIX  # its owner is layout; backends import it here
from rlio.storage.lease import LEASE_SECONDS, InProcessLease, Lease, held_in_process

EntryKind: TypeAlias = Literal["file", "dir", "symlink", "other"]


#: Run-relative prefixes backends keep for themselves, never yielded by ``walk``: batch parts of
#: gs:// appends, lock objects, the marker object of a new run, the lease, tail-move intents.
HIDDEN_PREFIXES = (".rlio-parts/", ".rlio-locks/", ".rlio-run", ".rlio-lease", ".rlio-intent")


def is_log(rel: str) -> bool:
    """True for an append-only file (``metrics.jsonl``, ...) or one of its sidecars."""
    return rel in APPEND_ONLY or parse_path(rel).kind == "sidecar"


def rewrite_refused(where: str) -> UnsafeStorageError:
    """The error of ``replace`` over an existing log on an object store (``where``: its URI)."""
    return UnsafeStorageError(
        errno.EEXIST, f"refusing to rewrite the append-only log {where} with replace(); logs "
        "change only through appender() and move_tail()")


class Entry(NamedTuple):
    """One entry of a run: its run-relative POSIX ``path``; ``kind`` ``file``, ``dir`` (a real
    directory, walked into), ``symlink`` (never followed) or ``other`` (fifo, socket, device);
    ``size`` in bytes for files, else 0; for a symlink, whether its target is inside the run."""

    path: str
    kind: EntryKind
    size: int = 0
    target_inside: bool | None = None


class Appender(ABC):
    """An open append-only file; ``data`` is always complete lines (it ends with ``\\n``)."""

    @abstractmethod
    def append(self, data: bytes) -> None:
        """Hand lines to the backend quickly (local: one ``write`` to the OS before it returns)."""

    @abstractmethod
    def append_durable(self, data: bytes) -> None:
        """Append complete lines durably (returns once they are), safe against concurrent
        writers in other processes."""

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
    #: True for a local folder (its files can be opened by path).
    is_local: bool = False

    def display(self, rel: str) -> str:
        """A full path or URI of ``rel`` for messages."""
        return f"{self.root.rstrip('/')}/{rel}" if rel else self.root

    @abstractmethod
    def exists(self) -> bool:
        """True when the run directory itself exists (an object store: has any object)."""

    @abstractmethod
    def create(self) -> None:
        """Make the run exist (``exists()`` is then true) before anything is written in it.

        Object stores have no directories: a new run gets an empty hidden marker object, so
        that a reader opening it right after a writer did finds an empty run, as on disk.
        """

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

    def acquire_lease(self, *, lease_seconds: float = LEASE_SECONDS) -> Lease:
        """Take the run's lease for one writer, or raise ``RunInUseError`` naming its holder.

        This default keeps it in a table of this process (memory://). ``lease_seconds`` is the
        expiry of a lease that is renewed (object stores).
        """
        return InProcessLease(self.root)

    def lease_holder(self) -> dict[str, Any] | None:
        """The holder record (``host``, ``pid``, ``since``) of a live lease on the run, or None
        when no writer holds it (never taken, released, or its holder died or expired). Read
        only: it never takes or disturbs the lease. This default asks this process's table."""
        return held_in_process(self.root)

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        """Delete what crashed writers left behind; the number of files deleted: gs:// batch
        parts (a writer whose part is swept before its compose uploads it again), or on a local
        disk the temp files of atomic replaces last modified before ``older_than`` (the lease
        holder passes when it took the lease, sparing a live attached writer's temp file)."""
        return 0

    def remove(self, rel: str) -> None:
        """Delete the file ``rel``; nothing when it is absent. Backends that cannot delete
        raise ``UnsafeStorageError`` (the cookbook's ``Storage.remove`` needs it)."""
        raise UnsafeStorageError(errno.EOPNOTSUPP,
                                 f"{self.display(rel)}: this backend cannot delete files")

    def remove_dir(self, rel: str) -> None:
        """Remove the directory ``rel`` when it is empty; nothing otherwise (object stores have
        no directories: a no-op)."""
        return None

    def mtime(self, rel: str) -> float | None:
        """When ``rel`` last changed (seconds since the epoch), or None when absent or unknown."""
        return None

    # -- built on the operations above -----------------------------------------------------

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

    def replace_all(self, files: list[tuple[str, bytes]]) -> None:
        """``replace`` each ``(rel, data)`` in order: a crash leaves a prefix of them new.
        ``LocalStorage`` syncs the directory once for them all."""
        for rel, data in files:
            self.replace(rel, data)

    def replace_derived(self, rel: str, data: bytes) -> None:
        """``replace`` for a file that can be made again at any time (the run report's pages):
        as atomic, but a local disk does not sync it. A log is never derived."""
        self.replace(rel, data)

    def open(self, rel: str, mode: str = "rb") -> BinaryIO:
        """Open ``rel`` as a binary file object.

        ``"rb"`` streams (``open_read``); ``"wb"`` buffers and, when closed without an exception,
        writes the whole file with ``replace``. Append and update modes raise
        ``UnsafeStorageError`` on every backend but the local one (object stores have no append:
        gcsfs silently truncates); any other mode raises ValueError.
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
            return _ReplaceOnClose(self, rel)
        raise ValueError(f"mode must be 'rb', 'wb' or (local only) 'ab', got {mode!r}")


class _ReplaceOnClose(io.BytesIO):
    """The file object of ``Storage.open(rel, "wb")``: a buffer replaced into place on close."""

    def __init__(self, storage: Storage, rel: str) -> None:
        super().__init__()
        self._storage, self._rel, self._discard = storage, rel, False

    def close(self) -> None:
        if not self.closed and not self._discard:
            self._storage.replace(self._rel, self.getvalue())
        super().close()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._discard = exc_type is not None  # a failed write must not replace the old file
        self.close()
