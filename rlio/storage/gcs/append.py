"""Appends to one live GCS object: batched, composed conditionally, exactly once.

GCS has no append; rewriting the object per record sends the whole file each time and loses
records to concurrent writers, and staging on local disk loses them on a crash. Instead:

1. Lines are buffered and committed in numbered batches off the caller's thread
   (``rlio.storage.batching``; GCS takes about one update per second per object).
2. A commit uploads the batch as this writer's part object (``.rlio-parts/<file>.<writer>``, one
   reused name per appender: emulators slow down with every object ever deleted), then composes
   ``[log@G, part@P]`` into the log with ``ifGenerationMatch=G``. A 412 means another writer
   appended first (or ours landed and its answer was lost): read the log's metadata, try again.
   The log stays one object of pure JSONL; the part is deleted when the appender closes.
3. Exactly once: every writer has a random id and numbers its batches; each compose records
   ``writer:seq`` in the log's custom metadata (the last ``KEEP_WRITERS`` writers). After any
   failure the writer reads that metadata first, and a batch already there is not composed
   again. A new log is first created empty (``ifGenerationMatch=0``), so no batch ever travels
   in a create that could race another writer's.

Crashes: a batch whose commit had not returned is lost (never acknowledged); its part object
is swept when a writer reopens the run (a writer whose part was swept uploads it again).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from typing import Any

from rlio.storage.batching import BatchingAppender, landed, metadata_after
from rlio.storage.gcs.api import META_REWRITES, GcsApi, generation

#: How many recent writers' ``writer:seq`` entries a log's metadata keeps (GCS allows 8 KiB of
#: custom metadata; 64 entries take about 1.7 KB).
KEEP_WRITERS = 64
_log = logging.getLogger("rlio")


def _metadata_after(resource: Mapping[str, Any] | None, writer: str, seq: int) -> dict[str, str]:
    meta = metadata_after((resource or {}).get("metadata"), writer, seq, KEEP_WRITERS)
    meta.setdefault(META_REWRITES, "0")
    return meta


class GcsAppender(BatchingAppender):
    """An open gs:// log: batched appends composed into the one live object."""

    def __init__(self, api: GcsApi, key: str, part_prefix: str, *, ctype: str,
                 display: str) -> None:
        self.api, self.key = api, key
        self._ctype = ctype
        super().__init__(display)
        self._part = f"{part_prefix}.{self.writer}"
        self._part_used = False
        self._known: dict[str, Any] | None = None  # the log's resource after our last write

    def _closed_cleanup(self) -> None:
        if self._part_used:
            try:
                self.api.delete(self._part)
            except Exception:  # an orphan part is swept when a writer reopens the run
                _log.warning("rlio: could not delete batch part %s", self._part, exc_info=True)

    def _commit(self, seq: int, data: bytes) -> None:
        """Put batch ``seq`` into the log exactly once (see the module docstring)."""
        part_gen: int | None = None  # generation of our part holding this batch, once uploaded
        known, verify = self._known, False
        deadline = time.monotonic() + self.give_up_after
        conflicts = 0
        try:
            while True:
                if verify or known is None:
                    known = self.api.get(self.key)
                    if landed((known or {}).get("metadata"), self.writer, seq):
                        break
                verify = True  # from here on, any failure is checked against the log first
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"could not append {len(data)} bytes to {self.display} within "
                        f"{self.give_up_after:.0f} s ({conflicts} conflicts with other writers)")
                try:
                    if known is None:  # a new log: create it empty, then compose as usual
                        self.api.upload(self.key, b"", metadata={META_REWRITES: "0"},
                                        if_generation_match=0, ctype=self._ctype)
                        continue
                    if part_gen is None:
                        self._part_used = True
                        part_gen = generation(self.api.upload(self._part, data))
                    gen = generation(known)
                    try:
                        # ifGenerationMatch pins the first source too: it is the destination
                        known = self.api.compose(
                            self.key, [(self.key, None), (self._part, part_gen)],
                            metadata=_metadata_after(known, self.writer, seq),
                            if_generation_match=gen, ctype=self._ctype)
                    except FileNotFoundError:  # our part was swept, or the log was deleted
                        part_gen = None
                        continue
                    break
                except FileExistsError:  # 412: another writer's commit came first (or ours)
                    conflicts += 1
                    time.sleep(random.uniform(0, min(0.005 * 2 ** min(conflicts, 8), 0.5)))
        except BaseException:
            self._known = None
            raise
        self._known = known

