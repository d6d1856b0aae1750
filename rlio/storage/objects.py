"""``ObjectStorage``: a run under a bucket (or container) prefix of an object store, written once
for gs://, s3:// and az://; each cloud's ``storage`` module implements the adapter below it.

Above the adapter, here: object names (``key``), whether the run exists and making it exist (an
empty hidden marker object), listing (``walk``, ``stat``), ranged reads (a whole non-log file
past the first chunk read from the version first seen: a replacement midway is ``ESTALE``, never
a mix), whole-file replaces (an existing append-only log is never rewritten this way), tail
moves, ``lock`` objects, and the run lease with its fencing of the live logs
(``rlio.storage.fencing``).

The adapter (what differs per cloud): ``_names`` (list), ``_head`` (size, version, metadata),
``_get`` (a ranged GET, optionally pinned to a version), ``_put`` (a whole upload, optionally
create-only), ``_create_log``, ``_rewrite_log`` (conditional on a version), ``_set_metadata``
(conditional, moving the version), ``_delete``, and for the lease object
(``rlio.storage.lease_object``) ``_put_if`` and ``_delete_if`` (or a ``_new_lease`` of its own:
az://'s blob lease).
Appends are the cloud's own (``appender``: compose, UploadPartCopy, AppendBlock over
``rlio.storage.batching``).
"""

from __future__ import annotations

import contextlib
import errno
import io
import secrets
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO, NamedTuple

from rlio.errors import RunNotFoundError, UnsafeStorageError
from rlio.layout import content_type
from rlio.storage import fencing, remote
from rlio.storage.base import HIDDEN_PREFIXES, Entry, Storage, is_log, rewrite_refused
from rlio.storage.lease import LEASE_NAME, LEASE_SECONDS, Lease
from rlio.storage.lease_object import ObjectLease, live_holder
from rlio.storage.ranged import RangeReader

#: Run-relative name of the empty object that makes a new run exist before its first file.
RUN_MARKER = ".rlio-run"
#: Bytes fetched per GET when streaming a file.
READ_CHUNK = 4 << 20
#: Where ``lock`` objects live (run-relative, hidden from ``walk``), and the expiry of one whose
#: holder crashed (stopped renewing it), in seconds.
LOCKS_DIR = ".rlio-locks"
LOCK_SECONDS = 15.0


class Head(NamedTuple):
    """What a HEAD tells of an object: its size, version (generation, ETag), metadata, and
    whether appends may land on it (az://: an append blob)."""

    size: int
    version: Any
    metadata: Mapping[str, str]
    appendable: bool = True
    #: gs:// only: the metageneration (moved by a metadata change, unlike the generation).
    meta_version: Any = None


