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
  re-logged lines identical to the ones they replace. Sidecars only grow: one read smaller than
  before was read while the run was away (moved away and back within the look), so the look is
  made again rather than taken for a move.
- The cookbook's own rewind (``TrainingRunStore.truncate_metrics(from_step)``) rewrites
  ``metrics.jsonl`` without a sidecar of rlio's but keeps the original as
  ``metrics.jsonl.pre_resume_NNNNNN``: when the file is found shorter than what was read, a new
  or grown such copy puts the cut at the first line read whose ``step`` is at least ``NNNNNN``
  (so re-logged lines identical to the dropped ones are yielded again too).
- Bytes read are used only when the sidecars did not grow since the look (checked after each
  read): a file rewound and rewritten while a look reads it is never glued from both versions.
- At every look the last line read must still be in place (each line's hash is kept); when it
  is not, reading goes on from the last line boundary at or before the end whose line still is.

Either way the lines from the cut on are yielded again as they come: every record once. What no
follower can tell is a rewind that leaves no trace (no sidecar, no ``pre_resume`` copy) and is
regrown with the very bytes it cut before the next look: that reads as a file left as it was.
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
#: The step kept for a line without an integer ``step``.
_NO_STEP = -1
#: The cookbook's copy of ``metrics.jsonl`` before its own rewind: ``<name><NNNNNN>``.
_PRE_RESUME = ".pre_resume_"


class _Read:
    """What was read of one file: line boundaries, each line's hash and step, the sidecars'
    sizes and the cookbook's ``pre_resume`` copies as last seen."""

    def __init__(self, storage: Storage, rel: str) -> None:
        self.storage, self.rel = storage, rel
        self.boundaries = array("q", [0])  # offsets where read lines start, ascending
        self.hashes = array("q")  # hashes[i]: hash of the line from boundaries[i] to [i + 1]
        self.steps = array("q")  # steps[i]: its integer step, or _NO_STEP
        self.sides = [rel + layout.SUPERSEDED_SUFFIX, rel + layout.TORN_SUFFIX]
        self.side_sizes = self.sidecar_sizes()
        self.copies = self.pre_resume_copies() if rel == layout.METRICS else None

    def sidecar_sizes(self) -> list[int]:
        return [_size(self.storage, side) for side in self.sides]

    def pre_resume_copies(self) -> dict[str, int]:
        """``{name: size}`` of the ``<rel>.pre_resume_NNNNNN`` files (one listing)."""
        head = self.rel + _PRE_RESUME
        try:
            return {e.path: e.size for e in self.storage.walk()
                    if e.path.startswith(head) and e.path[len(head):].isdigit()}
        except OSError:
            return {}

    def add(self, end: int, line_hash: int, step: int) -> None:
        self.boundaries.append(end)
        self.hashes.append(line_hash)
        self.steps.append(step)

    def take(self, lines: list[bytes]) -> Iterator[dict[str, Any]]:
        """Note each complete line read (its end, hash and step); yield the objects."""
        offset = self.boundaries[-1]
        for line in lines:
            offset += len(line) + 1
            value = decode_line(line if len(line) < MAX_LINE else None)
            self.add(offset, hash(line), _step(value))
            if value is not None:
                yield value

    def cut_to(self, keep: int) -> int:
        """Forget the lines from ``keep`` on; the offset to read on from."""
        del self.boundaries[keep + 1:]
        del self.hashes[keep:]
        del self.steps[keep:]
        return self.boundaries[keep]


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
    seen = _Read(storage, rel)
    pending = b""  # bytes read past the last newline (an unfinished line)
    last_new = clock()
    last_size = -1
    while True:
        entry = storage.stat(rel)
        size = entry.size if entry is not None and entry.kind == "file" else 0
        if offset < 0:
            offset = size if entry is not None else 0
            seen.boundaries[0] = offset
        if not seen.hashes and not pending:  # nothing read yet: no cut to find, only sizes
            seen.side_sizes = seen.sidecar_sizes()
        elif entry is not None:  # (a file gone for now, its run moved away and back, is
            # waited for: what was read of it is judged when it is back)
            looked = _rewound(seen, max(last_size, offset))
            if looked is None:  # a tail move under way, or the run away during the look
                sleep(poll)
                continue
            size, cut = looked
            if cut is not None:
                offset, pending = cut, b""
        last_size = size
        read_to = offset + len(pending)
        if size < read_to:  # the unfinished line was cut away
            pending, read_to = b"", offset
        got = False
        while read_to < size:
            data = _read(storage, rel, read_to, min(size, read_to + _CHUNK))
            if not data or seen.sidecar_sizes() != seen.side_sizes:
                break  # (a tail move since the look: these bytes may be of the rewritten
                # file, at offsets of the old one; the next look finds the cut first)
            read_to += len(data)
            pending += data
            *lines, pending = pending.split(b"\n")
            for value in seen.take(lines):
                got = True
                yield value
            offset = seen.boundaries[-1]
            if len(pending) >= MAX_LINE:  # an over-long line: pass it over unread
                offset += len(pending)
                seen.add(offset, _UNCHECKED, _NO_STEP)  # a piece of a line: taken as in place
                pending = b""
        if got:
            last_new = clock()
        elif idle_timeout is not None and clock() - last_new >= idle_timeout:
            return
        sleep(poll)


def _step(value: dict[str, Any] | None) -> int:
    step = value.get("step") if value is not None else None
    return step if type(step) is int and 0 <= step < 1 << 62 else _NO_STEP


def _read(storage: Storage, rel: str, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``rel``; none when it is gone for now (its run moved away)."""
    try:
        return storage.read_range(rel, start, end)
    except FileNotFoundError:
        return b""


def _rewound(seen: _Read, seen_size: int) -> tuple[int, int | None] | None:
    """The file's size and, when it was rewound, the offset to read on from (the last line
    still in place; after a tail move the unfinished line read may be gone: read it again, so
    the caller drops it); None: look again later (``_look``)."""
    looked = _look(seen, seen_size)
    if looked is None:
        return None
    size, keep, moved = looked
    return size, (seen.cut_to(keep) if keep < len(seen.hashes) or moved else None)


def _look(seen: _Read, seen_size: int) -> tuple[int, int, bool] | None:
    """The file's size, how many lines read are kept (``_kept``) and whether a tail move was
    seen; None while a tail move of it is under way, or when the run was away during the look
    (the file gone since the caller saw it, or a sidecar read smaller than before: a size of 0
    would drop every line read, a sidecar read as absent and then back would look like a move).
    The sidecars are looked at first: a move seen there has made its cut by the time the file
    is looked at."""
    storage, rel = seen.storage, seen.rel
    grown = seen.sidecar_sizes()
    if storage.tail_moving(rel):
        return None
    entry = storage.stat(rel)  # the caller saw it just before the sidecars: both in place,
    if entry is None:  # or the run moved away meanwhile (sidecars and file read as absent)
        return None
    if any(g < s for g, s in zip(grown, seen.side_sizes, strict=True)):
        again = seen.sidecar_sizes()  # read with the file in place: a sidecar removed for good
        if again != grown:  # is smaller both times; one read while the run was away is not
            return None
        seen.side_sizes = [min(g, s) for g, s in zip(grown, seen.side_sizes, strict=True)]
    size = entry.size if entry.kind == "file" else 0
    moved = grown != seen.side_sizes
    return size, _kept(seen, grown, size, seen_size), moved


def _kept(seen: _Read, grown: list[int], size: int, seen_size: int) -> int:
    """How many of the lines read are still in place: before the cut of any tail move since
    the last look (the sidecars' sizes were ``seen.side_sizes``, now ``grown``; updated), before
    the cut of a cookbook rewind when the file is shorter than what was read, and each still
    the bytes read there."""
    keep = len(seen.hashes)
    storage, rel = seen.storage, seen.rel
    try:
        for k, side in enumerate(seen.sides):
            if grown[k] > seen.side_sizes[k]:  # a tail move: find its cut
                keep = min(keep, _moved_from(storage, side, seen.side_sizes[k], grown[k],
                                             seen.boundaries, seen.hashes, seen_size))
        if seen.copies is not None and seen.hashes and size < seen.boundaries[-1]:
            keep = min(keep, _rewound_from(seen))
        keep = min(keep, _still_there(storage, rel, seen.boundaries, seen.hashes, size))
    except FileNotFoundError:  # moved away meanwhile: judged again at the next look
        return len(seen.hashes)
    seen.side_sizes = grown
    return keep


def _rewound_from(seen: _Read) -> int:
    """How many of the lines read precede the cut of a cookbook rewind: the lines before the
    first whose step is at least the ``from_step`` of a ``pre_resume`` copy new or grown since
    the last listing (all of them when there is none)."""
    copies = seen.pre_resume_copies()
    fresh = [int(name.rpartition(_PRE_RESUME)[2]) for name, n in copies.items()
             if n != (seen.copies or {}).get(name) and _holds_last_read(seen, name)]
    seen.copies = copies
    if not fresh:
        return len(seen.hashes)
    from_step = min(fresh)
    return next((i for i, s in enumerate(seen.steps) if s >= from_step), len(seen.hashes))


def _holds_last_read(seen: _Read, copy: str) -> bool:
    """Whether the copy ``copy`` holds the last line read where it was read: it was taken
    after that read, so it is of the rewind just found (not of an earlier one)."""
    start, end = seen.boundaries[-2], seen.boundaries[-1]
    last = seen.hashes[-1]
    return last == _UNCHECKED or hash(seen.storage.read_range(copy, start, end)[:-1]) == last


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
