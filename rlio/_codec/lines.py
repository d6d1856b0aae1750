"""Bounded JSONL line readers: forward over a stream, backward over ``Storage.read_range``.

The only code in rlio that finds line boundaries in a JSONL file. Every reader is bounded: a line
of ``max_line`` bytes or more (not counting its newline) is passed over in chunks and reported as
too long (its bytes are ``None``), so memory stays flat whatever a file holds.

- ``ForwardLines``: the lines of a binary stream with their 1-based numbers (validator, report).
- ``backward_lines``: the lines of a file from its end, in growing chunks (resume, torn tails).
- ``count_newlines``: the newlines before an offset (the line numbers resume reports lazily).
- ``next_line_start``: the first line boundary at or after an offset (the validator's split).

Decoding a line is ``rlio._codec.jsonl``'s job; these readers only cut bytes into lines.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Final, Protocol

__all__ = [
    "MAX_LINE",
    "MAX_TAIL_LINE",
    "BackwardLine",
    "ForwardLines",
    "NumberedLine",
    "Ranged",
    "backward_lines",
    "count_newlines",
    "next_line_start",
]

#: The longest JSONL line rlio parses reading forward (validator, report): a longer one is
#: reported and skipped unread, so memory stays flat.
MAX_LINE: Final = 64 << 20
#: The longest line read backward from a file's end (resume, torn-tail repair).
MAX_TAIL_LINE: Final = 16 << 20
#: Forward reads of a stream without a bounded ``readline`` take this many bytes at a time.
_READ_CHUNK = 1 << 20
#: Backward reads start with this many bytes and double (up to ``_MAX_CHUNK``) for long lines.
_CHUNK = 64 << 10
_MAX_CHUNK = 4 << 20
#: Chunk size of the forward newline count.
_COUNT_CHUNK = 1 << 20
#: Chunk size of the search for the next line boundary.
_SCAN_CHUNK = 64 << 10


class Ranged(Protocol):
    """What the storage readers need of a ``rlio.storage.base.Storage`` (``_codec`` imports no
    storage)."""

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of ``rel``."""

    def open_read(self, rel: str) -> BinaryIO:
        """``rel`` as a binary stream."""


#: ``(number, line, terminated)``: the 1-based line number; the line's bytes with their ``\\n``
#: (``None`` when too long); whether it ends with a newline (only a file's last line may not).
NumberedLine = tuple[int, bytes | None, bool]


class ForwardLines:
    """The lines of a binary stream from its current position, each held at most once in memory.

    Iterating yields a ``NumberedLine`` per line. A line of ``max_line`` bytes or more (newline not
    counted) is read on to its end in ``max_line`` pieces, none kept, and yielded with bytes
    ``None``. After the iteration ends, ``offset`` is the number of bytes consumed.

    Args:
        stream: a binary stream with ``read(n)``; a buffered reader's own ``readline(limit)`` is
            used when it has one (the fast path), else a chunked one.
        max_line: the length bound: a line with this many bytes or more before its newline is
            too long.
        limit: stop once this many bytes are consumed (a byte range ending on a line boundary).
        first: the number given to the first line (a stream read on from an earlier offset).
    """

    __slots__ = ("_end", "_first", "_max_line", "_readline", "offset")

    def __init__(self, stream: BinaryIO, *, max_line: int, limit: int | None = None,
                 first: int = 1) -> None:
        if max_line < 1:
            raise ValueError(f"max_line must be at least 1 byte, got {max_line}")
        self._readline = _bounded_readline(stream)
        self._max_line = max_line
        self._end = sys.maxsize if limit is None else limit
        self._first = first
        self.offset = 0

    def __iter__(self) -> Iterator[NumberedLine]:
        readline = self._readline
        max_line = self._max_line
        end = self._end
        number = self._first - 1
        pos = 0
        try:
            while pos < end:
                line = readline(max_line)
                if not line:
                    break
                number += 1
                pos += len(line)
                if line[-1] == 10:
                    yield number, line, True
                elif len(line) < max_line:
                    yield number, line, False  # the stream's unterminated last line
                else:
                    skipped, terminated = _skip_rest(readline, max_line)
                    pos += skipped
                    yield number, None, terminated
        finally:
            self.offset = pos


def _skip_rest(readline: Callable[[int], bytes], max_line: int) -> tuple[int, bool]:
    """Read past the rest of a too-long line: (bytes skipped, whether a newline ended it)."""
    skipped = 0
    while True:
        piece = readline(max_line)
        skipped += len(piece)
        if not piece:
            return skipped, False
        if piece[-1] == 10:
            return skipped, True


def _bounded_readline(stream: BinaryIO) -> Callable[[int], bytes]:
    """A ``readline(limit)``: the stream's own when it is a buffered reader (fast, in C), else a
    chunked one (fsspec files have ``readline()`` without a size argument)."""
    if isinstance(stream, io.BufferedIOBase):
        return stream.readline
    return _ChunkedReadline(stream).readline


