"""s3:// run directories: the ``Storage`` backend for Amazon S3 (and S3-compatible stores).

Every request is a call of one boto3 client (``rlio.storage.s3.api``), which brings the standard
AWS configuration; writes use S3's conditional requests (``If-None-Match``, ``If-Match`` on the
ETag), which S3 has enforced since late 2024.

- ``replace``: one PutObject (readers see the old object or the new one); an existing
  append-only log is never rewritten this way (create-only, else refused).
- Reads: ranged GETs with explicit offsets; a whole non-log file past the first chunk is read
  from the version first seen (``If-Match``), so a replacement midway is an error, never a mix.
- ``appender``: batches written conditionally into the one live object (``s3.append``);
  ``acquire_lease``: a renewed lease object (``s3.lease``), after which the new holder fences
  every live log (its epoch into the log's metadata, which moves its ETag: the old holder's
  next conditional write is refused by the store; ``rlio.storage.fencing``).
- ``move_tail``: the tail reaches the sidecar durably first; the log is then rewritten with
  ``If-Match``, keeping appends that landed in between and refusing any other change.
- ``lock(rel)``: a lease object as the run's, under ``.rlio-locks/``, held for short repairs; a
  crashed holder's is taken over ``LOCK_SECONDS`` after its last renewal.
- ``sweep_orphans``: aborts the multipart uploads a crashed writer left under the run.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import secrets
from collections.abc import Iterator
from typing import Any, BinaryIO

from rlio.errors import RunNotFoundError, UnsafeStorageError
from rlio.layout import content_type
from rlio.storage import fencing, remote
from rlio.storage.base import HIDDEN_PREFIXES, Appender, Entry, Storage, is_log, rewrite_refused
from rlio.storage.lease import LEASE_NAME, LEASE_SECONDS, Lease
from rlio.storage.ranged import RangeReader
from rlio.storage.s3.api import (
    LOCKS_DIR,
    META_EPOCH,
    META_REWRITE_ID,
    META_REWRITES,
    RUN_MARKER,
    ObjectInfo,
    S3Api,
    client,
)
from rlio.storage.s3.append import S3Appender
from rlio.storage.s3.lease import S3Lease, live_holder

_log = logging.getLogger("rlio")
#: Expiry of a ``lock`` object not renewed (its holder crashed), in seconds.
LOCK_SECONDS = 15.0
#: Bytes fetched per GET when streaming a file.
READ_CHUNK = 4 << 20


def _missing(storage: S3Storage, rel: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, "no such object", storage.display(rel))


class S3Storage(Storage):
    """A run under ``s3://bucket/prefix``."""

    def __init__(self, bucket: str, prefix: str, *, s3: Any = None) -> None:
        self.api = S3Api(client() if s3 is None else s3, bucket)
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.root = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._fence: Lease | None = None  # the run lease this storage took: its logs' fence

    def key(self, rel: str) -> str:
        """The object key of run-relative ``rel``."""
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def _any(self, prefix: str) -> bool:
        """True when some object's key starts with ``prefix``."""
        return any(True for _ in self.api.list(prefix, max_keys=1))

    def exists(self) -> bool:
        try:
            return self._any(self.key(""))
        except RunNotFoundError:  # no such bucket
            return False

    def create(self) -> None:
        if self._any(self.key("")) or not self.prefix:
            return
        with contextlib.suppress(FileExistsError):  # another writer created it meanwhile
            self.api.put(self.key(RUN_MARKER), b"", create_only=True)

    def walk(self) -> Iterator[Entry]:
        cut = len(self.key(""))
        for obj in self.api.list(self.key("")):
            rel = obj["Key"][cut:]
            if rel and not rel.endswith("/") and not rel.startswith(HIDDEN_PREFIXES):
                yield Entry(rel, "file", int(obj.get("Size", 0)))

    def stat(self, rel: str) -> Entry | None:
        obj = self.api.head(self.key(rel))
        if obj is not None:
            return Entry(rel, "file", obj.size)
        return Entry(rel, "dir") if self._any(self.key(rel) + "/") else None

    def open_read(self, rel: str) -> BinaryIO:
        """Streams the bytes the object had when opened (appends made later are not read).

        The first ``READ_CHUNK`` bytes come with the size in one GET, so a small file is read
        atomically. Past that, a whole file is read from the version first seen (a replacement
        midway raises ``OSError``); a log is read unpinned, since appends only add bytes after
        the ones being read.
        """
        try:
            first, info = self.api.read_ranged(self.key(rel), 0, READ_CHUNK)
        except FileNotFoundError:
            raise _missing(self, rel) from None
        key, pin = self.key(rel), None if is_log(rel) else info.etag
        raw = RangeReader(lambda start, end: self.api.read(key, start, end, if_match=pin),
                          first, info.size, self.display(rel))
        return io.BufferedReader(raw, buffer_size=READ_CHUNK)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        try:
            return self.api.read(self.key(rel), start, end)
        except FileNotFoundError:
            raise _missing(self, rel) from None

    def read_bytes(self, rel: str) -> bytes:
        try:
            return self.api.read_ranged(self.key(rel), 0)[0]  # one GET: never a mix of versions
        except FileNotFoundError:
            raise _missing(self, rel) from None

    def replace(self, rel: str, data: bytes) -> None:
        if not is_log(rel):
            self.api.put(self.key(rel), bytes(data), ctype=content_type(rel))
            return
        try:
            self.api.put(self.key(rel), bytes(data), create_only=True,
                         metadata={META_REWRITES: "0"}, ctype=content_type(rel))
        except FileExistsError:
            raise rewrite_refused(self.display(rel)) from None

    def appender(self, rel: str) -> Appender:
        return S3Appender(self.api, self.key(rel), ctype=content_type(rel),
                          display=self.display(rel),
                          fence=self._fence if rel in fencing.FENCED else None)

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        """Abort the multipart uploads in progress under the run (a crashed writer's; a live
        writer whose upload is aborted starts it again), those begun before ``older_than`` if
        given; the number aborted. Best effort: without the permission to list or abort uploads
        (or with no bucket yet) nothing is swept, and the writer goes on (a bucket lifecycle
        rule aborting incomplete uploads cleans up instead)."""
        n = 0
        try:
            for up in list(self.api.uploads(self.key(""))):
                began = up.get("Initiated")
                if older_than is not None and began is not None and (
                        began.timestamp() >= older_than):
                    continue
                n += self.api.abort(str(up["Key"]), str(up["UploadId"]))
        except OSError:  # no bucket, no permission, or the store went away: nothing swept
            _log.debug("rlio: could not sweep the uploads under %s", self.root, exc_info=True)
        return n

    def remove(self, rel: str) -> None:
        self.api.delete(self.key(rel))

    def mtime(self, rel: str) -> float | None:
        return self.api.modified(self.key(rel))

    def lease_holder(self) -> dict[str, Any] | None:
        """See ``Storage.lease_holder``: the lease object's holder until it expires."""
        return live_holder(self.api, self.key(LEASE_NAME))

    def acquire_lease(self, *, lease_seconds: float = LEASE_SECONDS) -> Lease:
        """The run lease: a renewed object taken with a conditional write (``s3.lease``); then
        every live log is fenced with its epoch (``rlio.storage.fencing``)."""
        self._fence = fencing.fence_logs(S3Lease(
            self.api, self.key(LEASE_NAME), self.root, lease_seconds=lease_seconds, keep=True),
            self._fence_log)
        return self._fence

    def _fence_log(self, rel: str, epoch: int) -> int:
        """Record ``epoch`` in the metadata of the log ``rel`` (if it exists and names an older
        one), conditionally: its ETag moves on, so the older holder's next write is refused."""
        key = self.key(rel)

        def head() -> tuple[dict[str, str], ObjectInfo] | None:
            cur = self.api.head(key)
            return None if cur is None else (cur.metadata, cur)

        def write(meta: dict[str, str], cur: Any) -> object:
            return self.api.set_metadata(
                key, meta, size=cur.size, if_match=cur.etag, ctype=content_type(rel))

        return fencing.record_epoch(epoch, META_EPOCH, head, write)

    def lock(self, rel: str) -> contextlib.AbstractContextManager[None]:
        """A lease object of ``rel`` (``S3Lease``: renewed while held, taken over once its
        holder stopped renewing it); waits while another live holder has it."""
        key = f"{self.key(LOCKS_DIR)}/{rel}.lock"
        return remote.held(lambda: S3Lease(self.api, key, self.display(rel),
                                           lease_seconds=LOCK_SECONDS))

    def _read_tail(self, rel: str, offset: int) -> tuple[ObjectInfo, bytes] | None:
        """The log as it is and its bytes ``[offset:]``, read from one version; None when it
        ends at or before ``offset``."""
        key = self.key(rel)
        while True:
            first = self.api.head(key)
            if first is None:
                raise _missing(self, rel)
            if offset >= first.size:
                return None
            try:
                return first, self.api.read(key, offset, first.size, if_match=first.etag)
            except (FileNotFoundError, FileExistsError):
                continue  # the log changed between the two requests: look again

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        got = self._read_tail(rel, offset)
        if got is None:
            return 0
        first, tail = got
        side = self.appender(sidecar)
        try:
            side.append_durable(tail if tail.endswith(b"\n") else tail + b"\n")
        finally:
            side.close()
        key, cur, token = self.key(rel), first, secrets.token_hex(8)
        while True:
            try:
                kept = self.api.read(key, 0, offset, if_match=cur.etag)
                kept += self.api.read(key, first.size, cur.size, if_match=cur.etag)
                self.api.put(key, kept, metadata=_rewritten(cur, token), if_match=cur.etag,
                             ctype=content_type(rel))
                return len(tail)
            except (FileNotFoundError, FileExistsError):
                new = self.api.head(key)
            if new is not None and new.metadata.get(META_REWRITE_ID) == token:
                return len(tail)  # our rewrite landed; its answer was lost and the retry got 412
            if new is None or not _appended_only(first, new):
                raise UnsafeStorageError(
                    errno.EAGAIN,
                    f"{self.display(rel)} was changed by another writer (not an rlio append) "
                    f"while bytes {offset}..{first.size} were moved to {self.display(sidecar)}; "
                    "the log was left as it is, so those bytes are now in both places",
                )
            cur = new


def _rewritten(info: ObjectInfo, token: str) -> dict[str, str]:
    """The metadata of a log rewritten by ``move_tail``: writers kept, rewrites + 1."""
    meta = dict(info.metadata)
    done = meta.get(META_REWRITES, "0")
    meta[META_REWRITES] = str(int(done) + 1 if done.isascii() and done.isdigit() else 1)
    meta[META_REWRITE_ID] = token
    return meta


def _appended_only(before: ObjectInfo, after: ObjectInfo) -> bool:
    """True when ``after`` can only have come from ``before`` by rlio appends."""
    rewrites = before.metadata.get(META_REWRITES)
    return (rewrites is not None and after.metadata.get(META_REWRITES) == rewrites
            and after.size >= before.size)
