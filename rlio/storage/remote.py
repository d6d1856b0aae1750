"""What the object-store backends (gs://, s3://, az://) share: one wording of their failures, one
jittered backoff, and the wait for a lock object.

Failures reach callers as rlio's errors, worded the same for every cloud and without errno
prefixes: ``StoreUnreachable`` (a ``StorageUnavailableError``: no network, a timeout, 5xx or
throttling that outlived the client's retries; worth trying again) or ``StorageUnavailableError``
(credentials missing or refused: not worth retrying). A backend's own translation decides which
one its client's exception is, then words it here.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator

from rlio.errors import RunInUseError, StorageUnavailableError
from rlio.storage.lease import Lease


class StoreUnreachable(StorageUnavailableError):
    """The store did not answer usably (no network, a timeout, 5xx or throttling after the
    client's retries): worth trying again later, unlike refused credentials."""


def _first_line(reason: object) -> str:
    text = str(reason)
    return text.splitlines()[0] if text else reason.__class__.__name__


def unreachable(where: str, reason: object) -> StoreUnreachable:
    """The store could not be reached at all (``reason``: the client's error, first line)."""
    return StoreUnreachable(f"{where}: cannot reach the store ({_first_line(reason)})")


def answered(where: str, status: int | str, code: str) -> StoreUnreachable:
    """The store answered a server error or throttling, past the client's retries."""
    return StoreUnreachable(f"{where}: the store answered {status} ({code or 'server busy'})")


def refused(where: str, detail: str, hint: str) -> StorageUnavailableError:
    """Credentials missing or refused (``hint``: what to set)."""
    return StorageUnavailableError(f"{where}: {detail}; {hint}")


def backoff(attempt: int, cap: float = 0.5) -> None:
    """Sleep before try ``attempt`` + 1 (1-based): full jitter, doubling from 10 ms, at most
    ``cap`` seconds; the one backoff of every object-store retry loop."""
    time.sleep(random.uniform(0, min(0.005 * 2 ** min(attempt, 10), cap)))


@contextlib.contextmanager
def held(take: Callable[[], Lease]) -> Iterator[None]:
    """Hold the lock lease ``take()`` gives (``Storage.lock`` of an object store), waiting while
    another live holder has it; released on exit."""
    delay = 0.05
    while True:
        try:
            lease = take()
            break
        except RunInUseError:
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 1.0)
    try:
        yield
    finally:
        lease.release()
