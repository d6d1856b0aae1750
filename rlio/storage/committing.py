"""The one commit loop of every object-store log (gs://, s3://, az://): exactly once, fenced,
retried by one policy.

``ObjectAppender._commit`` lands a batch (``rlio.storage.batching``) in pieces (one, or on az://
blocks of whole lines), each by this loop:

1. Look: read the log (``_look``, a HEAD; the first attempt of a commit reuses what our own last
   write returned). After any failure the log is read again before anything is sent.
2. Fence (``rlio.storage.fencing``): after every look and before every attempt, a lease holder's
   appender checks its lease and the epoch the log names; a newer holder's epoch raises
   ``LeaseLostError`` and nothing more is sent or acknowledged.
3. Recognise: a piece whose outcome was unknown and that the look shows landed (``_landed``:
   ``writer:seq`` markers in the metadata on gs:// and s3://, the block's own bytes at the offset
   it was sent to on az://) is done, never sent again.
4. Extend: one conditional request that adds the piece or is refused (``_extend``: compose,
   a conditional put or UploadPartCopy, AppendBlock at a position). It returns the log as it left
   it, or None after a preparatory step (a new log created empty): look again at once.

The retry policy: a refusal (412: another writer came first, or ours did and its answer was
lost) or a vanished object (404) is retried after a jittered backoff (``remote.backoff``) until
``give_up_after`` (``TimeoutError``); a store that cannot be reached (``StoreUnreachable``) is
retried the same way for ``unavailable_for`` seconds, then that error reaches the caller and the
batch stays pending (``BatchingAppender`` tries it again).

Each cloud's ``append`` module supplies only its way to extend an object and to recognise its
own batch.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, Protocol, TypeVar

from rlio.storage import fencing, remote
from rlio.storage.batching import BatchingAppender, landed, metadata_after
from rlio.storage.lease import Lease
from rlio.storage.remote import StoreUnreachable


class Known(Protocol):
    """What a look at a log tells the loop: its size and its metadata."""

    @property
    def size(self) -> int: ...

    @property
    def metadata(self) -> Mapping[str, str]: ...


K = TypeVar("K", bound=Known)


class ObjectAppender(BatchingAppender, Generic[K]):
    """An open object-store log; a cloud implements ``_look`` and ``_extend`` (and ``_landed``
    where its batches are recognised otherwise than by their marker)."""

    #: Seconds the store may stay unreachable before a commit gives up (the batch is kept).
    unavailable_for = 30.0
    #: How many recent writers' ``writer:seq`` entries the log's metadata keeps.
    keep_writers = 48

    def __init__(self, api: Any, key: str, *, ctype: str, display: str, fence: Lease | None,
                 meta_epoch: str, meta_rewrites: str) -> None:
        self.api, self.key, self._ctype = api, key, ctype  # the cloud's requests, the log
        self._fence = fence  # a lease holder's lease: its pieces are fenced; None: attached
        self._meta_epoch, self._meta_rewrites = meta_epoch, meta_rewrites
        self._known: K | None = None  # the log as our last write left it (None: look first)
        self._progress: tuple[int, int] = (0, 0)  # (seq, pieces of it landed)
        super().__init__(display)

    # -- what a cloud supplies ---------------------------------------------------------------

    @abstractmethod
    def _look(self) -> K | None:
        """Read the log (None: absent)."""

    def _landed(self, known: K | None, seq: int, piece: bytes) -> bool:
        """True when ``known`` shows piece ``piece`` of batch ``seq`` already in the log; by
        default its ``writer:seq`` marker in the log's metadata (``stamped``)."""
        return landed(None if known is None else known.metadata, self.writer, seq)

    @abstractmethod
    def _extend(self, known: K | None, seq: int, piece: bytes) -> K | None:
        """One conditional request adding ``piece`` to the log as ``known``: the log after it,
        or None after a preparatory step. Refused: ``FileExistsError`` (or
        ``FileNotFoundError``, ``StoreUnreachable``)."""

    def _pieces(self, data: bytes) -> list[bytes]:
        """The pieces batch ``data`` lands as, one request each."""
        return [data]

    # -- one implementation ------------------------------------------------------------------

    def stamped(self, metadata: Mapping[str, str] | None, seq: int) -> dict[str, str]:
        """A log's metadata once batch ``seq`` lands: our ``writer:seq`` entry, the rewrite
        count kept, and the newer of our epoch and the log's."""
        meta = metadata_after(metadata, self.writer, seq, self.keep_writers)
        meta.setdefault(self._meta_rewrites, "0")
        return fencing.stamped(meta, self._meta_epoch, self._fence)

    def _commit(self, seq: int, data: bytes) -> None:
        """Put batch ``seq`` into the log exactly once (see the module docstring)."""
        pieces = self._pieces(data)
        done = self._progress[1] if self._progress[0] == seq else 0
        deadline = time.monotonic() + self.give_up_after
        while done < len(pieces):
            self._commit_piece(seq, pieces[done], deadline)
            done += 1
            self._progress = (seq, done)

    def _commit_piece(self, seq: int, piece: bytes, deadline: float) -> None:
        known, verify = self._known, False
        failures, down = 0, 0.0
        try:
            while True:
                try:
                    if verify or known is None:
                        known = self._look()
                        self._check_fence(known)
                        if self._landed(known, seq, piece):
                            break
                    else:
                        self._check_fence(known)
                    verify = True  # from here on, any failure is checked against the log first
                    after = self._extend(known, seq, piece)
                    if after is not None:
                        known = after
                        break
                except (FileExistsError, FileNotFoundError, StoreUnreachable) as exc:
                    failures += 1
                    now = time.monotonic()
                    if isinstance(exc, StoreUnreachable):
                        down = down or now
                        if now > min(deadline, down + self.unavailable_for):
                            raise
                    elif now > deadline:
                        raise TimeoutError(
                            f"could not append {len(piece)} bytes to {self.display} within "
                            f"{self.give_up_after:.0f} s ({failures} failed attempts; "
                            f"last: {exc})") from exc
                    remote.backoff(min(failures, 8),
                                   2.0 if isinstance(exc, StoreUnreachable) else 0.5)
        except BaseException:
            self._known = None
            raise
        self._known = known

    def _check_fence(self, known: K | None) -> None:
        fencing.check(self._fence, None if known is None else known.metadata,
                      self._meta_epoch, self.display)
