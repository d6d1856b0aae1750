"""The run lease on az://: an Azure blob lease on the blob ``<run>/.rlio-lease``.

The blob holds the holder's JSON (host, pid, since, epoch). A writer creates it when absent
(``If-None-Match: *``), then asks the service for a lease on it with a random proposed lease
id, for ``duration(lease_seconds)`` seconds (Azure grants 15 to 60); a blob whose lease is live
answers 409 (``LeaseAlreadyPresent``): ``RunInUseError`` naming the holder the blob records. The
holder writes its record under its lease id and renews the lease every third of its duration on
the daemon thread every object store's lease shares (``lease_object.RenewedLease``). A holder
killed without releasing keeps the run for at most the duration; then the service lets the
next writer acquire it. Acquiring again with the same proposed id is idempotent, so a retried
acquire whose first answer was lost is not refused.

Fencing: the service itself refuses the old holder: once another writer acquired the lease,
the old id is rejected on renew, release and any write to the lease blob (409/412
``LeaseIdMismatch``); the renewal thread then marks the lease ``lost`` and the writer
acknowledges nothing more. Expiry is the service's clock, not the hosts'; ``valid_until`` (this
host's monotonic clock) is when the last acquire or renewal was sent plus the duration, less
``MARGIN_SECONDS``: until then the lease is surely held. The epoch is one more than the one
the blob's record named when the lease was acquired (the run's lease blob is kept on release,
``keep``, so epochs grow across holders); the holder's epoch in every live log's metadata lets
the store refuse the old holder's appends too (``rlio.storage.fencing``).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from typing import Any

from rlio.storage.azure.api import AzureApi, LeaseTakenError
from rlio.storage.lease import in_use, parse_holder
from rlio.storage.lease_object import RenewedLease

_JSON = "application/json"
#: Seconds before the service's expiry after which the holder stops counting on its lease
#: (``valid_until``: the request's start plus the duration, less this; hosts' clocks are not
#: involved, only this host's monotonic clock and the service's).
MARGIN_SECONDS = 2.0


def duration(lease_seconds: float) -> int:
    """The Azure lease duration for ``lease_seconds``: rounded, clamped to 15..60."""
    return int(min(60, max(15, round(lease_seconds))))


class AzureLease(RenewedLease):
    """A held az:// lease (see the module docstring)."""

    def __init__(self, api: AzureApi, key: str, where: str, *, lease_seconds: float,
                 keep: bool = False) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds!r}")
        self._api, self._key, self._where = api, key, where
        self.seconds = duration(lease_seconds)
        self.lease_id = str(uuid.uuid4())
        self._keep = keep  # released without deleting the blob: the next epoch grows from it
        super().__init__(where)
        self._take()
        self._start_renewing(self.seconds)

    def _take(self) -> None:
        blob = self._api.blob(self._key)
        with contextlib.suppress(FileExistsError, LeaseTakenError):  # it exists already
            self._api.upload(self._key, b"{}", ctype=_JSON, if_none_match=True)
        for _ in range(20):
            start = time.monotonic()
            try:
                self._api.call(lambda: blob.acquire_lease(lease_duration=self.seconds,
                                                          lease_id=self.lease_id), self._key)
                self.valid_until = start + self.seconds - MARGIN_SECONDS
                break
            except LeaseTakenError:
                raise in_use(self._where, self._holder()) from None
            except FileNotFoundError:  # released and deleted meanwhile: create it again
                with contextlib.suppress(FileExistsError, LeaseTakenError):
                    self._api.upload(self._key, b"{}", ctype=_JSON, if_none_match=True)
        else:
            raise in_use(self._where, {})
        # the blob is ours alone now: the previous holder's record names its epoch
        before = self._holder().get("epoch")
        self.epoch = self.holder["epoch"] = (before if type(before) is int else 0) + 1
        self._api.upload(self._key, json.dumps(self.holder).encode(), ctype=_JSON,
                         lease=self.lease_id)

    def _holder(self) -> dict[str, Any]:
        try:
            return parse_holder(self._api.read_ranged(self._key, 0)[0])
        except (OSError, LeaseTakenError):
            return {}

    def renew(self) -> bool:
        """Renew the lease once; False (and ``lost`` set) when the service says another lease
        id holds it now or the blob is gone. A transient failure is not a loss (True)."""
        from azure.storage.blob import BlobLeaseClient

        held = BlobLeaseClient(self._api.blob(self._key), lease_id=self.lease_id)
        start = time.monotonic()
        try:
            self._api.call(held.renew, self._key)
            if not self.lost:  # a lost lease (by its own expiry check too) is never trusted again
                self.valid_until = start + self.seconds - MARGIN_SECONDS
        except (LeaseTakenError, FileNotFoundError):
            self.lost = True
            return False
        except (OSError, ValueError):  # transient, past the SDK's retries: the next tick retries
            pass
        return True

    def refresh(self) -> None:
        """Renew now (``valid_until`` passed: the renewal thread fell behind); unless the
        service renewed it in time, it may have expired (``Lease.refresh``)."""
        if self.renew() and self.valid_until <= time.monotonic():
            super().refresh()

    def release(self) -> None:
        if not self._stop_renewing(self.seconds):
            return
        if self.lost:
            return
        with contextlib.suppress(OSError, LeaseTakenError):
            if self._keep:  # the blob and its record (the epoch) stay for the next holder
                from azure.storage.blob import BlobLeaseClient

                held = BlobLeaseClient(self._api.blob(self._key), lease_id=self.lease_id)
                self._api.call(held.release, self._key)
            else:
                self._api.delete(self._key, lease=self.lease_id)
        self.lose("it was released")
