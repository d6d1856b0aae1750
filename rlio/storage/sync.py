"""``sync``: mirror a local run to an object store (gs://, s3://, az://) while it is written.

Why: the cookbook's RL loop cannot write to a bucket (its ``log_path`` goes through
``Path(...).expanduser()`` and per-iteration files are written with ``pathlib``), so runs are
written locally and copied up. Whole-file copiers re-upload a growing ``metrics.jsonl`` every time
and can copy a torn last line; this mirror sends each log's new bytes only.

Each pass lists the local run and the remote once and then, per file:

- An append-only log (``metrics.jsonl``, ``checkpoints.jsonl``, ... and their sidecars): only its
  whole lines count (a torn tail waits). When the remote is a prefix of them (its last
  ``WINDOW`` bytes equal the local bytes there), the bytes it lacks are appended through the
  store's own append; otherwise the local log was rewound (a resume superseded lines) and the
  remote log is written again whole.
- Any other file (config, code diff, pages, per-iteration files): replaced whole, atomically,
  when its size differs from the remote's or, once per local change (size and modification time),
  its bytes do. A ``.jsonl`` file counts up to its last newline.

The state is what the remote itself says (a pass reads the remote's listing and the windows it
compares), so a sync killed at any point (SIGKILL) resumes with nothing lost or sent twice: an
append or a replace lands whole or not at all. Files deleted locally stay remote. One file is
advisory: which local (size, modification time) of each non-log file the remote was last found
or made to hold, in the user's cache folder (``$XDG_CACHE_HOME/rlio/sync/``), so a later sync
need not read unchanged files back; lost, stale or unwritable, it only costs those reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from rlio import layout
from rlio.storage.base import Storage, is_log
from rlio.storage.opener import open_storage

__all__ = ["SyncStats", "sync"]

#: Bytes at the end of the remote log compared with the local bytes there before appending.
WINDOW = 4096


@dataclass
class SyncStats:
    """What a sync did: passes made, files appended to and replaced, bytes sent (appended or
    uploaded) and, per pass, the bytes sent in it."""

    passes: int = 0
    appended: int = 0
    replaced: int = 0
    bytes_sent: int = 0
    per_pass: list[int] = field(default_factory=list)


class _Mirror:
    """One local run mirrored to one remote storage; ``seen`` remembers, per non-log file, the
    local (size, mtime) whose bytes the remote was found or made to hold (advisory: kept in
    ``cache`` between syncs, never needed to resume)."""

    def __init__(self, local: Storage, remote: Storage, cache: str) -> None:
        self.local, self.remote, self.cache = local, remote, cache
        self.seen: dict[str, tuple[int, int]] = _load(cache) if cache else {}
        self.saved = dict(self.seen)
        self.stats = SyncStats()

    def save(self) -> None:
        """Write the advisory cache when it changed (atomically; failures ignored)."""
        if not self.cache or self.seen == self.saved:
            return
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(self.cache), exist_ok=True)
            tmp = f"{self.cache}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                f.write(orjson.dumps(self.seen))
            os.replace(tmp, self.cache)
            self.saved = dict(self.seen)

    def one_pass(self) -> int:
        """Mirror what changed; the bytes sent."""
        sent = 0
        there = {e.path: e.size for e in self.remote.walk()}
        files = [e.path for e in self.local.walk() if e.kind == "file"
                 and not layout.is_temp_file(e.path.rpartition("/")[2])]
        # sidecars first: as in a rewind, moved lines reach .superseded before the log is cut
        # (a follower of the mirror finds the cut from the sidecar, as on the local run)
        files.sort(key=lambda rel: layout.parse_path(rel).kind != "sidecar")
        for rel in files:
            try:
                if is_log(rel):
                    sent += self._log(rel, there.get(rel))
                else:
                    sent += self._file(rel, there.get(rel))
            except FileNotFoundError:
                continue  # gone locally since the listing (a temp file, a run moved away)
        self.save()
        self.stats.passes += 1
        self.stats.bytes_sent += sent
        self.stats.per_pass.append(sent)
        return sent

    def _whole_lines(self, rel: str, start: int = 0) -> bytes:
        """The local bytes of ``rel`` from ``start`` up to its last newline."""
        data = self.local.read_range(rel, start, self.local.size(rel))
        return data[:data.rfind(b"\n") + 1]

    def _log(self, rel: str, remote_size: int | None) -> int:
        """Append what the remote log lacks, or write it again when the local one was rewound."""
        if remote_size is None:
            return self._upload(rel, self._whole_lines(rel))
        start = max(0, remote_size - WINDOW)
        local = self._whole_lines(rel, start)  # the window and what follows it
        have = remote_size - start
        if len(local) == have:
            return 0  # nothing new (or only a torn tail)
        if len(local) < have or self.remote.read_range(rel, start, remote_size) != local[:have]:
            # rewound: the remote is no prefix of the local log (an object store replaces a
            # log only once it is gone: readers see the old log, none for a moment, the new)
            self.remote.remove(rel)
            return self._upload(rel, self._whole_lines(rel))
        new = local[have:]
        app = self.remote.appender(rel)
        try:
            app.append_durable(new)
        finally:
            app.close()
        self.stats.appended += 1
        return len(new)

    def _file(self, rel: str, remote_size: int | None) -> int:
        """Replace the remote file when its bytes differ from the local ones."""
        st = os.stat(os.path.join(self.local.root, *rel.split("/")), follow_symlinks=False)
        stamp = (st.st_size, st.st_mtime_ns)
        if self.seen.get(rel) == stamp and remote_size == st.st_size:
            return 0
        data = (self._whole_lines(rel) if rel.endswith(".jsonl")
                else self.local.read_bytes(rel))
        self.seen[rel] = stamp
        if remote_size == len(data) and self.remote.read_bytes(rel) == data:
            return 0
        return self._upload(rel, data)

    def _upload(self, rel: str, data: bytes) -> int:
        """Replace (or create) the remote ``rel`` with ``data`` whole, atomically."""
        self.remote.replace(rel, data)
        self.stats.replaced += 1
        return len(data)


def cache_file(root: str, uri: str) -> str:
    """The advisory cache of the sync of local run ``root`` to ``uri``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha256(f"{os.path.realpath(root)}\n{uri.rstrip('/')}".encode()).hexdigest()
    return os.path.join(base, "rlio", "sync", key[:24] + ".json")


