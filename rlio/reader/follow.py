"""Tail a JSONL file a live run appends to, yielding each complete new line once.

Poll-based (works the same on a local disk and on ``gs://``): at each look the file's size is
compared with the offset read so far and only the bytes in between are read. Only lines that end
with a newline are decoded; the bytes after the last newline (a line being written, or a crash's
torn tail) wait for the next look and are never yielded half. When the file shrinks (a resume
moved superseded lines or a torn tail aside), reading goes on from the last line boundary at or
before the new end whose line is still the one read there (each line's hash is kept), so the
re-logged lines are yielded as they come. The same check of the last line read runs whenever the
size changed, which also catches a rewind the writer has already grown past.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterator
from typing import Any

from rlio._codec.lines import MAX_LINE
from rlio.reader.source import decode_line
from rlio.storage.base import Storage

__all__ = ["follow_jsonl"]

#: Bytes read at most per request.
_CHUNK = 4 << 20
#: The hash kept for a piece of an over-long line, which is never compared.
_UNCHECKED = 0


def follow_jsonl(
    storage: Storage, rel: str, *, poll: float = 1.0, idle_timeout: float | None = None,
    from_start: bool = True, sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[dict[str, Any]]:
    """Yield the objects of ``rel`` as lines are appended; blank and bad lines are skipped.

    Args:
        storage: the run.
        rel: the JSONL file (it may not exist yet: it is waited for).
        poll: seconds between looks once the end is reached.
        idle_timeout: stop after this many seconds without a new line (None: follow forever).
        from_start: begin at the file's start; else at its end when first seen.
        sleep, clock: the waiting and the time source (a caller's event loop may bring its own).
    """
    if poll < 0:
        raise ValueError(f"poll must be >= 0 seconds, got {poll}")
    offset = -1 if not from_start else 0  # -1: start at the end once the file is seen
    boundaries = array("q", [0])  # offsets where read lines start, ascending
    hashes = array("q")  # hashes[i]: hash of the line from boundaries[i] to boundaries[i + 1]
    pending = b""  # bytes read past the last newline (an unfinished line)
    last_new = clock()
    last_size = -1
    while True:
        entry = storage.stat(rel)
        size = entry.size if entry is not None and entry.kind == "file" else 0
        if offset < 0:
            offset = size if entry is not None else 0
            boundaries[0] = offset
        if size != last_size and hashes:
            keep = _still_there(storage, rel, boundaries, hashes, size)
            if keep < len(hashes):  # rewound: go on from the last line still in place
                offset = boundaries[keep]
                del boundaries[keep + 1:]
                del hashes[keep:]
                pending = b""
        last_size = size
        read_to = offset + len(pending)
        if size < read_to:  # the unfinished line was cut away
            pending, read_to = b"", offset
        got = False
        while read_to < size:
            data = storage.read_range(rel, read_to, min(size, read_to + _CHUNK))
            if not data:
                break
            read_to += len(data)
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                offset += len(line) + 1
                boundaries.append(offset)
                hashes.append(hash(line))
                value = decode_line(line if len(line) < MAX_LINE else None)
                if value is not None:
                    got = True
                    yield value
            if len(pending) >= MAX_LINE:  # an over-long line: pass it over unread
                offset += len(pending)
                boundaries.append(offset)
                hashes.append(_UNCHECKED)  # a piece of a line: taken as still in place
                pending = b""
        if got:
            last_new = clock()
        elif idle_timeout is not None and clock() - last_new >= idle_timeout:
            return
        sleep(poll)


def _still_there(storage: Storage, rel: str, boundaries: array[int], hashes: array[int],
                 size: int) -> int:
    """How many of the lines read are still in place (the last one checked first, then back)."""
    k = len(hashes)
    while k > 0 and boundaries[k] > size:
        k -= 1
    while k > 0:
        start, end = boundaries[k - 1], boundaries[k]
        expected = hashes[k - 1]
        if expected == _UNCHECKED or hash(storage.read_range(rel, start, end)[:-1]) == expected:
            return k
        k -= 1
    return 0
