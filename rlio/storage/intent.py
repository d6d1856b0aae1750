"""Intent records of local tail moves, so that a move killed half-way is undone on reopen.

``LocalStorage.move_tail`` copies a file's tail to a sidecar, then cuts the file. Killed in
between, both files would hold the moved bytes. Before copying it makes
``<run>/.rlio-intent-<file>.json`` durable (file, offset, end, sidecar, the sidecar's size
before); after the cut it removes it. ``recover`` (run by the next lease holder) reads any left:
while the file still holds the bytes the sidecar got, the move did not finish and the sidecar is
cut back to its old size (undone); otherwise the file was cut and the move stands (finished).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from rlio.storage.locking import fsync_path

#: Prefix of intent record names (hidden from ``walk`` through ``HIDDEN_PREFIXES``).
INTENT_PREFIX = ".rlio-intent-"
_CHUNK = 1 << 20


def _name(rel: str) -> str:
    return INTENT_PREFIX + rel.replace("/", "%2F") + ".json"


def write(root: str, *, rel: str, offset: int, end: int, sidecar: str, sidecar_size: int) -> str:
    """Make the intent to move ``rel[offset:end]`` to ``sidecar`` durable; its path."""
    import json  # here: a validator imports this module, never writes an intent

    path = os.path.join(root, _name(rel))
    data = json.dumps({"rel": rel, "offset": offset, "end": end, "sidecar": sidecar,
                       "sidecar_size": sidecar_size}).encode()
    tmp = path + ".new"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_path(root, directory=True)
    return path


def pending(root: str, rel: str) -> bool:
    """True while an intent record of ``rel`` exists (its move is under way, or was killed)."""
    return os.path.exists(os.path.join(root, _name(rel)))


def clear(path: str) -> None:
    """Remove an intent record once its move is complete (or taken back)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with contextlib.suppress(OSError):
        fsync_path(os.path.dirname(path), directory=True)


def _same(a: str, a_start: int, b: str, b_start: int, n: int) -> bool:
    """True when ``n`` bytes of file ``a`` at ``a_start`` equal those of ``b`` at ``b_start``."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        fa.seek(a_start)
        fb.seek(b_start)
        while n > 0:
            k = min(n, _CHUNK)
            x, y = fa.read(k), fb.read(k)
            if x != y or len(x) < k:
                return False
            n -= k
    return True


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def recover(root: str) -> int:
    """Finish or undo every interrupted move under ``root``; the number of moves undone."""
    undone = 0
    try:
        names = [n for n in os.listdir(root) if n.startswith(INTENT_PREFIX)]
    except FileNotFoundError:
        return 0
    import json

    for name in sorted(names):
        path = os.path.join(root, name)
        if name.endswith(".new"):  # killed while writing the intent: nothing was moved yet
            clear(path)
            continue
        try:
            with open(path, "rb") as f:
                rec: dict[str, Any] = json.loads(f.read())
            full = os.path.join(root, *str(rec["rel"]).split("/"))
            side = os.path.join(root, *str(rec["sidecar"]).split("/"))
            offset, end, before = int(rec["offset"]), int(rec["end"]), int(rec["sidecar_size"])
        except (OSError, ValueError, KeyError, TypeError):
            clear(path)  # unreadable: written half-way, before anything moved
            continue
        copied = _size(side) - before
        n = min(copied, end - offset)
        if copied > 0 and _size(full) >= offset + n and _same(full, offset, side, before, n):
            os.truncate(side, before)  # the file still has the bytes: undo the copy
            fsync_path(side)
            undone += 1
        clear(path)
    return undone
