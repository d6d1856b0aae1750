"""gs:// run directories: the ``Storage`` backend for Google Cloud Storage.

Every request is a JSON API call of the gcsfs filesystem ``open_storage`` hands in (so this
module imports neither fsspec nor gcsfs, and inherits gcsfs's credentials, session and retries
of 5xx/429 answers); gcsfs's file API has no append and no conditional writes, so writes skip it.

- ``replace``: one multipart upload (readers see the old object or the new one); an existing
  append-only log is never rewritten this way (create-only, else refused).
- Reads: ranged GETs with explicit offsets (never suffix ranges): a file's tail costs its tail.
- ``appender``: batches composed into the one live object, conditional on its generation and
  metageneration (``rlio.storage.gcs.append``); ``acquire_lease``: a renewed lease object
  (``gcs.lease``), after which the new holder fences every live log (its epoch into the log's
  metadata, which bumps the metageneration: the old holder's next compose is refused by the
  store) and its own appenders check the lease before each compose.
- ``move_tail``: the tail reaches the sidecar durably first; the log is then rewritten with
  ``ifGenerationMatch``, keeping composes that landed in between and refusing any other change.
- ``lock(rel)``: a lease object as the run's, under ``.rlio-locks/``, held for short repairs; a
  crashed holder's is taken over ``LOCK_SECONDS`` after its last renewal.
"""

from __future__ import annotations

import contextlib
import errno
import io
import secrets
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

from rlio.errors import RunNotFoundError, UnsafeStorageError
from rlio.layout import APPEND_ONLY, content_type
from rlio.storage import fencing, remote
from rlio.storage.base import HIDDEN_PREFIXES, Appender, Entry, Storage, is_log, rewrite_refused
from rlio.storage.gcs.api import (
    LOCKS_DIR,
    META_EPOCH,
    META_REWRITE_ID,
    META_REWRITES,
    PARTS_DIR,
    RUN_MARKER,
    GcsApi,
    generation,
)
from rlio.storage.gcs.append import GcsAppender
from rlio.storage.gcs.lease import GcsLease, live_holder
from rlio.storage.lease import LEASE_NAME, LEASE_SECONDS, Lease
from rlio.storage.ranged import RangeReader

#: Expiry of a ``lock`` object not renewed (its holder crashed), in seconds.
LOCK_SECONDS = 15.0
#: Bytes fetched per GET when streaming a file.
READ_CHUNK = 4 << 20


def _missing(storage: GcsStorage, rel: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, "no such object", storage.display(rel))


