"""Torn-tail repair of append-only files: a crash's cut-off last line moves to ``<file>.torn``."""

from __future__ import annotations

from rlio import layout as L
from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_TAIL_LINE, backward_lines
from rlio.storage.base import Storage


def _torn_offset(storage: Storage, rel: str, size: int, check_json: bool) -> int:
    """Where the torn tail of an append-only file starts (``size`` when there is none).

    Torn: bytes after the last ``\\n``; for JSONL files also a last complete line that does not
    parse (what a crash can leave behind a zero-filled or half-flushed block). Lines are read
    from the end (``backward_lines``), at most two of them.
    """
    # a last line longer than MAX_TAIL_LINE is kept: it is not read to judge it (memory bound)
    lines = backward_lines(storage, rel, size, max_line=MAX_TAIL_LINE + 1)
    last = next(lines, None)
    if last is None:
        return size
    tail = size if last.terminated else last.start  # start of the unterminated tail
    if not check_json:
        return tail
    complete = last if last.terminated else next(lines, None)
    if complete is None or complete.data is None or not complete.data.strip():
        return tail  # no complete line, one too long to read, or a blank one (tolerated)
    try:
        decode(complete.data)
    except DecodeError as exc:
        if exc.kind in ("json", "utf8"):
            return complete.start
    return tail


def repair_torn_tail(storage: Storage, rel: str) -> int:
    """Move a torn last line of the append-only file ``rel`` to ``rel + ".torn"``, under the
    file's lock (``move_tail``: never deleted); the bytes moved. A missing or empty file is left
    alone (and not created)."""
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
