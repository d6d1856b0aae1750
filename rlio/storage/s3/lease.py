"""The run lease on s3://: an object taken with a conditional write, renewed while held.

``<run>/.rlio-lease`` (and each ``S3Storage.lock`` object, the same way) holds the holder's JSON
(host, pid, since, and the epoch, expiry and token below, so that every write of it has a new
ETag) and, in its user metadata, when the lease expires (``rlio-lease-expires``, seconds since
the epoch by the holder's clock), a random token of the holder and its epoch
(``rlio-lease-epoch``: one more than the holder it took over from). It is created with
``If-None-Match: *``; a daemon thread rewrites it every third of ``lease_seconds`` with
``If-Match: <its ETag>``, pushing the expiry on (``valid_until``: until when, by this host's
monotonic clock, the lease is surely still held). A writer that finds a lease past its expiry
takes it over with ``If-Match`` on the ETag it read (so of two takers one wins); one that finds
it live gets ``RunInUseError``. A holder whose renewal gets 412 and finds another token has
lost the lease (``lost``: the writer acknowledges nothing more); a request whose answer was lost
and whose retry got 412 is recognised by the token. Release deletes it with ``If-Match``, but
the run's lease (``keep``) is expired in place instead, so that its epoch survives: the next
holder's is one more (``rlio.storage.fencing``).

Clocks: expiry is judged by the taker's clock against the holder's; hosts are assumed to agree
within a small fraction of ``lease_seconds``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from typing import Any

from rlio.storage.lease import EXPIRY_MARGIN, Lease, in_use, parse_holder
from rlio.storage.s3.api import ObjectInfo, S3Api

META_EXPIRES = "rlio-lease-expires"
META_TOKEN = "rlio-lease-token"
#: Which holder of the run this is: one more than the holder it took the lease over from
#: (1 for a lease created afresh), so that a later holder always has a larger epoch.
META_EPOCH = "rlio-lease-epoch"
_JSON = "application/json"


def live_holder(api: S3Api, key: str) -> dict[str, Any] | None:
    """The holder of the lease object ``key`` while it has not expired, else None (read only)."""
    cur = api.head(key)
    if cur is None:
        return None
    try:
        expires = float(cur.metadata.get(META_EXPIRES, "inf"))
    except ValueError:
        expires = float("inf")
    if expires <= time.time():
        return None
    try:
        return parse_holder(api.read(key, 0, cur.size, if_match=cur.etag))
    except Exception:  # released or renewed between the two reads: no name to give
        return {}


class S3Lease(Lease):
    """A held s3:// run lease (see the module docstring)."""

    def __init__(self, api: S3Api, key: str, where: str, *, lease_seconds: float,
                 keep: bool = False) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds!r}")
        self._api, self._key, self._where = api, key, where
        self._seconds = float(lease_seconds)
        self._token = secrets.token_hex(8)
        self._keep = keep  # released by expiring it in place: the next epoch grows from it
        super().__init__(where)
        self.epoch = 1
        #: ``time.monotonic()`` until which the lease is surely still ours: the start of the last
        #: write of it that landed, plus ``lease_seconds``.
        self.valid_until = 0.0
        self._etag = self._take()
        self.holder["epoch"] = self.epoch
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_loop, name="rlio-lease-renew",
                                        daemon=True)
        self._thread.start()

    def _put(self, *, if_match: str | None, released: bool = False) -> str:
        start = time.monotonic()
        expires = "0" if released else f"{time.time() + self._seconds:.3f}"
        body = json.dumps({**self.holder, "epoch": self.epoch, "expires": expires,
                           "token": self._token}).encode()
        etag = self._api.put(self._key, body, metadata={
            META_EXPIRES: expires, META_TOKEN: self._token, META_EPOCH: str(self.epoch)},
            if_match=if_match, create_only=if_match is None, ctype=_JSON)
        if not self.lost:  # (lost, possibly by its own expiry check: never trusted again)
            self.valid_until = start + self._seconds * (1 - EXPIRY_MARGIN)
        return etag

    def _take(self) -> str:
        """Create the lease, or take over an expired one; RunInUseError while it is live."""
        for _ in range(20):
            self.epoch = 1
            try:
                return self._put(if_match=None)
            except FileExistsError:
                pass
            cur = self._api.head(self._key)
            if cur is None:
                continue  # released meanwhile: try to create it again
            if cur.metadata.get(META_TOKEN) == self._token:
                return cur.etag  # ours: the answer was lost and the retry got 412
            try:
                expires = float(cur.metadata.get(META_EXPIRES, "inf"))
            except ValueError:
                expires = float("inf")
            if expires > time.time():
                raise in_use(self._where, self._holder_of(cur))
            before = cur.metadata.get(META_EPOCH, "0")
            self.epoch = (int(before) if before.isascii() and before.isdigit() else 0) + 1
            try:
                return self._put(if_match=cur.etag)  # expired: take it over
            except (FileExistsError, FileNotFoundError):
                continue  # another taker won, or it was released: look again
        raise in_use(self._where, {})

    def _holder_of(self, cur: ObjectInfo) -> dict[str, Any]:
        try:
            data = self._api.read(self._key, 0, cur.size, if_match=cur.etag)
        except Exception:  # gone or unreadable: the holder stays unnamed
            return {}
        return parse_holder(data)

    def _renew_loop(self) -> None:
        while not self._stop.wait(self._seconds / 3):
            if self.lost:
                return  # lost (or may have been): let it expire, never renew it back
            try:
                self._etag = self._put(if_match=self._etag)
                continue
            except (FileExistsError, FileNotFoundError):
                pass
            except Exception:  # a transient failure: try at the next tick
                continue
            try:
                cur = self._api.head(self._key)
            except Exception:
                continue
            if cur is not None and cur.metadata.get(META_TOKEN) == self._token:
                self._etag = cur.etag  # our renewal landed; its answer was lost
                continue
            self.lost = True  # another writer took the lease over (or deleted it): stop
            return

    def release(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=max(5.0, self._seconds))
        if self.lost:
            return
        if self._keep:  # expired in place, its epoch kept for the next holder
            with contextlib.suppress(OSError):  # taken over or gone: not ours any more
                self._put(if_match=self._etag, released=True)
            self.lose("it was released")
            return
        try:
            self._api.delete(self._key, if_match=self._etag)
        except (FileExistsError, FileNotFoundError):
            pass  # taken over or gone: not ours to delete
        except OSError:  # a store without conditional deletes: delete it if it is still ours
            with contextlib.suppress(OSError):
                cur = self._api.head(self._key)
                if cur is not None and cur.metadata.get(META_TOKEN) == self._token:
                    self._api.delete(self._key)
