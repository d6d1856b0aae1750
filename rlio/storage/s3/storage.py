"""s3:// run directories: ``ObjectStorage``'s adapter for Amazon S3 (and S3-compatible stores).

``rlio.storage.objects.ObjectStorage`` is the run storage of every object store (names, reads,
replaces, tail moves, locks, the lease and its fencing); this module gives it S3's requests.
Every request is a call of one boto3 client (``rlio.storage.s3.api``), which brings the standard
AWS configuration; writes use S3's conditional requests (``If-None-Match``, ``If-Match`` on the
ETag), which S3 has enforced since late 2024: a replace is one PutObject, a whole non-log file
past the first chunk is read from the version first seen (``If-Match``), a log is extended by
``s3.append``, a fenced log's metadata change moves its ETag. ``sweep_orphans`` aborts the
multipart uploads a crashed writer left under the run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from rlio.layout import JSON_TYPE, content_type
from rlio.storage import fencing
from rlio.storage.base import Appender
from rlio.storage.objects import Head, ObjectStorage
from rlio.storage.s3.api import (
    META_REWRITES,
    S3Api,
    client,
)
from rlio.storage.s3.append import S3Appender

_log = logging.getLogger("rlio")


class S3Storage(ObjectStorage):
    """A run under ``s3://bucket/prefix`` (the adapter of ``ObjectStorage`` for S3)."""

    def __init__(self, bucket: str, prefix: str, *, s3: Any = None) -> None:
        self.api = S3Api(client() if s3 is None else s3, bucket)
        super().__init__("s3", bucket, prefix)

    def _names(self, prefix: str, limit: int | None = None) -> Iterator[tuple[str, int]]:
        for obj in self.api.list(prefix, max_keys=limit):
            yield str(obj["Key"]), int(obj.get("Size", 0))

    def _head(self, key: str) -> Head | None:
        obj = self.api.head(key)
        return None if obj is None else Head(obj.size, obj.etag, obj.metadata)

    def _get(self, key: str, start: int, end: int | None, pin: Any = None
             ) -> tuple[bytes, int, Any]:
        data, info = self.api.read_ranged(key, start, end, if_match=pin)
        return data, info.size, info.etag

    def _put(self, key: str, data: bytes, *, ctype: str, create_only: bool = False) -> None:
        self.api.put(key, data, create_only=create_only, ctype=ctype)

    def _create_log(self, rel: str, data: bytes) -> None:
        self.api.put(self.key(rel), data, create_only=True, metadata={META_REWRITES: "0"},
                     ctype=content_type(rel))

    def _rewrite_log(self, rel: str, data: bytes, metadata: dict[str, str], version: Any
                     ) -> None:
        self.api.put(self.key(rel), data, metadata=metadata, if_match=version,
                     ctype=content_type(rel))

    def _set_metadata(self, rel: str, metadata: dict[str, str], head: Head) -> None:
        self.api.set_metadata(self.key(rel), metadata, size=head.size, if_match=head.version,
                              ctype=content_type(rel))

    def _put_if(self, key: str, data: bytes, metadata: dict[str, str], match: Any) -> Any:
        return self.api.put(key, data, metadata=metadata, if_match=match,
                            create_only=match is None, ctype=JSON_TYPE)

    def _delete_if(self, key: str, version: Any) -> None:
        self.api.delete(key, if_match=version)

    def _delete(self, key: str) -> None:
        self.api.delete(key)

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

    def mtime(self, rel: str) -> float | None:
        return self.api.modified(self.key(rel))
