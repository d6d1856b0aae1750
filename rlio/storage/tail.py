"""Torn-tail repair of append-only files: a crash's cut-off last line moves to ``<file>.torn``."""

from __future__ import annotations

from rlio import layout as L
from rlio._codec.jsonl import DecodeError, decode
from rlio.storage.base import Storage

_TAIL_CHUNK = 1 << 16


# --------------------------------------------------------------------------------------------
# Torn tails


def _torn_offset(storage: Storage, rel: str, size: int, check_json: bool) -> int:
    """Where the torn tail of an append-only file starts (``size`` when there is none).

    Torn: bytes after the last ``\\n``; for JSONL files also a last complete line that does not
    parse (what a crash can leave behind a zero-filled or half-flushed block).
    """
    buf, pos = b"", size
    while True:
        start = max(0, pos - _TAIL_CHUNK)
        buf = storage.read_range(rel, start, pos) + buf
        pos = start
        last_nl = buf.rfind(b"\n")
        if last_nl < 0 and pos > 0:
            continue  # the unterminated tail is longer than what was read
        tail = pos + last_nl + 1  # start of the unterminated tail (== size when none)
        if not check_json or last_nl < 0:
            return tail
        prev_nl = buf.rfind(b"\n", 0, last_nl)
        if prev_nl < 0 and pos > 0:
            continue  # the last complete line starts before what was read
        line = buf[prev_nl + 1:last_nl]
        if not line.strip():
            return tail  # a blank line is tolerated, not torn
        try:
            decode(line)
        except DecodeError as exc:
            if exc.kind in ("json", "utf8"):
                return pos + prev_nl + 1
        return tail


def repair_torn_tail(storage: Storage, rel: str) -> int:
    """Move a torn last line of the append-only file ``rel`` to ``rel + ".torn"``.

    The bytes are appended to the sidecar (never deleted) before ``rel`` is cut, under the file's
    inter-process lock. A missing or empty file is left alone (and not created).

    Returns:
        The number of bytes moved aside (0 when the file ends cleanly).
    """
    entry = storage.stat(rel)
    if entry is None or entry.kind != "file" or entry.size == 0:
        return 0
    with storage.lock(rel):
        entry = storage.stat(rel)
        if entry is None or entry.size == 0:
            return 0
        offset = _torn_offset(storage, rel, entry.size, rel.endswith(".jsonl"))
        if offset >= entry.size:
            return 0
        return storage.move_tail(rel, offset, rel + L.TORN_SUFFIX)
