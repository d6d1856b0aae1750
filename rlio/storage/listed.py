"""``ListedStorage``: a run read through a listing taken moments ago (a fleet's one listing of an
object-store prefix), so that reading each run of the fleet does not list it again.

``walk``, ``stat`` and ``exists`` answer from the listing (no request: a file missing from it is
absent, a folder is any prefix of its names); everything else goes to the run's storage. A
listing goes stale as the run changes: use one only for a read that follows it (a file written
after the listing is not seen, as a run created after it is not found).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, BinaryIO

from rlio.storage.base import Appender, Entry, Storage
from rlio.storage.lease import LEASE_SECONDS, Lease


class ListedStorage(Storage):
    """``inner`` whose listing is ``entries`` (run-relative, as ``inner.walk()`` yields them)."""

    def __init__(self, inner: Storage, entries: list[Entry]) -> None:
        self.inner = inner
        self.root = inner.root
        self.is_local = inner.is_local
        self._entries = entries
        self._files = {e.path: e for e in entries}
        self._dirs = {e.path.rsplit("/", i)[0] for e in entries
                      for i in range(1, e.path.count("/") + 1)}

    def exists(self) -> bool:
        return True

    def create(self) -> None:
        self.inner.create()

    def walk(self) -> Iterator[Entry]:
        return iter(self._entries)

    def stat(self, rel: str) -> Entry | None:
        if rel in self._files:
            return self._files[rel]
        return Entry(rel, "dir") if rel in self._dirs or not rel else None

    def open_read(self, rel: str) -> BinaryIO:
        return self.inner.open_read(rel)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        return self.inner.read_range(rel, start, end)

    def replace(self, rel: str, data: bytes) -> None:
        self.inner.replace(rel, data)

    def appender(self, rel: str) -> Appender:
        return self.inner.appender(rel)

    def lock(self, rel: str) -> contextlib.AbstractContextManager[None]:
        return self.inner.lock(rel)

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        return self.inner.move_tail(rel, offset, sidecar)

    def acquire_lease(self, *, lease_seconds: float = LEASE_SECONDS) -> Lease:
        return self.inner.acquire_lease(lease_seconds=lease_seconds)

    def lease_holder(self) -> dict[str, Any] | None:
        return self.inner.lease_holder()

    def tail_moving(self, rel: str) -> bool:
        return self.inner.tail_moving(rel)

    def remove(self, rel: str) -> None:
        self.inner.remove(rel)

    def remove_dir(self, rel: str) -> None:
        self.inner.remove_dir(rel)

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        return self.inner.sweep_orphans(older_than=older_than)

    def mtime(self, rel: str) -> float | None:
        return self.inner.mtime(rel) if rel in self._files else None


def listed(location: str, entries: list[Entry] | None) -> str | Storage:
    """``location`` to open, or its storage over ``entries`` when a listing gave them."""
    if entries is None:
        return location
    from rlio.storage.opener import open_storage

    return ListedStorage(open_storage(location, listed=True), entries)
