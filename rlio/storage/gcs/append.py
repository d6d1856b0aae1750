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

4. Fenced: a lease holder's appender (``fence``: its lease) checks the lease before every
   compose and refuses a log whose ``rlio-epoch`` metadata names a newer holder; every compose
   carries ``ifMetagenerationMatch``, so the metadata patch a new holder makes when it takes the
   run over (``GcsStorage.acquire_lease``) makes the store itself refuse the old holder's next
   compose, and its retry then reads the newer epoch (``LeaseLostError``).
5. Never glued onto a fragment: when the log's last byte (read unless our own compose made
   that generation) is not a newline, the batch starts with one.

Crashes: a batch whose commit had not returned is lost (never acknowledged); its part object
is swept when a writer reopens the run (a writer whose part was swept uploads it again).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from rlio.storage import fencing, remote
from rlio.storage.batching import BatchingAppender, landed, metadata_after
from rlio.storage.gcs.api import META_EPOCH, META_REWRITES, GcsApi, generation
from rlio.storage.lease import Lease

#: How many recent writers' ``writer:seq`` entries a log's metadata keeps (GCS allows 8 KiB of
#: custom metadata; 64 entries take about 1.7 KB).
KEEP_WRITERS = 64
_log = logging.getLogger("rlio")


def _metageneration(resource: Mapping[str, Any]) -> int | None:
    value = resource.get("metageneration")
    return None if value is None else int(value)


def _metadata_after(resource: Mapping[str, Any] | None, writer: str, seq: int,
                    fence: Lease | None) -> dict[str, str]:
    meta = metadata_after((resource or {}).get("metadata"), writer, seq, KEEP_WRITERS)
    meta.setdefault(META_REWRITES, "0")
    return fencing.stamped(meta, META_EPOCH, fence)


class GcsAppender(BatchingAppender):
    """An open gs:// log: batched appends composed into the one live object."""

    def __init__(self, api: GcsApi, key: str, part_prefix: str, *, ctype: str,
                 display: str, fence: Lease | None = None) -> None:
        self.api, self.key = api, key
        self._ctype = ctype
        self._fence = fence
        self._clean_gen: int | None = None  # a generation our compose made: it ends with "\n"
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
        part: tuple[int, bytes] | None = None  # (generation, bytes) of our part holding it
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
                self._check_fence(known)
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"could not append {len(data)} bytes to {self.display} within "
                        f"{self.give_up_after:.0f} s ({conflicts} conflicts with other writers)")
                try:
                    if known is None:  # a new log: create it empty, then compose as usual
                        meta = fencing.stamped({META_REWRITES: "0"}, META_EPOCH, self._fence)
                        self.api.upload(self.key, b"", metadata=meta, if_generation_match=0,
                                        ctype=self._ctype)
                        continue
                    gen = generation(known)
                    body = b"\n" + data if self._ends_torn(known) else data
                    if part is None or part[1] != body:
                        self._part_used = True
                        part = (generation(self.api.upload(self._part, body)), body)
                    try:
                        # ifGenerationMatch pins the first source too: it is the destination
                        known = self.api.compose(
                            self.key, [(self.key, None), (self._part, part[0])],
                            metadata=_metadata_after(known, self.writer, seq, self._fence),
                            if_generation_match=gen,
                            if_metageneration_match=_metageneration(known), ctype=self._ctype)
                    except FileNotFoundError:  # our part was swept, or the log was deleted
                        part = None
                        continue
                    break
                except FileExistsError:  # 412: another writer's commit came first (or ours)
                    conflicts += 1
                    remote.backoff(min(conflicts, 8))
                except FileNotFoundError:  # the generation we read the last byte of is gone
                    continue
        except BaseException:
            self._known = None
            raise
        self._known = known
        self._clean_gen = None if known is None else generation(known)

    def _check_fence(self, known: Mapping[str, Any] | None) -> None:
        """A lease holder's appender: raise ``LeaseLostError`` once its lease is lost (or may
        be), or the log names a newer holder's epoch (``rlio.storage.fencing``)."""
        fencing.check(self._fence, (known or {}).get("metadata"), META_EPOCH, self.display)

    def _ends_torn(self, known: Mapping[str, Any]) -> bool:
        """True when the log ends in a fragment (not a newline): a crash's cut-off line."""
        size = int(known.get("size", 0))
        if size == 0 or generation(known) == self._clean_gen:
            return False
        return self.api.read(self.key, size - 1, size, gen=generation(known)) != b"\n"
