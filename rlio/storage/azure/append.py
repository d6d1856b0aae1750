"""Appends to one Azure append blob: batched, positioned, exactly once.

An append blob is what a log needs: ``AppendBlock`` adds bytes at the end, server-side, so a
batch costs its own bytes whatever the log's size. rlio sends every block with the
``appendpos`` condition (``x-ms-blob-condition-appendpos``: land only if the blob is exactly
``at`` bytes long), which makes each block land at a known offset or not at all:

1. Batching is ``BatchingAppender``'s (a daemon thread, about one commit a second) and the commit
   loop ``rlio.storage.committing``'s (exactly once, fenced, retried); a batch is sent as blocks
   of whole lines of at most ``BLOCK_BYTES`` (a longer line alone), each one piece of it.
2. A block is sent at the size this writer last saw. A 412 (another writer appended first) means
   reading the blob's size and sending again there.
3. Exactly once: after any failure whose outcome is unknown (a 412 may answer a retry of a
   block that landed, a dropped answer or a 5xx may follow a commit), the writer reads the size
   and, when the blob grew past the offset it sent at, the bytes there: if they are the
   block's own bytes, it landed (an ``appendpos`` block lands at that offset or nowhere).
   A block sent where another writer wrote last starts with a newline when the log's last byte
   (one ranged GET) is not one: a crash's fragment stays a line of its own.
   A log that does not exist is first created empty (``If-None-Match: *``); a log another tool
   wrote as a block blob is first made an append blob with the same bytes (staged, then copied
   over it with ``If-Match``).

Fenced (``rlio.storage.fencing``): a lease holder's appender also sends every block with
``If-Match`` on the ETag its last write (or read) saw, and checks its lease and the log's
``rlio_epoch`` after every read of the blob: a new holder's epoch written into the log moves its
ETag, so the old holder's block is refused and its retry raises ``LeaseLostError``.

Azure keeps at most 50,000 blocks per blob: past ``compact_at`` committed blocks the log is
rewritten as the same bytes in 4 MiB blocks (staged, then copied over it with ``If-Match``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from rlio.storage import fencing
from rlio.storage.azure.api import BLOCK_BYTES, META_EPOCH, META_REWRITES, AzureApi, Props, blocks
from rlio.storage.committing import ObjectAppender
from rlio.storage.lease import Lease

_log = logging.getLogger("rlio")


class AzureAppender(ObjectAppender[Props]):
    """An open az:// log: batched AppendBlock requests on the one append blob."""

    #: Committed blocks past which the log is compacted (Azure's limit is 50,000 per blob).
    compact_at = 45_000
    api: AzureApi

    def __init__(self, api: AzureApi, key: str, staged_prefix: str, *, ctype: str,
                 display: str, fence: Lease | None = None) -> None:
        self._staged = staged_prefix
        self._sent_at: int | None = None  # the offset a block whose outcome is unknown went to
        self._sending = b""  # the bytes of that block (a newline first after a fragment)
        self._ours = False  # True while the log's end is our own last block (a line end)
        super().__init__(api, key, ctype=ctype, display=display, fence=fence,
                         meta_epoch=META_EPOCH, meta_rewrites=META_REWRITES)

    def _pieces(self, data: bytes) -> list[bytes]:
        return blocks(data)

    def _extend(self, known: Props | None, seq: int, piece: bytes) -> Props:
        """AppendBlock at the size ``known`` names (and, fenced, its ETag)."""
        assert known is not None  # _look creates the blob
        self._sending = piece if self._ours else self._after_fragment(known.size, piece)
        self._sent_at = known.size
        size, etag, count = self.api.append_block(
            self.key, self._sending, at=known.size,
            if_match=known.etag if self._fence is not None else None)
        self._sent_at, self._ours = None, True
        after = known._replace(size=size, etag=etag)
        if count >= self.compact_at:
            self._compact()
            self._ours = False  # another writer may have appended meanwhile
            after = self.api.props(self.key) or after
        return after

    def _compact(self) -> None:
        """Rewrite the log as the same bytes in few blocks (``BLOCK_BYTES`` each): staged, then
        copied over it with ``If-Match``. Best effort: an append landing meanwhile makes the
        copy fail, and the next append past ``compact_at`` tries again."""
        for _ in range(3):
            props = self.api.props(self.key)
            if props is None:
                return

            def chunks(p: Props = props) -> Iterator[bytes]:
                for at in range(0, p.size, BLOCK_BYTES):
                    yield self.api.read_ranged(self.key, at, min(p.size, at + BLOCK_BYTES),
                                               etag=p.etag)[0]

            try:
                self.api.stage_append(self.key, self._staged, chunks(), ctype=self._ctype,
                                      metadata=props.metadata, if_match=props.etag)
                return
            except FileExistsError:
                continue  # appended to meanwhile (the chunks' ETag or the copy's condition)
            except Exception:  # never raised: the block before it has landed
                _log.warning("rlio: could not compact %s", self.display, exc_info=True)
                return

    def _after_fragment(self, size: int, block: bytes) -> bytes:
        """``block``, with a newline first when the log (written by someone else last) ends in
        a fragment: a crash's half line stays a line of its own, never glued to a record."""
        if size == 0 or self.api.read_ranged(self.key, size - 1, size)[0] == b"\n":
            return block
        return b"\n" + block

    def _look(self) -> Props:
        """The blob's properties, creating it when absent (and making another tool's block
        blob an append blob with the same bytes)."""
        self._ours = False
        props = self.api.props(self.key)
        if props is None:
            with contextlib.suppress(FileExistsError):  # another writer created it first
                self.api.create_append(self.key, ctype=self._ctype, metadata=fencing.stamped(
                    {META_REWRITES: "0"}, META_EPOCH, self._fence))
            props = self.api.props(self.key)
            if props is None:
                raise FileNotFoundError(self.display)
        if not props.append_blob:  # another tool's block blob (adlfs writes those): convert it
            data, _, etag = self.api.read_ranged(self.key, 0)
            with contextlib.suppress(FileExistsError):  # changed meanwhile: look again
                self.api.stage_append(self.key, self._staged, data, ctype=self._ctype,
                                      metadata={**props.metadata, META_REWRITES: "0"},
                                      if_match=etag)
            return self._look()
        return props

    def _landed(self, known: Props | None, seq: int, piece: bytes) -> bool:
        """True when the block whose outcome was unknown (``_sending``) is in the blob at the
        offset it was sent to (an ``appendpos`` block lands there or nowhere)."""
        at, block = self._sent_at, self._sending
        if at is None or known is None or known.size < at + len(block):
            self._sent_at = None
            return False
        got = self.api.read_ranged(self.key, at, at + len(block))[0]
        self._sent_at = None
        if got == block:
            self._ours = known.size == at + len(block)
            return True
        return False
