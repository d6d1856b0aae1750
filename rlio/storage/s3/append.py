"""Appends to one live S3 object: batched, written conditionally on its ETag, exactly once.

S3 has no append. Lines are buffered and committed in numbered batches off the caller's thread
(``rlio.storage.batching``). A batch lands by one conditional write of the whole log:

1. A new log is created with the batch, ``If-None-Match: *`` (of two creators one wins).
2. Below ``MIN_PART`` (5 MiB) the log is rewritten whole: one PutObject of the old bytes plus the
   batch with ``If-Match: <ETag>``. The appender keeps the bytes it last wrote, so a writer alone
   on the log sends one request per batch (and the log's bytes, at most 5 MiB).
3. From 5 MiB on, a multipart upload: its first part(s) an UploadPartCopy of the object itself
   (``x-amz-copy-source-if-match: <ETag>``, copied inside S3), its last part the batch, completed
   with ``If-Match: <ETag>``. Four requests per batch; the bytes sent are the batch's, however
   large the log.

A 412 means another writer landed first (or ours did and its answer was lost): the appender
reads the log's metadata (HEAD), where every landed batch is recorded as ``writer:seq``
(``batching.landed``); a batch already there is not written again, any other is retried on
the new ETag. Failed uploads are aborted; one a crash left is aborted when a writer reopens the
run (``S3Storage.sweep_orphans``). The log stays one plain object of JSONL.

Fenced (``rlio.storage.fencing``): a lease holder's appender checks its lease and the log's
``rlio-epoch`` before every attempt; a new holder's epoch written into the log moves its ETag, so
the old holder's conditional write is refused and its retry finds the newer epoch
(``LeaseLostError``, the batch never sent again).

Transient failures (no network, 5xx after the client's retries) are retried with backoff for
``give_up_after`` seconds; then, or at once for refused credentials, the commit raises.
"""

from __future__ import annotations

import errno
import time

from rlio.errors import StorageUnavailableError
from rlio.storage import fencing, remote
from rlio.storage.batching import BatchingAppender, landed, metadata_after
from rlio.storage.lease import Lease
from rlio.storage.remote import StoreUnreachable
from rlio.storage.s3.api import (
    META_EPOCH,
    META_REWRITES,
    MIN_PART,
    ObjectInfo,
    S3Api,
)

#: How many recent writers' ``writer:seq`` entries a log's metadata keeps (S3 allows 2 KB of
#: user metadata; 48 entries take about 1.1 KB).
KEEP_WRITERS = 48


def _metadata(known: ObjectInfo | None, writer: str, seq: int,
              fence: Lease | None) -> dict[str, str]:
    meta = metadata_after(known.metadata if known else None, writer, seq, KEEP_WRITERS)
    meta.setdefault(META_REWRITES, "0")
    return fencing.stamped(meta, META_EPOCH, fence)


class S3Appender(BatchingAppender):
    """An open s3:// log: batched appends written conditionally into the one live object."""

    def __init__(self, api: S3Api, key: str, *, ctype: str, display: str,
                 fence: Lease | None = None) -> None:
        self.api, self.key = api, key
        self._ctype = ctype
        self._fence = fence  # a lease holder's lease: its batches are fenced
        super().__init__(display)
        self._known: ObjectInfo | None = None  # the log after our last write
        self._body: bytes | None = None  # its bytes, when below MIN_PART
        self._clean_etag: str | None = None  # a version our write made: it ends with "\n"

    def _land(self, known: ObjectInfo | None, seq: int, data: bytes) -> ObjectInfo:
        """One conditional write of batch ``seq`` onto the log as ``known`` (None: absent)."""
        meta = _metadata(known, self.writer, seq, self._fence)
        if known is None:
            etag = self.api.put(self.key, data, metadata=meta, create_only=True,
                                ctype=self._ctype)
            self._body = data
            return ObjectInfo(len(data), etag, meta)
        size = known.size + len(data)
        if known.size < MIN_PART:
            body = self._body
            if body is None or len(body) != known.size:
                body = self.api.read_ranged(self.key, 0, if_match=known.etag)[0]
            if body and not body.endswith(b"\n"):
                data = b"\n" + data  # never glued onto a crash's cut-off line
                size += 1
            etag = self.api.put(self.key, body + data, metadata=meta, if_match=known.etag,
                                ctype=self._ctype)
            self._body = body + data if size < MIN_PART else None
            return ObjectInfo(size, etag, meta)
        if self._ends_torn(known):
            data = b"\n" + data
            size += 1
        etag = self.api.append_multipart(self.key, known.size, data, if_match=known.etag,
                                         metadata=meta, ctype=self._ctype)
        return ObjectInfo(size, etag, meta)

    def _ends_torn(self, known: ObjectInfo) -> bool:
        """True when the log ends in a fragment (not a newline): a crash's cut-off line."""
        if known.size == 0 or known.etag == self._clean_etag:
            return False
        last = self.api.read_ranged(self.key, known.size - 1, known.size, if_match=known.etag)[0]
        return last != b"\n"

    def _commit(self, seq: int, data: bytes) -> None:
        """Put batch ``seq`` into the log exactly once (see the module docstring)."""
        known, verify = self._known, False
        deadline = time.monotonic() + self.give_up_after
        failures = 0
        try:
            while True:
                try:
                    if verify or known is None:
                        self._body = None
                        known = self.api.head(self.key)
                        if landed(known.metadata if known else None, self.writer, seq):
                            break
                    # fenced: never sent again onto a version another holder made (nor at all
                    # once the lease is lost, or may be)
                    fencing.check(self._fence, known.metadata if known else None, META_EPOCH,
                                  self.display)
                    verify = True  # from here on, any failure is checked against the log first
                    known = self._land(known, seq, data)
                    self._clean_etag = known.etag
                    break
                except (FileExistsError, FileNotFoundError, StoreUnreachable) as exc:
                    # 412: another writer came first (or we did); 404: the log was rewritten
                    # or our upload swept; StoreUnreachable: try again until the deadline
                    verify = True
                    failures += 1
                    if time.monotonic() > deadline:
                        raise StorageUnavailableError(
                            errno.ETIMEDOUT, f"could not append {len(data)} bytes to "
                            f"{self.display} within {self.give_up_after:.0f} s "
                            f"({failures} failed attempts; last: {exc})") from exc
                    remote.backoff(failures, 2.0 if isinstance(exc, StoreUnreachable) else 0.5)
        except BaseException:
            self._known, self._body = None, None
            raise
        self._known = known
