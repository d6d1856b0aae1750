"""How an s3:// log is extended: one conditional write on its ETag.

S3 has no append. ``rlio.storage.committing`` runs the one commit loop (exactly once, fenced,
retried); here, a batch lands by one conditional write of the whole log:

1. A new log is created with the batch, ``If-None-Match: *`` (of two creators one wins).
2. Below ``MIN_PART`` (5 MiB) the log is rewritten whole: one PutObject of the old bytes plus the
   batch with ``If-Match: <ETag>``. The appender keeps the bytes it last wrote, so a writer alone
   on the log sends one request per batch (and the log's bytes, at most 5 MiB).
3. From 5 MiB on, a multipart upload: its first part(s) an UploadPartCopy of the object itself
   (``x-amz-copy-source-if-match: <ETag>``, copied inside S3), its last part the batch, completed
   with ``If-Match: <ETag>``. Four requests per batch; the bytes sent are the batch's, however
   large the log.

Every write records ``writer:seq`` in the log's user metadata (``batching.landed``): how a batch
whose answer was lost is recognised. Failed uploads are aborted; one a crash left is aborted
when a writer reopens the run (``S3Storage.sweep_orphans``). The log stays one plain object of
JSONL. A new holder's epoch written into the log moves its ETag, so the old holder's
conditional write is refused by the store.
"""

from __future__ import annotations

from rlio.storage.committing import ObjectAppender
from rlio.storage.lease import Lease
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


class S3Appender(ObjectAppender[ObjectInfo]):
    """An open s3:// log: batched appends written conditionally into the one live object."""

    keep_writers = KEEP_WRITERS
    api: S3Api

    def __init__(self, api: S3Api, key: str, *, ctype: str, display: str,
                 fence: Lease | None = None) -> None:
        self._body: bytes | None = None  # the log's bytes after our last write, below MIN_PART
        self._clean_etag: str | None = None  # a version our write made: it ends with "\n"
        super().__init__(api, key, ctype=ctype, display=display, fence=fence,
                         meta_epoch=META_EPOCH, meta_rewrites=META_REWRITES)

    def _look(self) -> ObjectInfo | None:
        self._body = None
        return self.api.head(self.key)

    def _extend(self, known: ObjectInfo | None, seq: int, piece: bytes) -> ObjectInfo:
        after = self._land(known, seq, piece)
        self._clean_etag = after.etag
        return after

    def _land(self, known: ObjectInfo | None, seq: int, data: bytes) -> ObjectInfo:
        """One conditional write of batch ``seq`` onto the log as ``known`` (None: absent)."""
        meta = self.stamped(None if known is None else known.metadata, seq)
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
