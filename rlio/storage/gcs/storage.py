"""gs:// run directories: ``ObjectStorage``'s adapter for Google Cloud Storage.

``rlio.storage.objects.ObjectStorage`` is the run storage of every object store (names, reads,
replaces, tail moves, locks, the lease and its fencing); this module gives it GCS's requests.
Every request is a JSON API call of the gcsfs filesystem ``open_storage`` hands in (so this
module imports neither fsspec nor gcsfs, and inherits gcsfs's credentials, session and retries
of 5xx/429 answers); gcsfs's file API has no append and no conditional writes, so writes skip
it. Conditions are on the generation (``ifGenerationMatch``) and, for a fenced log's metadata
change, the metageneration; a log is extended by ``gcs.append`` (compose); ``sweep_orphans``
deletes the batch parts a crashed writer left.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rlio.layout import APPEND_ONLY, JSON_TYPE, content_type
from rlio.storage.base import Appender
from rlio.storage.gcs.api import (
    META_REWRITES,
    PARTS_DIR,
    GcsApi,
    generation,
)
from rlio.storage.gcs.append import GcsAppender, head_of
from rlio.storage.objects import LOCKS_DIR, Head, ObjectStorage


class GcsStorage(ObjectStorage):
    """A run under ``gs://bucket/prefix`` (the adapter of ``ObjectStorage`` for GCS)."""

    def __init__(self, fs: Any, bucket: str, prefix: str) -> None:
        self.api = GcsApi(fs, bucket)
        super().__init__("gs", bucket, prefix)

    def _names(self, prefix: str, limit: int | None = None) -> Iterator[tuple[str, int]]:
        for obj in self.api.list(prefix, max_results=limit):
            yield str(obj["name"]), int(obj.get("size", 0))

    def _head(self, key: str) -> Head | None:
        return head_of(self.api.get(key))

    def _get(self, key: str, start: int, end: int | None, pin: Any = None
             ) -> tuple[bytes, int, Any]:
        data, total, gen = self.api.read_ranged(key, start, end, gen=pin)
        return data, start + len(data) if total is None else total, gen

    def _put(self, key: str, data: bytes, *, ctype: str, create_only: bool = False) -> None:
        self.api.upload(key, data, if_generation_match=0 if create_only else None, ctype=ctype)

    def _create_log(self, rel: str, data: bytes) -> None:
        self.api.upload(self.key(rel), data, if_generation_match=0,
                        metadata={META_REWRITES: "0"}, ctype=content_type(rel))

    def _rewrite_log(self, rel: str, data: bytes, metadata: dict[str, str], version: Any
                     ) -> None:
        self.api.upload(self.key(rel), data, metadata=metadata, if_generation_match=version,
                        ctype=content_type(rel))

    def _set_metadata(self, rel: str, metadata: dict[str, str], head: Head) -> None:
        self.api.patch_metadata(self.key(rel), metadata, if_generation_match=head.version,
                                if_metageneration_match=head.meta_version)

    def _put_if(self, key: str, data: bytes, metadata: dict[str, str], match: Any) -> Any:
        return generation(self.api.upload(key, data, metadata=metadata, ctype=JSON_TYPE,
                                          if_generation_match=0 if match is None else match))

    def _delete_if(self, key: str, version: Any) -> None:
        self.api.delete(key, if_generation_match=version)

    def _delete(self, key: str) -> None:
        self.api.delete(key)

    def mtime(self, rel: str) -> float | None:
        """The object's ``updated`` time (RFC 3339), or None when absent."""
        obj = self.api.get(self.key(rel))
        if obj is None or not obj.get("updated"):
            return None
        from datetime import datetime  # here: only the cookbook's stat asks

        return datetime.fromisoformat(str(obj["updated"]).replace("Z", "+00:00")).timestamp()

    def appender(self, rel: str) -> Appender:
        return GcsAppender(self.api, self.key(rel), f"{self.key(PARTS_DIR)}/{rel}",
                           ctype=content_type(rel), display=self.display(rel),
                           fence=self._fence if rel in APPEND_ONLY else None)

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        n = 0
        try:
            for obj in list(self.api.list(self.key(PARTS_DIR) + "/")):
                n += self.api.delete(obj["name"])
        except FileNotFoundError:  # no such bucket yet: nothing to sweep
            return 0
        return n

    def tail_moving(self, rel: str) -> bool:
        """True while the lock object of ``rel`` exists: tail moves run under ``lock(rel)``."""
        return self.api.get(f"{self.key(LOCKS_DIR)}/{rel}.lock") is not None
