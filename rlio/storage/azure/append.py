"""Appends to one Azure append blob: batched, positioned, exactly once.

An append blob is what a log needs: ``AppendBlock`` adds bytes at the end, server-side, so a
batch costs its own bytes whatever the log's size. rlio sends every block with the
``appendpos`` condition (``x-ms-blob-condition-appendpos``: land only if the blob is exactly
``at`` bytes long), which makes each block land at a known offset or not at all:

1. Batching is ``BatchingAppender``'s (a daemon thread, about one commit a second); a batch is
   sent as blocks of whole lines of at most ``BLOCK_BYTES`` (a longer line alone).
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

Transient failures (unreachable store, 5xx past the SDK's retries) are retried here for
``unavailable_for`` seconds; then the error reaches the caller, and the batch is kept.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

from rlio.storage import fencing, remote
from rlio.storage.azure.api import BLOCK_BYTES, META_EPOCH, META_REWRITES, AzureApi, Props, blocks
from rlio.storage.batching import BatchingAppender
from rlio.storage.lease import Lease
from rlio.storage.remote import StoreUnreachable

_log = logging.getLogger("rlio")


class AzureAppender(BatchingAppender):
    """An open az:// log: batched AppendBlock requests on the one append blob."""

    #: Seconds a store may stay unreachable before a commit gives up (as gcsfs's retries do).
    unavailable_for = 30.0
    #: Committed blocks past which the log is compacted (Azure's limit is 50,000 per blob).
    compact_at = 45_000

    def __init__(self, api: AzureApi, key: str, staged_prefix: str, *, ctype: str,
                 display: str, fence: Lease | None = None) -> None:
        self.api, self.key, self._ctype, self._staged = api, key, ctype, staged_prefix
        self._fence = fence  # a lease holder's lease: its blocks are fenced
        self._etag: str | None = None  # the blob's ETag after our last write (fenced only)
        self._size: int | None = None  # the blob's size after our last write (None: read it)
        self._progress: tuple[int, int] = (0, 0)  # (seq, blocks of it landed)
        self._sent_at: int | None = None  # the offset a block whose outcome is unknown went to
        self._sending = b""  # the bytes of that block (a newline first after a fragment)
        self._ours = False  # True while the log's end is our own last block (a line end)
        super().__init__(display)

    def _commit(self, seq: int, data: bytes) -> None:
        parts = blocks(data)
        done = self._progress[1] if self._progress[0] == seq else 0
        deadline = time.monotonic() + self.give_up_after
        while done < len(parts):
            self._land(parts[done], deadline)
            done += 1
            self._progress = (seq, done)

    def _land(self, block: bytes, deadline: float) -> None:
        """Put one block at the end of the log exactly once (module docstring, 2 and 3)."""
        conflicts, down = 0, 0.0
        while True:
            try:
                if (self._size is None or self._sent_at is not None or (
                        self._fence is not None and self._etag is None)) and self._landed():
                    return
                assert self._size is not None
                if self._fence is not None:
                    self._fence.check()  # and the log's epoch, each time _landed reads it
                self._sending = block if self._ours else self._after_fragment(block)
                self._sent_at = self._size
                self._size, etag, count = self.api.append_block(
                    self.key, self._sending, at=self._size,
                    if_match=self._etag if self._fence is not None else None)
                self._etag = etag
                self._sent_at, self._ours = None, True
                if count >= self.compact_at:
                    self._etag = None  # rewritten: read it again before the next block
                    self._compact()
                return
            except FileExistsError:  # 412: another writer appended first (or a retry of ours)
                conflicts += 1
                remote.backoff(min(conflicts, 8))
            except StoreUnreachable:
                down = down or time.monotonic()
                if time.monotonic() > min(deadline, down + self.unavailable_for):
                    raise  # to the caller; the batch is kept and tried again later
                time.sleep(1.0)
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"could not append {len(block)} bytes to {self.display} within "
                    f"{self.give_up_after:.0f} s ({conflicts} conflicts with other writers)")

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

    def _after_fragment(self, block: bytes) -> bytes:
        """``block``, with a newline first when the log (written by someone else last) ends in
        a fragment: a crash's half line stays a line of its own, never glued to a record."""
        assert self._size is not None
        if self._size == 0 or self.api.read_ranged(
                self.key, self._size - 1, self._size)[0] == b"\n":
            return block
        return b"\n" + block

    def _landed(self) -> bool:
        """Read the log's size (creating it when absent); True when the block whose outcome was
        unknown (``_sending``) is there, at the offset it was sent to."""
        block, self._ours = self._sending, False
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
            self._sending = block
            return self._landed()
        fencing.check(self._fence, props.metadata, META_EPOCH, self.display)
        at, self._size, self._etag = self._sent_at, props.size, props.etag
        self._sent_at = None
        if at is None or props.size < at + len(block):
            return False
        got = self.api.read_ranged(self.key, at, at + len(block))[0]
        if got == block:
            self._ours = props.size == at + len(block)
            return True
        return False
