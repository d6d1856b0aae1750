"""The run lease as an object of the store (gs://, s3://): taken with a conditional write,
renewed while held; each cloud supplies only its conditional write and delete.

``<run>/.rlio-lease`` (and each ``ObjectStorage.lock`` object, the same way) holds the holder's
JSON (host, pid, since, and the epoch, expiry and token below, so that every write of it is a
new version on every store) and, in its metadata, when the lease expires
(``rlio-lease-expires``, seconds since the epoch by the holder's clock), a random token of the
holder and its epoch (``rlio-lease-epoch``: one more than the holder it took over from, 1 for a
lease created afresh). It is created only where absent; a daemon thread rewrites it every third
of ``lease_seconds`` conditionally on the version it last wrote, pushing the expiry on. A writer
that finds a lease past its expiry takes it over conditionally on the version it read (of two
takers one wins); one that finds it live gets ``RunInUseError``. A holder whose renewal is
refused and finds another token has lost the lease (``lost``: the writer acknowledges nothing
more); one that finds no object reports that the lease object vanished (deleted, or the store
was reset). A write whose answer was lost and whose retry was refused is recognised by the token.

The holder trusts its lease only until ``EXPIRY_MARGIN`` of ``lease_seconds`` before the expiry
its last landed write named, by its own monotonic clock from when that write was sent
(``valid_until``): a paused holder that wakes up past it acknowledges nothing. Release deletes a
lock's object conditionally; the run's (``keep``) is expired in place, so that its epoch
survives and the next holder's is one more (``rlio.storage.fencing``).

Clocks: expiry is judged by the taker's clock against the holder's; hosts are assumed to agree
within a small fraction of ``lease_seconds``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
import time
from abc import abstractmethod
from typing import TYPE_CHECKING, Any, Protocol

from rlio.storage.lease import EXPIRY_MARGIN, Lease, in_use, parse_holder

if TYPE_CHECKING:
    from rlio.storage.objects import Head

META_EXPIRES = "rlio-lease-expires"
META_TOKEN = "rlio-lease-token"
META_EPOCH = "rlio-lease-epoch"


class LeaseStore(Protocol):
    """The few requests a lease object needs (``ObjectStorage``'s adapter provides them)."""

    def _head(self, key: str) -> Head | None: ...

    def _get(self, key: str, start: int, end: int | None, pin: Any = None
             ) -> tuple[bytes, int, Any]: ...

    def _put_if(self, key: str, data: bytes, metadata: dict[str, str], match: Any) -> Any:
        """Write ``key`` whole with ``metadata`` only while it is version ``match`` (None: only
        where absent); its new version. ``FileExistsError`` (or ``FileNotFoundError``)
        otherwise."""

    def _delete_if(self, key: str, version: Any) -> None:
        """Delete ``key`` only while it is ``version`` (``FileExistsError`` or
        ``FileNotFoundError`` otherwise; ``OSError`` where the store cannot)."""

    def _delete(self, key: str) -> None: ...


def _expires(head: Head) -> float:
    try:
        return float(head.metadata.get(META_EXPIRES, "inf"))
    except ValueError:
        return float("inf")


def _holder_of(store: LeaseStore, key: str, head: Head) -> dict[str, Any]:
    """The holder a lease object names ({} when gone or unreadable)."""
    try:
        return parse_holder(store._get(key, 0, head.size, head.version)[0])
    except Exception:  # released or renewed meanwhile, or unreadable: the holder stays unnamed
        return {}


def live_holder(store: LeaseStore, key: str) -> dict[str, Any] | None:
    """The holder of the lease object ``key`` while it has not expired, else None (read only)."""
    cur = store._head(key)
    if cur is None or _expires(cur) <= time.time():
        return None
    return _holder_of(store, key, cur)


class RenewedLease(Lease):
    """A lease a daemon thread renews every third of its duration until it is released or lost:
    the one renewal mechanism of the object stores' leases (this module's, and az://'s
    service lease). A subclass says how to ``renew`` once."""

    def _start_renewing(self, seconds: float) -> None:
        self._period = seconds / 3
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_loop, name="rlio-lease-renew",
                                        daemon=True)
        self._thread.start()

    @abstractmethod
    def renew(self) -> bool:
        """Renew the lease once; False once it is lost (``lose`` called). A transient failure
        is not a loss: True, and the next tick tries again."""

    def _renew_loop(self) -> None:
        while not self._stop.wait(self._period):
            if self.lost or not self.renew():
                return  # lost (or may have been): let it expire, never renew it back

    def _stop_renewing(self, timeout: float) -> bool:
        """Stop the renewal thread; False when it was stopped before (released already)."""
        if self._stop.is_set():
            return False
        self._stop.set()
        self._thread.join(timeout=timeout)
        return True


