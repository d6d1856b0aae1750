"""The run lease on gs://: an object taken with a generation precondition, renewed while held.

``<run>/.rlio-lease`` (and each ``GcsStorage.lock`` object, the same way) holds the holder's
JSON (host, pid, since) and, in its custom metadata, when the lease expires
(``rlio-lease-expires``, seconds since the epoch by the holder's clock) and a random token of
the holder. It is created with ``ifGenerationMatch=0``; a daemon thread rewrites it every third
of ``lease_seconds`` with ``ifGenerationMatch=<its generation>``, pushing the expiry on. A
writer that finds a lease past its expiry takes it over with the same precondition (so of two
takers one wins); one that finds it live gets ``RunInUseError``. A holder whose renewal finds
another holder's generation has lost the lease (``lost``). A request whose answer was lost and
whose retry got 412 is recognised by the token.

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

from rlio.storage.gcs.api import GcsApi, generation
from rlio.storage.lease import Lease, in_use, parse_holder

META_EXPIRES = "rlio-lease-expires"
META_TOKEN = "rlio-lease-token"
_JSON = "application/json"


def live_holder(api: GcsApi, key: str) -> dict[str, Any] | None:
    """The holder of the lease object ``key`` while it has not expired, else None (read only)."""
    cur = api.get(key)
    if cur is None:
        return None
    try:
        expires = float((cur.get("metadata") or {}).get(META_EXPIRES, "inf"))
    except ValueError:
        expires = float("inf")
    if expires <= time.time():
        return None
    try:
        return parse_holder(api.read(key, 0, int(cur.get("size", 0)), gen=generation(cur)))
    except Exception:  # released between the two reads, or unreadable: no name to give
        return {}


class GcsLease(Lease):
    """A held gs:// run lease (see the module docstring)."""

    def __init__(self, api: GcsApi, key: str, where: str, *, lease_seconds: float) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds!r}")
        self._api, self._key, self._where = api, key, where
        self._seconds = float(lease_seconds)
        self._token = secrets.token_hex(8)
        super().__init__()
        self._gen = self._take()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_loop, name="rlio-lease-renew",
                                        daemon=True)
        self._thread.start()

    def _meta(self) -> dict[str, str]:
        return {META_EXPIRES: f"{time.time() + self._seconds:.3f}", META_TOKEN: self._token}

    def _upload(self, match: int) -> int:
        body = json.dumps(self.holder).encode()
        res = self._api.upload(self._key, body, metadata=self._meta(), if_generation_match=match,
                               ctype=_JSON)
        return generation(res)

    def _take(self) -> int:
        """Create the lease, or take over an expired one; RunInUseError while it is live."""
        for _ in range(20):
            try:
                return self._upload(0)
            except FileExistsError:
                pass
            cur = self._api.get(self._key)
            if cur is None:
                continue  # released meanwhile: try to create it again
            meta = cur.get("metadata") or {}
            if meta.get(META_TOKEN) == self._token:
                return generation(cur)  # ours: the answer was lost and the retry got 412
            try:
                expires = float(meta.get(META_EXPIRES, "inf"))
            except ValueError:
                expires = float("inf")
            if expires > time.time():
                raise in_use(self._where, self._holder_of(cur))
            try:
                return self._upload(generation(cur))  # expired: take it over
            except (FileExistsError, FileNotFoundError):
                continue  # another taker won, or it was released: look again
        raise in_use(self._where, {})

    def _holder_of(self, resource: dict[str, Any]) -> dict[str, Any]:
        try:
            data = self._api.read(self._key, 0, int(resource.get("size", 0)),
                                  gen=generation(resource))
        except Exception:  # gone or unreadable: the holder stays unnamed
            return {}
        return parse_holder(data)

    def _renew_loop(self) -> None:
        while not self._stop.wait(self._seconds / 3):
            try:
                self._gen = self._upload(self._gen)
            except FileExistsError:
                cur = self._api.get(self._key)
                if cur is not None and (cur.get("metadata") or {}).get(META_TOKEN) == self._token:
                    self._gen = generation(cur)  # our renewal landed; its answer was lost
                    continue
                self.lost = True  # another writer took the lease over: stop renewing
                return
            except Exception:  # a transient failure gcsfs gave up on: try at the next tick
                continue

    def release(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=max(5.0, self._seconds))
        if not self.lost:
            with contextlib.suppress(FileNotFoundError, FileExistsError):
                self._api.delete(self._key, if_generation_match=self._gen)