class _ChunkedReadline:
    """``readline(limit)`` over any stream with ``read(n)``, holding at most one chunk extra."""

    __slots__ = ("_buf", "_pos", "_stream")

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._buf = b""
        self._pos = 0

    def readline(self, limit: int) -> bytes:
        """The next line with its newline, at most ``limit`` bytes; ``b""`` at the end."""
        while True:
            i = self._buf.find(b"\n", self._pos, self._pos + limit)
            if i >= 0:
                line = self._buf[self._pos:i + 1]
                self._pos = i + 1
                return line
            if len(self._buf) - self._pos >= limit:
                line = self._buf[self._pos:self._pos + limit]
                self._pos += limit
                return line
            chunk = self._stream.read(_READ_CHUNK)
            if not chunk:
                line = self._buf[self._pos:]
                self._buf, self._pos = b"", 0
                return line
            self._buf = self._buf[self._pos:] + chunk
            self._pos = 0


@dataclass(frozen=True, slots=True)
class BackwardLine:
    """One line read from the end of a file.

    Attributes:
        start: file offset of its first byte.
        data: its bytes without the newline, or None when too long (not held).
        terminated: whether a newline ends it (only the file's last line may lack one).
    """

    start: int
    data: bytes | None
    terminated: bool


def backward_lines(
    storage: Ranged, rel: str, size: int, *, max_line: int, chunk: int | None = None,
    max_chunk: int | None = None,
) -> Iterator[BackwardLine]:
    """The lines of ``rel[:size]`` from the last to the first.

    Reads ``chunk`` bytes (64 KiB) from the end, doubling the read up to ``max_chunk`` (4 MiB)
    while a line has not been found whole, so a line costs time in proportion to its length and
    the common case (short lines at the end) one small read. Holds at most one line plus one chunk:
    once ``max_line`` bytes of a line (newline not counted) are in hand its start is found by
    scanning back ``max_chunk`` bytes at a time, and it is yielded with ``data=None``.

    Args:
        storage: where the file is.
        rel: the file, relative to the storage root.
        size: the file's size (the bytes after it are not read).
        max_line: the length bound, in bytes, newline not counted; a line this long or longer is
            too long.
        chunk: the first read's size (default 64 KiB).
        max_chunk: the largest read (default 4 MiB).
    """
    first = chunk or _CHUNK
    biggest = max(first, max_chunk or _MAX_CHUNK)
    if size <= 0:
        return
    pos = max(0, size - first)
    data = storage.read_range(rel, pos, size)
    terminated = data.endswith(b"\n")
    end = size - 1 if terminated else size  # file offset just past the current line's content
    step = first
    while True:
        idx = data.rfind(b"\n", 0, end - pos)
        too_long = False
        while idx < 0 and pos > 0:
            if end - pos >= max_line:
                too_long = True
                data, pos = _skip_back(storage, rel, pos, biggest)
                idx = data.rfind(b"\n")
                break
            n = min(step, pos)
            step = min(step * 2, biggest)
            data = storage.read_range(rel, pos - n, pos) + data[: end - pos]
            pos -= n
            idx = data.rfind(b"\n", 0, end - pos)
        start = pos + idx + 1
        if too_long or end - start >= max_line:
            yield BackwardLine(start, None, terminated)
        else:
            yield BackwardLine(start, data[idx + 1 : end - pos], terminated)
        if start == 0:
            return
        end, terminated, step = start - 1, True, first


def _skip_back(storage: Ranged, rel: str, pos: int, step: int) -> tuple[bytes, int]:
    """Read backwards from ``pos`` until a chunk holds a newline; returns (chunk, its offset)."""
    while pos > 0:
        n = min(step, pos)
        data = storage.read_range(rel, pos - n, pos)
        pos -= n
        if b"\n" in data:
            return data, pos
    return b"", 0


def count_newlines(storage: Ranged, rel: str, end: int) -> int:
    """Newlines in ``rel[:end]``, counted forward in 1 MiB chunks (flat memory, O(end) time).

    One plus this count is the 1-based number of the line starting at ``end``.
    """
    if end <= 0:
        return 0
    count = 0
    remaining = end
    with storage.open_read(rel) as f:
        while remaining > 0:
            block = f.read(min(_COUNT_CHUNK, remaining))
            if not block:
                break
            count += block.count(b"\n")
            remaining -= len(block)
    return count


def next_line_start(storage: Ranged, rel: str, offset: int, size: int) -> int:
    """The offset just past the first newline at or after ``offset`` in ``rel[:size]``, else
    ``size``: where the first line starting after ``offset`` begins."""
    while offset < size:
        block = storage.read_range(rel, offset, min(size, offset + _SCAN_CHUNK))
        if not block:
            return size
        i = block.find(b"\n")
        if i >= 0:
            return offset + i + 1
        offset += len(block)
    return min(offset, size)
