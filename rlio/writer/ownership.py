"""How a ``RunWriter`` joins its run: as the one lease holder, or attached beside it.

The lease holder (``RunWriter(path)``) takes the run's lease before it changes anything
(``RunInUseError`` when another live writer holds it), then cleans up after crashed writers:
half-done tail moves are undone and temp files of interrupted atomic replaces older than the
lease are deleted (``Storage.sweep_orphans``). Only the lease holder repairs torn tails, rewinds
on resume and replaces ``config.json`` / ``code.diff``.

An attached writer (``RunWriter(path, attach=True)``: an async checkpoint saver, an eval worker,
the other ranks of a job) takes no lease and changes nothing but by appending and by writing
its own per-iteration files; it needs the run to exist.

Fenced: a lease holder checks its lease before every verb (``require_lease``); one that lost it
raises ``LeaseLostError`` and writes nothing (``close`` closes its handles without a flush).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from rlio import layout as L
from rlio.errors import LeaseLostError, RlioError, UnsafeStorageError
from rlio.storage.base import Appender, Storage
from rlio.storage.lease import LEASE_SECONDS, Lease

__all__ = ["LEASE_SECONDS", "close_appender", "join_run", "lease_lost", "open_metrics",
           "refuse_attached", "release", "require_lease"]


def join_run(storage: Storage, *, attach: bool, resume: bool,
             lease_seconds: float) -> Lease | None:
    """Take the lease and clean up (None when ``attach``: no lease, nothing changed).

    Raises:
        RunInUseError: another live writer holds the lease; nothing on disk was changed.
        ValueError: ``resume`` with ``attach`` (a rewind is the lease holder's).
    """
    if attach:
        if resume:
            raise ValueError("resume=True rewinds the run: only its lease holder may, not an "
                             "attached writer (attach=True)")
        return None
    lease = storage.acquire_lease(lease_seconds=lease_seconds)
    try:
        storage.sweep_orphans(older_than=lease.since)
    except BaseException:
        lease.release()
        raise
    return lease


def open_metrics(storage: Storage, open_appender: Callable[[], object]) -> None:
    """Open ``metrics.jsonl`` for appending (``open_appender``), creating it empty in a new run.

    A writer killed right after opening then leaves a run with its required metrics file (a
    run with no record yet, not a broken one). A symbolic link is left alone: ``log_metrics``
    refuses it when called.
    """
    try:
        open_appender()  # local: O_APPEND | O_CREAT creates it
    except UnsafeStorageError:
        return
    if not storage.is_local and storage.stat(L.METRICS) is None:
        with contextlib.suppress(UnsafeStorageError):  # created meanwhile by another writer
            storage.replace(L.METRICS, b"")  # object stores: create-if-absent


def release(lease: Lease | None) -> None:
    """Give the lease up, if this writer holds one (idempotent)."""
    if lease is not None:
        lease.release()


def refuse_attached(attach: bool, what: str, where: str) -> None:
    """Refuse a verb only the lease holder may run (``what``) in an attached writer."""
    if attach:
        raise RlioError(f"{what} in run {where}: an attached writer (attach=True) only appends "
                        "and writes its own per-iteration files; the lease holder writes it")


def require_lease(lease: Lease | None, *, durable: bool = False) -> None:
    """Raise ``LeaseLostError`` when this writer lost its lease or may have (None: attached, no
    lease). ``durable``: the full check of a durable verb (``Lease.verify``: a local lease file's
    identity too); else the cheap one (``Lease.check``)."""
    if lease is not None:
        if durable:
            lease.verify()
        else:
            lease.check()


def lease_lost(lease: Lease | None) -> LeaseLostError | None:
    """The error of a lost lease (see ``require_lease``), or None while it is held."""
    try:
        require_lease(lease, durable=True)
    except LeaseLostError as exc:
        return exc
    return None


def close_appender(app: Appender, *, flush: bool) -> None:
    """Close ``app``; first make its lines durable when ``flush``. Without ``flush`` (a lost
    lease) nothing more is written: a gs:// batch still pending is refused and dropped."""
    try:
        if flush:
            app.flush()
    finally:
        if flush:
            app.close()
        else:
            with contextlib.suppress(LeaseLostError):
                app.close()