class ObjectStorage(Storage):
    """A run under ``<scheme>://<bucket>/<prefix>`` (see the module docstring)."""

    #: What the store calls an object and a bucket, for messages.
    noun, bucket_noun = "object", "bucket"
    #: The metadata names of a log's rewrite count and last rewrite's id (``move_tail``).
    meta_rewrites, meta_rewrite_id = "rlio-rewrites", "rlio-rewrite-id"
    #: The metadata name of the newest holder's epoch on a log (``rlio.storage.fencing``).
    meta_epoch = "rlio-epoch"

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
    def _head(self, key: str) -> Head | None:
        """The object ``key`` as a HEAD tells it, or None when absent."""

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
    def _rewrite_log(self, rel: str, data: bytes, metadata: dict[str, str], version: Any
                     ) -> None:
        """Replace the log ``rel`` whole with ``data`` and ``metadata``, only while it is
        ``version`` (``FileExistsError`` or ``FileNotFoundError`` otherwise)."""

    @abstractmethod
    def _delete(self, key: str) -> None:
        """Delete ``key``; nothing when absent."""

    @abstractmethod
    def _set_metadata(self, rel: str, metadata: dict[str, str], head: Head) -> None:
        """Replace the metadata of ``rel`` only while it is the version ``head`` read, so that
        its version moves (``FileExistsError`` or ``FileNotFoundError`` otherwise)."""

    def _new_lease(self, key: str, where: str, lease_seconds: float, *, run: bool) -> Lease:
        """Take the lease object ``key`` (``RunInUseError`` while another holder has it); the
        run's lease (``run``: expired in place on release, so that epochs grow) or a
        ``lock``'s. By default ``rlio.storage.lease_object`` over ``_put_if``/``_delete_if``."""
        return ObjectLease(self, key, where, lease_seconds=lease_seconds, keep=run)

    def _put_if(self, key: str, data: bytes, metadata: dict[str, str], match: Any) -> Any:
        """Write ``key`` whole with ``metadata`` only while it is version ``match`` (None: only
        where absent); its new version (``FileExistsError`` otherwise). Only the default
        ``_new_lease`` needs it."""
        raise NotImplementedError

    def _delete_if(self, key: str, version: Any) -> None:
        """Delete ``key`` only while it is ``version`` (``FileExistsError`` or
        ``FileNotFoundError`` otherwise). Only the default ``_new_lease`` needs it."""
        raise NotImplementedError

    def lease_holder(self) -> dict[str, Any] | None:
        """See ``Storage.lease_holder``: the lease object's holder until it expires."""
        return live_holder(self, self.key(LEASE_NAME))

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
        head = self._head(self.key(rel))
        if head is not None:
            return Entry(rel, "file", head.size)
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
                if self._head(self.key(rel)) is None:
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
        lease = self._new_lease(self.key(LEASE_NAME), self.root, lease_seconds, run=True)
        self._fence = fencing.fence_logs(lease, self._fence_log)
        return self._fence

    def _fence_log(self, rel: str, epoch: int) -> int:
        """Record ``epoch`` in the metadata of the log ``rel`` (``fencing.record_epoch``)."""
        key = self.key(rel)

        def head() -> tuple[Mapping[str, str], Head] | None:
            cur = self._head(key)
            return None if cur is None else (cur.metadata, cur)

        return fencing.record_epoch(epoch, self.meta_epoch, head,
                                    lambda meta, cur: self._set_metadata(rel, meta, cur))

    def lock(self, rel: str) -> contextlib.AbstractContextManager[None]:
        """A lease object of ``rel`` under ``LOCKS_DIR`` (renewed while held, taken over once
        its holder stopped renewing it); waits while another live holder has it."""
        key = f"{self.key(LOCKS_DIR)}/{rel}.lock"
        return remote.held(lambda: self._new_lease(key, self.display(rel), LOCK_SECONDS,
                                                   run=False))

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        """See ``Storage.move_tail``: the tail (read from one version) reaches the sidecar
        durably first; the log is then rewritten conditionally on its version, keeping appends
        that landed in between and refusing any other change."""
        key = self.key(rel)
        while True:
            first = self._head(key)
            if first is None:
                raise self._missing(rel)
            if offset >= first.size:
                return 0
            try:
                tail = self._get(key, offset, first.size, first.version)[0]
                break
            except (FileNotFoundError, FileExistsError):
                continue  # the log changed between the two requests: look again
        side = self.appender(sidecar)
        try:
            side.append_durable(tail if tail.endswith(b"\n") else tail + b"\n")
        finally:
            side.close()
        cur, token = first, secrets.token_hex(8)
        while True:
            try:
                kept = self._get(key, 0, offset, cur.version)[0] if offset else b""
                if cur.size > first.size:
                    later = self._get(key, first.size, cur.size, cur.version)[0]
                    if not tail.endswith(b"\n") and later.startswith(b"\n"):
                        later = later[1:]  # the newline that parted them from the moved fragment
                    kept += later
                self._rewrite_log(rel, kept, self._rewritten(cur, token), cur.version)
                return len(tail)
            except (FileNotFoundError, FileExistsError):
                new = self._head(key)
            if new is not None and new.metadata.get(self.meta_rewrite_id) == token:
                return len(tail)  # our rewrite landed; its answer was lost and the retry got 412
            if new is None or not self._appended_only(first, new):
                raise UnsafeStorageError(
                    errno.EAGAIN,
                    f"{self.display(rel)} was changed by another writer (not an rlio append) "
                    f"while bytes {offset}..{first.size} were moved to {self.display(sidecar)}; "
                    "the log was left as it is, so those bytes are now in both places",
                )
            cur = new

    def _rewritten(self, head: Head, token: str) -> dict[str, str]:
        """The metadata of a log rewritten by ``move_tail``: rewrites + 1, this rewrite's id."""
        meta = dict(head.metadata)
        done = meta.get(self.meta_rewrites, "0")
        meta[self.meta_rewrites] = str(int(done) + 1 if done.isascii() and done.isdigit() else 1)
        meta[self.meta_rewrite_id] = token
        return meta

    def _appended_only(self, before: Head, after: Head) -> bool:
        """True when ``after`` can only have come from ``before`` by rlio appends."""
        rewrites = before.metadata.get(self.meta_rewrites)
        return (rewrites is not None and after.metadata.get(self.meta_rewrites) == rewrites
                and after.size >= before.size and after.appendable)
