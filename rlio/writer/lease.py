"""How a ``RunWriter`` joins its run: as the one lease holder, or attached beside it.

The lease holder (``RunWriter(path)``) takes the run's lease before it changes anything
(``RunInUseError`` when another live writer holds it), then cleans up after crashed writers:
half-done tail moves are undone and temp files of interrupted atomic replaces older than the
lease are deleted (``Storage.sweep_orphans``). Only the lease holder repairs torn tails, rewinds
on resume and replaces ``config.json`` / ``code.diff``.

An attached writer (``RunWriter(path, attach=True)``: an async checkpoint saver, an eval worker,
the other ranks of a job) takes no lease and changes nothing but by appending and by writing
its own per-iteration files; it needs the run to exist.
"""

from __future__ import annotations

from rlio.errors import RlioError, RunInUseError
from rlio.storage.base import Storage
from rlio.storage.lease import LEASE_SECONDS, Lease

__all__ = ["LEASE_SECONDS", "join_run", "refuse_attached", "release", "require_lease"]


def join_run(storage: Storage, *, attach: bool, lease_seconds: float) -> Lease | None:
    """Take the lease and clean up (None when ``attach``: no lease, nothing changed).

    Raises:
        RunInUseError: another live writer holds the lease; nothing on disk was changed.
    """
    if attach:
        return None
    lease = storage.acquire_lease(lease_seconds=lease_seconds)
    try:
        storage.sweep_orphans(older_than=lease.since)
    except BaseException:
        lease.release()
        raise
    return lease


def release(lease: Lease | None) -> None:
    """Give the lease up, if this writer holds one (idempotent)."""
    if lease is not None:
        lease.release()


def refuse_attached(lease: Lease | None, attach: bool, what: str, where: str) -> None:
    """Refuse a verb only the lease holder may run (``what``) in an attached writer."""
    if attach:
        raise RlioError(f"{what} in run {where}: an attached writer (attach=True) only appends "
                        "and writes its own per-iteration files; the lease holder writes it")


def require_lease(lease: Lease | None, where: str) -> None:
    """Raise when this writer's lease was taken over by another writer (it expired)."""
    if lease is not None and lease.lost:
        raise RunInUseError(f"run {where}: this writer's lease expired and another writer took "
                            "it over; stop writing (a renewal could not reach the store in time)")
