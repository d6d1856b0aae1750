"""``ObjectStorage``: a run under a bucket (or container) prefix of an object store, written once
for gs://, s3:// and az://; each cloud's ``storage`` module implements the adapter below it.

Above the adapter, here: object names (``key``), whether the run exists and making it exist (an
empty hidden marker object), listing (``walk``, ``stat``), ranged reads (a whole non-log file
past the first chunk read from the version first seen: a replacement midway is ``ESTALE``, never
a mix), whole-file replaces (an existing append-only log is never rewritten this way) and the
run lease with its fencing of the live logs (``rlio.storage.fencing``).

The adapter (what differs per cloud): ``_names`` (list), ``_size`` (head), ``_get`` (a ranged GET,
optionally pinned to a version), ``_put`` (a whole upload, optionally create-only),
``_create_log``, ``_delete``, ``_new_lease`` and ``_fence_log``.
"""

from __future__ import annotations

import errno
import io
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, BinaryIO

from rlio.errors import RunNotFoundError
from rlio.layout import content_type
from rlio.storage import fencing
from rlio.storage.base import HIDDEN_PREFIXES, Entry, Storage, is_log, rewrite_refused
from rlio.storage.lease import LEASE_SECONDS, Lease
from rlio.storage.ranged import RangeReader

#: Run-relative name of the empty object that makes a new run exist before its first file.
RUN_MARKER = ".rlio-run"
#: Bytes fetched per GET when streaming a file.
READ_CHUNK = 4 << 20


class ObjectStorage(Storage):
    """A run under ``<scheme>://<bucket>/<prefix>`` (see the module docstring)."""

    #: What the store calls an object and a bucket, for messages.
    noun, bucket_noun = "object", "bucket"

    def __init__(self, scheme: str, bucket: str, prefix: str) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.root = (f"{scheme}://{bucket}/{self.prefix}" if self.prefix
                     else f"{scheme}://{bucket}")
        self._bucket_uri = f"{scheme}://{bucket}"
        self._fence: Lease | None = None  # the run lease this storage took: its logs' fence

    # -- the adapter -------------------------------------------------------------------------

    @abstractmethod
    def _names(self, prefix: str, limit: int | None = None) -> Iterator[tuple[str, int]]:
        """(name, size) of the objects whose names start with ``prefix``, in name order (the
        first page only when ``limit`` is given)."""

    @abstractmethod
    def _size(self, key: str) -> int | None:
        """The size of object ``key``, or None when absent."""

    @abstractmethod
    def _get(self, key: str, start: int, end: int | None, pin: Any = None
             ) -> tuple[bytes, int, Any]:
        """One ranged GET of bytes ``[start, end)`` (to the end when ``end`` is None), only from
        version ``pin`` if given (``FileNotFoundError`` or ``FileExistsError`` once gone): the
        bytes, the object's total size and its version."""

    @abstractmethod
    def _put(self, key: str, data: bytes, *, ctype: str, create_only: bool = False) -> None:
        """Write ``key`` whole, atomically; only where absent with ``create_only``
        (``FileExistsError`` otherwise)."""

    @abstractmethod
    def _create_log(self, rel: str, data: bytes) -> None:
        """Create the append-only log ``rel`` holding ``data``, only where absent
        (``FileExistsError`` otherwise)."""

    @abstractmethod
    def _delete(self, key: str) -> None:
        """Delete ``key``; nothing when absent."""

    @abstractmethod
    def _new_lease(self, lease_seconds: float) -> Lease:
        """Take the run's lease object (``RunInUseError`` while another holder has it)."""

    @abstractmethod
    def _fence_log(self, rel: str, epoch: int) -> int:
        """``fencing.record_epoch`` of the log ``rel`` in this store."""

    # -- one implementation above it ---------------------------------------------------------

    def key(self, rel: str) -> str:
        """The object name of run-relative ``rel``."""
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def _missing(self, rel: str) -> FileNotFoundError:
        return FileNotFoundError(errno.ENOENT, f"no such {self.noun}", self.display(rel))

    def _any(self, prefix: str) -> bool:
        """True when some object's name starts with ``prefix``."""
        return any(True for _ in self._names(prefix, limit=1))

    def exists(self) -> bool:
        try:
            return self._any(self.key(""))
        except FileNotFoundError:  # no such bucket
            return False

    def create(self) -> None:
        try:
            if self._any(self.key("")) or not self.prefix:
                return
            self._put(self.key(RUN_MARKER), b"", ctype=content_type(RUN_MARKER),
                      create_only=True)
        except FileExistsError:
            pass  # another writer created the run at the same time
        except FileNotFoundError:
            raise RunNotFoundError(errno.ENOENT, f"no such {self.bucket_noun}",
                                   self._bucket_uri) from None

    def walk(self) -> Iterator[Entry]:
        cut = len(self.key(""))
        for name, size in self._names(self.key("")):
            rel = name[cut:]
            if rel and not rel.endswith("/") and not rel.startswith(HIDDEN_PREFIXES):
                yield Entry(rel, "file", size)

    def stat(self, rel: str) -> Entry | None:
        size = self._size(self.key(rel))
        if size is not None:
            return Entry(rel, "file", size)
        return Entry(rel, "dir") if self._any(self.key(rel) + "/") else None

    def open_read(self, rel: str) -> BinaryIO:
        """Streams the bytes the object had when opened (appends made later are not read).

        The first ``READ_CHUNK`` bytes come with the size in one GET, so a small file is read
        atomically. Past that, a whole file is read from the version first seen (a replacement
        midway raises ``OSError``); a log is read unpinned, since appends only add bytes after
        the ones being read.
        """
        key = self.key(rel)
        try:
            first, size, version = self._get(key, 0, READ_CHUNK)
        except FileNotFoundError:
            raise self._missing(rel) from None
        pin = None if is_log(rel) else version
        raw = RangeReader(lambda start, end: self._get(key, start, end, pin)[0], first, size,
                          self.display(rel), noun=self.noun)
        return io.BufferedReader(raw, buffer_size=READ_CHUNK)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        try:
            if end <= start:
                if self._size(self.key(rel)) is None:
                    raise self._missing(rel)
                return b""
            return self._get(self.key(rel), start, end)[0]
        except FileNotFoundError:
            raise self._missing(rel) from None

    def read_bytes(self, rel: str) -> bytes:
        try:
            return self._get(self.key(rel), 0, None)[0]  # one GET: never a mix of versions
        except FileNotFoundError:
            raise self._missing(rel) from None

    def replace(self, rel: str, data: bytes) -> None:
        if not is_log(rel):
            self._put(self.key(rel), bytes(data), ctype=content_type(rel))
            return
        try:
            self._create_log(rel, bytes(data))
        except FileExistsError:
            raise rewrite_refused(self.display(rel)) from None

    def remove(self, rel: str) -> None:
        self._delete(self.key(rel))

    def acquire_lease(self, *, lease_seconds: float = LEASE_SECONDS) -> Lease:
        """The run lease (the cloud's lease object); then every live log is fenced with its
        epoch (``rlio.storage.fencing``)."""
        self._fence = fencing.fence_logs(self._new_lease(lease_seconds), self._fence_log)
        return self._fence
