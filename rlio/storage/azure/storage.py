"""az:// run directories: the ``Storage`` backend for Azure Blob Storage.

Every request goes through ``AzureApi`` (one container client of ``azure-storage-blob``, made by
``open_storage``), so this module imports no SDK itself.

- ``replace``: a block blob written whole (Put Blob; past the SDK's single-put size, staged
  blocks and one Put Block List), which readers see old or new. An append-only log is an append
  blob: one that does not exist yet may be created whole (a staged blob copied over it with
  ``If-None-Match: *``); an existing log is never rewritten this way (refused).
- Reads: ranged GETs with explicit offsets; a whole non-log file is read from the ETag first
  seen (a replacement midway raises ``OSError``).
- ``appender``: AppendBlock with ``appendpos`` conditions (``azure.append``);
  ``acquire_lease``: an Azure blob lease on ``.rlio-lease`` (``azure.lease``).
- ``move_tail``: the tail reaches the sidecar durably first; the kept bytes are staged as an
  append blob under ``.rlio-parts/`` and copied server-side over the log with ``If-Match`` on
  its ETag, keeping blocks that landed in between and refusing any other change.
- ``lock(rel)``: an Azure lease on ``.rlio-locks/<rel>.lock`` (15 s, renewed while held).

What every object store shares (names, reads, replaces, tail moves, locks, the lease and its
fencing) is ``rlio.storage.objects.ObjectStorage``; this module is its adapter.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rlio.layout import content_type
from rlio.storage import fencing
from rlio.storage.azure.api import (
    META_EPOCH,
    META_REWRITE_ID,
    META_REWRITES,
    PARTS_DIR,
    AzureApi,
)
from rlio.storage.azure.append import AzureAppender
from rlio.storage.azure.lease import AzureLease
from rlio.storage.base import Appender
from rlio.storage.lease import LEASE_NAME, Lease, parse_holder
from rlio.storage.objects import Head, ObjectStorage


class AzureStorage(ObjectStorage):
    """A run under ``az://container/prefix`` (the adapter of ``ObjectStorage`` for Azure)."""

    noun, bucket_noun = "blob", "container"
    meta_rewrites, meta_rewrite_id, meta_epoch = META_REWRITES, META_REWRITE_ID, META_EPOCH

    def __init__(self, container: Any, name: str, prefix: str) -> None:
        self.api = AzureApi(container, f"az://{name}")
        self.container = name
        super().__init__("az", name, prefix)

    def _names(self, prefix: str, limit: int | None = None) -> Iterator[tuple[str, int]]:
        return self.api.list(prefix, max_results=limit)

    def _head(self, key: str) -> Head | None:
        p = self.api.props(key)
        return None if p is None else Head(p.size, p.etag, p.metadata, p.append_blob)

    def _get(self, key: str, start: int, end: int | None, pin: Any = None
             ) -> tuple[bytes, int, Any]:
        return self.api.read_ranged(key, start, end, etag=pin)

    def _put(self, key: str, data: bytes, *, ctype: str, create_only: bool = False) -> None:
        self.api.upload(key, data, ctype=ctype, if_none_match=create_only)

    def _create_log(self, rel: str, data: bytes) -> None:
        self._stage_over(rel, data, {META_REWRITES: "0"}, None)

    def _rewrite_log(self, rel: str, data: bytes, metadata: dict[str, str], version: Any
                     ) -> None:
        self._stage_over(rel, data, metadata, version)

    def _set_metadata(self, rel: str, metadata: dict[str, str], head: Head) -> None:
        self.api.set_metadata(self.key(rel), metadata, if_match=head.version)

    def _new_lease(self, key: str, where: str, lease_seconds: float, *, run: bool) -> Lease:
        """An Azure blob lease on the blob ``key`` (``azure.lease``); the run's blob is kept
        on release, so that epochs grow."""
        return AzureLease(self.api, key, where, lease_seconds=lease_seconds, keep=run)

    def _delete(self, key: str) -> None:
        self.api.delete(key)

    def _stage_over(self, rel: str, data: bytes, metadata: dict[str, str],
                    if_match: str | None) -> None:
        self.api.stage_append(self.key(rel), f"{self.key(PARTS_DIR)}/{rel}", data,
                              ctype=content_type(rel), metadata=metadata, if_match=if_match)

    def appender(self, rel: str) -> Appender:
        return AzureAppender(self.api, self.key(rel), f"{self.key(PARTS_DIR)}/{rel}",
                             ctype=content_type(rel), display=self.display(rel),
                             fence=self._fence if rel in fencing.FENCED else None)

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        n = 0
        try:
            for name, _ in list(self.api.list(self.key(PARTS_DIR) + "/")):
                n += self.api.delete(name)
        except FileNotFoundError:  # no such container: nothing to sweep
            return 0
        return n

    def mtime(self, rel: str) -> float | None:
        key = self.key(rel)
        try:
            props = self.api.call(lambda: self.api.blob(key).get_blob_properties(), key)
        except FileNotFoundError:
            return None
        when = getattr(props, "last_modified", None)
        return when.timestamp() if when is not None else None

    def lease_holder(self) -> dict[str, Any] | None:
        """See ``Storage.lease_holder``: the record of the lease blob while the service says
        its blob lease is held (expiry is the service's clock)."""
        key = self.key(LEASE_NAME)
        try:
            props = self.api.call(lambda: self.api.blob(key).get_blob_properties(), key)
        except FileNotFoundError:
            return None
        if str(getattr(props.lease, "state", "")).lower() != "leased":
            return None
        try:
            return parse_holder(self.api.read_ranged(key, 0)[0])
        except Exception:  # released between the two reads: no name to give
            return {}
