"""How a gs:// log is extended: compose, conditional on the log's generation and metageneration.

GCS has no append; rewriting the object per record sends the whole file each time. A batch
(``rlio.storage.committing`` runs the one commit loop: exactly once, fenced, retried) is
uploaded as this writer's part object (``.rlio-parts/<file>.<writer>``, one reused name per
appender: emulators slow down with every object ever deleted), then ``[log@G, part@P]`` is
composed into the log with ``ifGenerationMatch=G`` and ``ifMetagenerationMatch`` (the metadata
patch a new holder makes when it fences the log moves the metageneration, so the old holder's
compose is refused by the store). The compose records ``writer:seq`` in the log's custom
metadata (the last ``KEEP_WRITERS`` writers): how a batch whose answer was lost is recognised.
A new log is first created empty (``ifGenerationMatch=0``), so no batch ever travels in a create
that could race another writer's. A batch after a fragment (a crash's cut-off line: the last
byte, read unless our own compose made that generation, is not a newline) starts with one.

Crashes: the part object of a batch whose commit had not returned is swept when a writer reopens
the run (a writer whose part was swept uploads it again); it is deleted when the appender closes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from rlio.storage import fencing
from rlio.storage.committing import ObjectAppender
from rlio.storage.gcs.api import META_EPOCH, META_REWRITES, GcsApi, generation
from rlio.storage.lease import Lease
from rlio.storage.objects import Head

#: How many recent writers' ``writer:seq`` entries a log's metadata keeps (GCS allows 8 KiB of
#: custom metadata; 64 entries take about 1.7 KB).
KEEP_WRITERS = 64
_log = logging.getLogger("rlio")


def head_of(resource: Mapping[str, Any] | None) -> Head | None:
    """An object resource as ``ObjectStorage``'s ``Head`` (None: absent)."""
    if resource is None:
        return None
    return Head(int(resource.get("size", 0)), generation(resource),
                dict(resource.get("metadata") or {}),
                meta_version=int(resource["metageneration"]))


class GcsAppender(ObjectAppender[Head]):
    """An open gs:// log: batched appends composed into the one live object."""

    keep_writers = KEEP_WRITERS
    api: GcsApi

    def __init__(self, api: GcsApi, key: str, part_prefix: str, *, ctype: str,
                 display: str, fence: Lease | None = None) -> None:
        self._clean_gen: int | None = None  # a generation our compose made: it ends with "\n"
        super().__init__(api, key, ctype=ctype, display=display, fence=fence,
                         meta_epoch=META_EPOCH, meta_rewrites=META_REWRITES)
        self._part = f"{part_prefix}.{self.writer}"
        self._part_used = False
        self._staged: tuple[int, int, bytes] | None = None  # (seq, generation, bytes) of our part

    def _closed_cleanup(self) -> None:
        if self._part_used:
            try:
                self.api.delete(self._part)
            except Exception:  # an orphan part is swept when a writer reopens the run
                _log.warning("rlio: could not delete batch part %s", self._part, exc_info=True)

    def _look(self) -> Head | None:
        return head_of(self.api.get(self.key))

    def _extend(self, known: Head | None, seq: int, piece: bytes) -> Head | None:
        if known is None:  # a new log: create it empty, then compose as usual
            meta = fencing.stamped({META_REWRITES: "0"}, META_EPOCH, self._fence)
            self.api.upload(self.key, b"", metadata=meta, if_generation_match=0,
                            ctype=self._ctype)
            return None
        body = b"\n" + piece if self._ends_torn(known) else piece
        if self._staged is None or self._staged[0] != seq or self._staged[2] != body:
            self._part_used = True
            self._staged = (seq, generation(self.api.upload(self._part, body)), body)
        try:
            # ifGenerationMatch pins the first source too: it is the destination
            after = head_of(self.api.compose(
                self.key, [(self.key, None), (self._part, self._staged[1])],
                metadata=self.stamped(known.metadata, seq), if_generation_match=known.version,
                if_metageneration_match=known.meta_version, ctype=self._ctype))
        except FileNotFoundError:  # our part was swept, or the log was deleted
            self._staged = None
            raise
        assert after is not None
        self._clean_gen = after.version
        return after

    def _ends_torn(self, known: Head) -> bool:
        """True when the log ends in a fragment (not a newline): a crash's cut-off line."""
        if known.size == 0 or known.version == self._clean_gen:
            return False
        return self.api.read(self.key, known.size - 1, known.size, gen=known.version) != b"\n"
