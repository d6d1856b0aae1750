"""Fencing by the store: the lease holder's epoch, recorded in each live log's own metadata.

A paused holder may wake up past its lease without knowing it (a lying clock, a renewal that
landed late). Its local check (``Lease.check``) is then not enough; the object store must refuse
its writes. Every object store does it the same way:

1. A new holder, right after taking the lease, writes its epoch into the metadata of every live
   append-only log (``FENCED``) with a precondition on the version it read; that moves the log's
   version (generation/metageneration, ETag), so every write the old holder prepared against the
   version it knew is refused by the store (412).
2. A holder's appender (``fence``: its lease) sends every batch with a precondition on the log's
   version, and after any refusal re-reads the log and calls ``check`` before trying again: a log
   that names a newer epoch means the run was taken over, ``LeaseLostError`` is raised and the
   batch is never sent again (nothing more lands, nothing more is acknowledged).
3. Writes of a holder carry ``stamped`` metadata (the larger of its epoch and the log's), and
   attached writers keep whatever metadata the log has, so the newest epoch is never lost.

Epochs grow across holders on every store (gs:// and s3://: one more than the lease object's
previous holder, the object being kept on release; az://: the same, kept in the lease blob's
record). The metadata entry is ``rlio-epoch`` (``rlio_epoch`` on az://,
whose metadata names are identifiers).

Limits: only the logs are fenced by the store (a whole-file replace is refused by the holder's
own lease check); a log that does not exist yet when the run is taken over is created by
whichever holder writes it first; on s3:// an ETag names the bytes and their upload form, so a
version whose exact bytes and form came back (a rewind to exactly those bytes, then appends of
exactly the same lines) would let the old holder's prepared write through its precondition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from rlio.layout import APPEND_ONLY
from rlio.storage.lease import Lease

#: The logs a new holder fences (sidecars are written only under the holder's lock).
FENCED = tuple(sorted(APPEND_ONLY))
V = TypeVar("V")


def fence_logs(lease: Lease, fence_one: Callable[[str, int], int]) -> Lease:
    """A new holder's first act: ``fence_one(rel, epoch)`` (``record_epoch``) for every live log
    (step 1 of the module docstring); the lease is released if that fails. Returns ``lease``.

    A log naming an epoch at least the lease's (its lease object was deleted, or the run was
    copied without it: no live holder can have stamped it, since this one holds the lease)
    raises the lease's epoch past it, and every log is fenced again: a holder
    is never refused by its own run."""
    try:
        while True:
            newest = max([fence_one(rel, lease.epoch) for rel in FENCED])
            if newest < lease.epoch:
                return lease
            lease.epoch = lease.holder["epoch"] = newest + 1
    except BaseException:
        lease.release()
        raise


def record_epoch(epoch: int, name: str, head: Callable[[], tuple[Mapping[str, object], V] | None],
                 write: Callable[[dict[str, str], V], object]) -> int:
    """Write ``epoch`` into one log's metadata ``name`` unless it names that or a newer one:
    then that epoch is returned (else 0: written, or no such log). ``head()`` reads the log
    (its metadata and version, None when absent) and ``write(metadata, version)`` replaces its
    metadata only while it is that version (``FileExistsError`` or ``FileNotFoundError``
    otherwise: an append landed meanwhile, and the new version is fenced)."""
    while True:
        cur = head()
        if cur is None:
            return 0
        if epoch_of(cur[0], name) >= epoch:
            return epoch_of(cur[0], name)
        try:
            write({**stamped(cur[0], name, None), name: str(epoch)}, cur[1])
            return 0
        except (FileExistsError, FileNotFoundError):
            continue


def epoch_of(metadata: Mapping[str, object] | None, name: str) -> int:
    """The epoch ``metadata[name]`` records (0 when none or unreadable)."""
    value = str((metadata or {}).get(name, "0"))
    return int(value) if value.isascii() and value.isdigit() else 0


def stamped(metadata: Mapping[str, object] | None, name: str, fence: Lease | None
            ) -> dict[str, str]:
    """``metadata`` as strings, with ``fence``'s epoch when it is the newer one."""
    meta = {k: str(v) for k, v in (metadata or {}).items()}
    if fence is not None:
        meta[name] = str(max(fence.epoch, epoch_of(metadata, name)))
    return meta


def check(fence: Lease | None, metadata: Mapping[str, object] | None, name: str,
          display: str) -> None:
    """Raise ``LeaseLostError`` when ``fence`` (a holder's lease; None: an attached writer) was
    lost, or may have been, or the log's ``metadata`` names a newer holder's epoch."""
    if fence is None:
        return
    fence.check()
    theirs = epoch_of(metadata, name)
    if theirs > fence.epoch:
        fence.lose(f"a newer holder (epoch {theirs}) took the run over and fenced {display}")
        raise fence.error()