class ObjectLease(RenewedLease):
    """A held lease object (see the module docstring)."""

    def __init__(self, store: LeaseStore, key: str, where: str, *, lease_seconds: float,
                 keep: bool = False) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds!r}")
        self._store, self._key = store, key
        self._seconds = float(lease_seconds)
        self._token = secrets.token_hex(8)
        self._keep = keep  # released by expiring it in place: the next epoch grows from it
        super().__init__(where)
        self.epoch = 1
        self.valid_until = 0.0
        self._version = self._take()
        self.holder["epoch"] = self.epoch
        self._start_renewing(self._seconds)

    def _put(self, match: Any, *, released: bool = False) -> Any:
        start = time.monotonic()
        expires = "0" if released else f"{time.time() + self._seconds:.3f}"
        body = json.dumps({**self.holder, "epoch": self.epoch, "expires": expires,
                           "token": self._token}).encode()
        version = self._store._put_if(self._key, body, {
            META_EXPIRES: expires, META_TOKEN: self._token, META_EPOCH: str(self.epoch)}, match)
        if not self.lost:  # (lost, possibly by its own expiry check: never trusted again)
            self.valid_until = start + self._seconds * (1 - EXPIRY_MARGIN)
        return version

    def _take(self) -> Any:
        """Create the lease, or take over an expired one; RunInUseError while it is live."""
        for _ in range(20):
            self.epoch = 1
            try:
                return self._put(None)
            except FileExistsError:
                pass
            cur = self._store._head(self._key)
            if cur is None:
                continue  # released meanwhile: try to create it again
            if cur.metadata.get(META_TOKEN) == self._token:
                return cur.version  # ours: the answer was lost and the retry was refused
            if _expires(cur) > time.time():
                raise in_use(self.where, _holder_of(self._store, self._key, cur))
            before = cur.metadata.get(META_EPOCH, "0")
            self.epoch = (int(before) if before.isascii() and before.isdigit() else 0) + 1
            try:
                return self._put(cur.version)  # expired: take it over
            except (FileExistsError, FileNotFoundError):
                continue  # another taker won, or it was released: look again
        raise in_use(self.where, {})

    def renew(self) -> bool:
        """Rewrite the lease object on the version last written, pushing its expiry on."""
        try:
            self._version = self._put(self._version)
            return True
        except (FileExistsError, FileNotFoundError):
            pass
        except Exception:  # a transient failure past the client's retries: next tick
            return True
        try:
            cur = self._store._head(self._key)
        except Exception:
            return True
        if cur is not None and cur.metadata.get(META_TOKEN) == self._token:
            self._version = cur.version  # our renewal landed; its answer was lost
            return True
        self.lose("its lease object vanished from the store (deleted, or the store was "
                  "reset); no other writer holds it" if cur is None else
                  "another writer took its lease over (it had expired)")
        return False

    def release(self) -> None:
        if not self._stop_renewing(max(5.0, self._seconds)):
            return
        if self.lost or os.getpid() != self._pid:  # never a lease another writer took since
            return
        if self._keep:  # expired in place, its epoch kept for the next holder
            with contextlib.suppress(OSError):  # taken over or gone: not ours any more
                self._put(self._version, released=True)
        else:
            self._delete()
        self.lose("it was released")

    def _delete(self) -> None:
        try:
            self._store._delete_if(self._key, self._version)
        except (FileExistsError, FileNotFoundError):
            pass  # taken over or gone: not ours to delete
        except OSError:  # a store without conditional deletes: delete it if it is still ours
            with contextlib.suppress(OSError):
                cur = self._store._head(self._key)
                if cur is not None and cur.metadata.get(META_TOKEN) == self._token:
                    self._store._delete(self._key)
