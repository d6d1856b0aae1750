"""Tail a JSONL file a live run appends to, yielding each complete new line once.

Poll-based (works the same on a local disk and on ``gs://``): at each look the file's size is
compared with the offset read so far and only the bytes in between are read. Only lines that end
with a newline are decoded; the bytes after the last newline (a line being written, or a crash's
torn tail) wait for the next look and are never yielded half.

Rewinds are found by identity and content, not by size alone (a resume moves superseded lines
or a torn tail aside, and the restart may regrow the file to its old size, or past it):

- A tail move appends the bytes it moves to a sidecar (``<file>.superseded``, ``<file>.torn``)
  before it cuts the file (a look while it is under way, ``Storage.tail_moving``, waits for the
  cut), so a grown sidecar says where the cut was: at the first line read
  since ``previous size - bytes moved`` that equals the sidecar's first new line. This catches
  re-logged lines identical to the ones they replace.
- At every look the last line read must still be in place (each line's hash is kept); when it
  is not, reading goes on from the last line boundary at or before the end whose line still is.

Either way the lines from the cut on are yielded again as they come: every record once.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

from rlio import layout
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
    sides = [rel + layout.SUPERSEDED_SUFFIX, rel + layout.TORN_SUFFIX]
    side_sizes = [_size(storage, side) for side in sides]
    while True:
        entry = storage.stat(rel)
        size = entry.size if entry is not None and entry.kind == "file" else 0
        if offset < 0:
            offset = size if entry is not None else 0
            boundaries[0] = offset
        if hashes and entry is not None:  # (a file gone for now, its run moved away and
            # back, is waited for: what was read of it is judged when it is back)
            looked = _look(storage, rel, sides, side_sizes, boundaries, hashes,
                           max(last_size, offset))
            if looked is None:  # a tail move under way: its sidecar may hold bytes not yet cut
                sleep(poll)
                continue
            size, keep, moved = looked
            if keep < len(hashes) or moved:  # rewound: go on from the last line still in
                # place (after a move, the unfinished line read may be gone: read it again)
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
            data = _read(storage, rel, read_to, min(size, read_to + _CHUNK))
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


def _read(storage: Storage, rel: str, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``rel``; none when it is gone for now (its run moved away)."""
    try:
        return storage.read_range(rel, start, end)
    except FileNotFoundError:
        return b""


def _look(storage: Storage, rel: str, sides: list[str], side_sizes: list[int],
          boundaries: array[int], hashes: array[int],
          seen_size: int) -> tuple[int, int, bool] | None:
    """The file's size, how many lines read are kept (``_kept``) and whether a tail move was
    seen; None while a tail move of it is under way, or when the file went away since the
    caller saw it (its run moved away for now: a sidecar read then as absent is no move, and
    a size of 0 would drop every line read). The sidecars are looked at first: a move seen
    there has made its cut by the time the file is looked at."""
    grown = [_size(storage, side) for side in sides]
    if storage.tail_moving(rel):
        return None
    entry = storage.stat(rel)  # the caller saw it just before the sidecars: both in place,
    if entry is None:  # or the run moved away meanwhile (sidecars and file read as absent)
        return None
    size = entry.size if entry.kind == "file" else 0
    moved = grown != side_sizes
    return size, _kept(storage, rel, sides, side_sizes, grown, boundaries, hashes, size,
                       seen_size), moved


def _kept(storage: Storage, rel: str, sides: list[str], side_sizes: list[int],
          grown: list[int], boundaries: array[int], hashes: array[int], size: int,
          seen_size: int) -> int:
    """How many of the lines read are still in place: before the cut of any tail move since
    the last look (the sidecars' sizes were ``side_sizes``, now ``grown``; updated), and each
    still the bytes read there."""
    keep = len(hashes)
    try:
        for k, side in enumerate(sides):
            if grown[k] > side_sizes[k]:  # a tail move: find its cut
                keep = min(keep, _moved_from(storage, side, side_sizes[k], grown[k],
                                             boundaries, hashes, seen_size))
        keep = min(keep, _still_there(storage, rel, boundaries, hashes, size))
    except FileNotFoundError:  # moved away meanwhile: judged again at the next look
        return len(hashes)
    side_sizes[:] = grown
    return keep


def _size(storage: Storage, rel: str) -> int:
    entry = storage.stat(rel)
    return entry.size if entry is not None and entry.kind == "file" else 0


def _moved_from(storage: Storage, side: str, before: int, now: int, boundaries: array[int],
                hashes: array[int], seen_size: int) -> int:
    """How many of the lines read precede the cut of a tail move that appended bytes
    ``[before, now)`` to sidecar ``side`` (all of them when the moved bytes start past them).

    The cut is at ``end - moved`` for a file end ``end >= seen_size`` (a log only grows between
    tail moves), so it is the first line boundary from ``seen_size - moved`` on whose line equals
    the first moved line.
    """
    first = storage.read_range(side, before, min(now, before + MAX_LINE)).split(b"\n", 1)[0]
    target = hash(first)
    i = max(0, bisect_left(boundaries, seen_size - (now - before)))
    while i < len(hashes):
        if hashes[i] == target:
            return i
        i += 1
    return len(hashes)


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