def _load(path: str) -> dict[str, tuple[int, int]]:
    """The advisory cache at ``path``; empty when missing or unreadable."""
    try:
        with open(path, "rb") as f:
            raw = orjson.loads(f.read())
        return {str(k): (int(v[0]), int(v[1])) for k, v in raw.items()}
    except (OSError, ValueError, TypeError, AttributeError, IndexError):
        return {}


def sync(run: str | os.PathLike[str], uri: str, *, follow: bool = False, poll: float = 1.0,
         idle_timeout: float | None = None, on_pass: Callable[[SyncStats], None] | None = None,
         sleep: Callable[[float], None] = time.sleep,
         clock: Callable[[], float] = time.monotonic) -> SyncStats:
    """Mirror the local run ``run`` to ``uri`` once, or with ``follow`` until it is idle.

    Args:
        run: a local run folder.
        uri: where its mirror lives (``gs://``, ``s3://``, ``az://``; ``memory://`` or a local
            path too); created when absent.
        follow: keep mirroring every ``poll`` seconds (a live run); a run not there yet is
            waited for.
        idle_timeout: with ``follow``, stop after this many seconds without a byte to send
            (None: until interrupted).
        on_pass: called with the running totals after each pass (the CLI's progress).
        sleep, clock: the waiting and the time source.

    Returns:
        What was done (``SyncStats``).

    Raises:
        NotARunError: ``run`` is not a local run (with ``follow``: none appeared within
        ``idle_timeout``). StorageUnavailableError: the store cannot be reached.
    """
    from rlio.errors import NotARunError
    from rlio.storage.run_root import open_run_storage

    if poll < 0:
        raise ValueError(f"poll must be >= 0 seconds, got {poll}")
    start = clock()
    while True:  # with follow, a run the trainer has not created yet is waited for
        try:
            local = open_run_storage(run)
            break
        except NotARunError:
            if not follow or (idle_timeout is not None and clock() - start >= idle_timeout):
                raise
            sleep(poll)
    if not local.is_local:
        raise ValueError(f"sync mirrors a local run; {os.fspath(run)!r} is a URI")
    # (a memory:// mirror lives as long as this process: nothing to remember for later)
    cache = "" if uri.startswith("memory://") else cache_file(local.root, uri)
    mirror = _Mirror(local, open_storage(uri, create=True), cache)
    last_sent = clock()
    while True:
        if mirror.one_pass():
            last_sent = clock()
        if on_pass is not None:
            on_pass(mirror.stats)
        if not follow or (idle_timeout is not None and clock() - last_sent >= idle_timeout):
            return mirror.stats
        sleep(poll)