class GcsStorage(Storage):
    """A run under ``gs://bucket/prefix``."""

    def __init__(self, fs: Any, bucket: str, prefix: str) -> None:
        self.api = GcsApi(fs, bucket)
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.root = f"gs://{bucket}/{self.prefix}" if self.prefix else f"gs://{bucket}"
        self._fence: Lease | None = None  # the run lease this storage took: its logs' fence

    def key(self, rel: str) -> str:
        """The object name of run-relative ``rel``."""
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def _any(self, prefix: str) -> bool:
        """True when some object's name starts with ``prefix``."""
        return any(True for _ in self.api.list(prefix, max_results=1))

    def exists(self) -> bool:
        try:
            return self._any(self.key(""))
        except FileNotFoundError:  # no such bucket
            return False

    def create(self) -> None:
        try:
            if self._any(self.key("")) or not self.prefix:
                return
            self.api.upload(self.key(RUN_MARKER), b"", if_generation_match=0)
        except FileExistsError:
            pass  # another writer created the run at the same time
        except FileNotFoundError:
            raise RunNotFoundError(errno.ENOENT, "no such bucket", f"gs://{self.bucket}") from None

    def walk(self) -> Iterator[Entry]:
        cut = len(self.key(""))
        for obj in self.api.list(self.key("")):
            rel = obj["name"][cut:]
            if rel and not rel.endswith("/") and not rel.startswith(HIDDEN_PREFIXES):
                yield Entry(rel, "file", int(obj.get("size", 0)))

    def stat(self, rel: str) -> Entry | None:
        obj = self.api.get(self.key(rel))
        if obj is not None:
            return Entry(rel, "file", int(obj.get("size", 0)))
        return Entry(rel, "dir") if self._any(self.key(rel) + "/") else None

    def open_read(self, rel: str) -> BinaryIO:
        """Streams the bytes the object had when opened (appends made later are not read).

        The first ``READ_CHUNK`` bytes come with the size in one GET, so a small file is read
        atomically. Past that, a whole file is read from the generation first seen (a
        replacement midway raises ``OSError``); a log is read unpinned, since appends only add
        bytes after the ones being read.
        """
        try:
            first, total, gen = self.api.read_ranged(self.key(rel), 0, READ_CHUNK)
        except FileNotFoundError:
            raise _missing(self, rel) from None
        size = len(first) if total is None else total
        key, pin = self.key(rel), None if is_log(rel) else gen
        raw = RangeReader(lambda start, end: self.api.read(key, start, end, gen=pin), first,
                          size, self.display(rel))
        return io.BufferedReader(raw, buffer_size=READ_CHUNK)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        try:
            return self.api.read(self.key(rel), start, end)
        except FileNotFoundError:
            raise _missing(self, rel) from None

    def read_bytes(self, rel: str) -> bytes:
        try:
            return self.api.read_ranged(self.key(rel), 0)[0]  # one GET: never a mix of versions
        except FileNotFoundError:
            raise _missing(self, rel) from None

    def replace(self, rel: str, data: bytes) -> None:
        if not is_log(rel):
            self.api.upload(self.key(rel), bytes(data), ctype=content_type(rel))
            return
        try:
            self.api.upload(self.key(rel), bytes(data), if_generation_match=0,
                            metadata={META_REWRITES: "0"}, ctype=content_type(rel))
        except FileExistsError:
            raise rewrite_refused(self.display(rel)) from None

    def remove(self, rel: str) -> None:
        self.api.delete(self.key(rel))

    def mtime(self, rel: str) -> float | None:
        """The object's ``updated`` time (RFC 3339), or None when absent."""
        obj = self.api.get(self.key(rel))
        if obj is None or not obj.get("updated"):
            return None
        from datetime import datetime  # here: only the cookbook's stat asks

        return datetime.fromisoformat(str(obj["updated"]).replace("Z", "+00:00")).timestamp()

    def appender(self, rel: str) -> Appender:
        return GcsAppender(self.api, self.key(rel), f"{self.key(PARTS_DIR)}/{rel}",
                           ctype=content_type(rel), display=self.display(rel),
                           fence=self._fence if rel in APPEND_ONLY else None)

    def sweep_orphans(self, *, older_than: float | None = None) -> int:
        n = 0
        try:
            for obj in list(self.api.list(self.key(PARTS_DIR) + "/")):
                n += self.api.delete(obj["name"])
        except FileNotFoundError:  # no such bucket yet: nothing to sweep
            return 0
        return n

    def lease_holder(self) -> dict[str, Any] | None:
        """See ``Storage.lease_holder``: the lease object's holder until it expires."""
        return live_holder(self.api, self.key(LEASE_NAME))

    def acquire_lease(self, *, lease_seconds: float = LEASE_SECONDS) -> Lease:
        """The run lease: a renewed object taken with a generation precondition (``gcs.lease``);
        then every live log is fenced with its epoch (see the module docstring)."""
        self._fence = fencing.fence_logs(GcsLease(
            self.api, self.key(LEASE_NAME), self.root, lease_seconds=lease_seconds),
            self._fence_log)
        return self._fence

    def _fence_log(self, rel: str, epoch: int) -> int:
        """Record ``epoch`` in the metadata of the log ``rel`` (if it exists and names an older
        one), conditionally: its metageneration moves on, so a compose of an older holder that
        read the log before is refused (412), and its retry reads the newer epoch."""
        key = self.key(rel)

        def head() -> tuple[dict[str, Any], dict[str, Any]] | None:
            cur = self.api.get(key)
            return None if cur is None else (cur.get("metadata") or {}, cur)

        def write(meta: dict[str, str], cur: Any) -> object:
            return self.api.patch_metadata(
                key, meta, if_generation_match=generation(cur),
                if_metageneration_match=int(cur["metageneration"]))

        return fencing.record_epoch(epoch, META_EPOCH, head, write)

    def lock(self, rel: str) -> contextlib.AbstractContextManager[None]:
        """A lease object of ``rel`` (``GcsLease``: renewed while held, taken over once its
        holder stopped renewing it); waits while another live holder has it."""
        key = f"{self.key(LOCKS_DIR)}/{rel}.lock"
        return remote.held(lambda: GcsLease(self.api, key, self.display(rel),
                                            lease_seconds=LOCK_SECONDS))

    def tail_moving(self, rel: str) -> bool:
        """True while the lock object of ``rel`` exists: tail moves run under ``lock(rel)``."""
        return self.api.get(f"{self.key(LOCKS_DIR)}/{rel}.lock") is not None

    def move_tail(self, rel: str, offset: int, sidecar: str) -> int:
        key = self.key(rel)
        while True:
            first = self.api.get(key)
            if first is None:
                raise _missing(self, rel)
            size = int(first["size"])
            if offset >= size:
                return 0
            try:
                tail = self.api.read(key, offset, size, gen=generation(first))
                break
            except FileNotFoundError:
                continue  # the log changed between the two requests: look again
        side = self.appender(sidecar)
        try:
            side.append_durable(tail if tail.endswith(b"\n") else tail + b"\n")
        finally:
            side.close()
        cur, token = first, secrets.token_hex(8)
        while True:
            try:
                kept = self.api.read(key, 0, offset, gen=generation(cur))
                kept += self.api.read(key, size, int(cur["size"]), gen=generation(cur))
                self.api.upload(key, kept, metadata=_rewritten(cur, token),
                                if_generation_match=generation(cur), ctype=content_type(rel))
                return len(tail)
            except (FileNotFoundError, FileExistsError):
                new = self.api.get(key)
            if new is not None and (new.get("metadata") or {}).get(META_REWRITE_ID) == token:
                return len(tail)  # our rewrite landed; its answer was lost and the retry got 412
            if new is None or not _appended_only(first, new):
                raise UnsafeStorageError(
                    errno.EAGAIN,
                    f"{self.display(rel)} was changed by another writer (not an rlio append) "
                    f"while bytes {offset}..{size} were moved to {self.display(sidecar)}; the "
                    "log was left as it is, so those bytes are now in both places",
                )
            cur = new


def _rewrites(resource: Mapping[str, Any]) -> str | None:
    meta = resource.get("metadata") or {}
    value = meta.get(META_REWRITES)
    return value if isinstance(value, str) else None


def _rewritten(resource: Mapping[str, Any], token: str) -> dict[str, str]:
    """The custom metadata of a log rewritten by ``move_tail``: writers kept, rewrites + 1."""
    meta = dict(resource.get("metadata") or {})
    meta[META_REWRITES] = str(int(_rewrites(resource) or "0") + 1)
    meta[META_REWRITE_ID] = token
    return meta


def _appended_only(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """True when ``after`` can only have come from ``before`` by rlio composes (appends)."""
    return (_rewrites(before) is not None and _rewrites(after) == _rewrites(before)
            and int(after["size"]) >= int(before["size"]))
