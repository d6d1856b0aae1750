"""rlio._codec.lines: the bounded forward and backward JSONL line readers."""

from __future__ import annotations

import io
import tracemalloc
from typing import BinaryIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio._codec.lines import (
    BackwardLine,
    ForwardLines,
    backward_lines,
    count_newlines,
    next_line_start,
)

_DATA = st.lists(
    st.one_of(st.binary(max_size=30), st.sampled_from([b"", b"\n", b"\r\n", b"x" * 90])),
    max_size=20,
).map(b"".join)


def _split(data: bytes) -> list[tuple[int, bytes, bool]]:
    """The reference: ``(start, line without newline, terminated)`` per line, by ``bytes.split``."""
    if not data:
        return []
    parts = data.split(b"\n")
    if data.endswith(b"\n"):
        parts = parts[:-1]
    out, start = [], 0
    for i, part in enumerate(parts):
        out.append((start, part, i < len(parts) - 1 or data.endswith(b"\n")))
        start += len(part) + 1
    return out


class Trickle(io.RawIOBase):
    """A stream that is not a buffered reader and returns at most ``step`` bytes per read."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = data
        self._pos = 0
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        out = self._data[self._pos:self._pos + min(len(buf), self._step)]
        buf[:len(out)] = out
        self._pos += len(out)
        return len(out)


class Bytes:
    """A storage over one in-memory file that records the size of every read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads: list[int] = []

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        self.reads.append(max(0, end - start))
        return self.data[start:end]

    def open_read(self, rel: str) -> BinaryIO:
        return io.BytesIO(self.data)


def _forward(stream: BinaryIO, max_line: int) -> list[tuple[int, bytes | None, bool]]:
    return list(ForwardLines(stream, max_line=max_line))


def _streams(data: bytes, step: int) -> list[BinaryIO]:
    """The same bytes as a BytesIO, a small-buffered reader and a trickling raw stream."""
    return [io.BytesIO(data), io.BufferedReader(Trickle(data, step), buffer_size=step),
            Trickle(data, step)]  # type: ignore[list-item]


@settings(max_examples=300)
@given(data=_DATA, step=st.integers(1, 40))
def test_forward_lines_are_bytes_split(data: bytes, step: int) -> None:
    """Forward reading gives the lines of bytes.split, numbered from 1, newline kept, the
    unterminated last line flagged, whatever the stream's read size."""
    want = [(i + 1, part + (b"\n" if term else b""), term)
            for i, (_, part, term) in enumerate(_split(data))]
    for stream in _streams(data, step):
        reader = ForwardLines(stream, max_line=1 << 20)
        assert list(reader) == want
        assert reader.offset == len(data)


@settings(max_examples=300)
@given(data=_DATA, chunk=st.integers(1, 40), grow=st.integers(1, 8))
def test_backward_lines_are_bytes_split_reversed(data: bytes, chunk: int, grow: int) -> None:
    """Backward reading gives the lines of bytes.split, last first, with their start offsets,
    for any first and largest read size."""
    storage = Bytes(data)
    got = list(backward_lines(storage, "f", len(data), max_line=1 << 20, chunk=chunk,
                              max_chunk=chunk * grow))
    assert [(s.start, s.data, s.terminated) for s in got] == _split(data)[::-1]
    assert max(storage.reads, default=0) <= chunk * grow


@settings(max_examples=300)
@given(data=_DATA, max_line=st.integers(1, 50), chunk=st.integers(1, 40),
       grow=st.integers(1, 8), step=st.integers(1, 40))
def test_too_long_lines_are_flagged_alike_forward_and_backward(
    data: bytes, max_line: int, chunk: int, grow: int, step: int
) -> None:
    """Both readers flag exactly the lines of max_line bytes or more (newline not counted) as too
    long, keep every other line, and never read more than their largest chunk at once."""
    ref = _split(data)
    want_forward = [(i + 1, None if len(part) >= max_line else part + (b"\n" if term else b""),
                     term) for i, (_, part, term) in enumerate(ref)]
    for stream in _streams(data, step):
        assert _forward(stream, max_line) == want_forward
    storage = Bytes(data)
    got = list(backward_lines(storage, "f", len(data), max_line=max_line, chunk=chunk,
                              max_chunk=chunk * grow))
    want_backward = [BackwardLine(start, None if len(part) >= max_line else part, term)
                     for start, part, term in ref]
    assert got == want_backward[::-1]
    assert max(storage.reads, default=0) <= chunk * grow


def test_forward_line_of_exactly_the_bound_is_too_long() -> None:
    """A line whose bytes before the newline reach max_line is too long; one byte less is read,
    and the lines after a too-long one keep their numbers."""
    data = b"abcd\nabc\nabcdefgh\nz"
    assert _forward(io.BytesIO(data), 4) == [(1, None, True), (2, b"abc\n", True),
                                            (3, None, True), (4, b"z", False)]


def test_unterminated_too_long_last_line_is_not_terminated() -> None:
    """A too-long last line without a newline is reported as too long and unterminated."""
    assert _forward(Trickle(b"a\n" + b"x" * 30, 4), 8) == [  # type: ignore[arg-type]
        (1, b"a\n", True), (2, None, False)]


@given(data=_DATA, cut=st.integers(0, 400))
def test_limit_stops_at_the_first_line_ending_at_or_past_it(data: bytes, cut: int) -> None:
    """With a byte limit the reader stops once that many bytes are consumed and says how many."""
    reader = ForwardLines(io.BytesIO(data), max_line=1 << 20, limit=cut)
    got = list(reader)
    consumed = sum(len(line or b"") for _, line, _ in got)
    assert reader.offset == consumed
    assert consumed >= min(cut, len(data))
    assert not got or consumed - len(got[-1][1] or b"") < cut


def test_max_line_must_be_positive() -> None:
    """A bound below one byte is a misuse and raises ValueError naming it."""
    with pytest.raises(ValueError, match="max_line must be at least 1 byte, got 0"):
        ForwardLines(io.BytesIO(b""), max_line=0)


@given(data=_DATA, end=st.integers(0, 500))
def test_count_newlines_counts_the_bytes_before_end(data: bytes, end: int) -> None:
    """count_newlines is the number of newlines in the first ``end`` bytes."""
    assert count_newlines(Bytes(data), "f", end) == data[:end].count(b"\n")


@given(data=_DATA, offset=st.integers(0, 500))
def test_next_line_start_is_just_past_the_next_newline(data: bytes, offset: int) -> None:
    """next_line_start is one past the first newline at or after the offset, else the size."""
    i = data.find(b"\n", offset)
    want = len(data) if i < 0 or offset >= len(data) else i + 1
    assert next_line_start(Bytes(data), "f", offset, len(data)) == want


class HugeLine(io.RawIOBase):
    """A stream of ``size`` bytes of ``x`` then ``tail``, made as it is read (never held)."""

    def __init__(self, size: int, tail: bytes) -> None:
        self._left = size
        self._tail = tail

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._left:
            n = min(len(buf), self._left)
            buf[:n] = b"x" * n
            self._left -= n
            return n
        n = min(len(buf), len(self._tail))
        buf[:n] = self._tail[:n]
        self._tail = self._tail[n:]
        return n


class HugeFile:
    """A storage whose one file is ``head``, ``size`` bytes of ``x`` and ``tail``, made on read."""

    def __init__(self, head: bytes, size: int, tail: bytes) -> None:
        self.head, self.size, self.tail = head, size, tail
        self.length = len(head) + size + len(tail)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        end = min(end, self.length)
        out = []
        a, b = len(self.head), len(self.head) + self.size
        if start < a:
            out.append(self.head[start:min(end, a)])
        if end > a and start < b:
            out.append(b"x" * (min(end, b) - max(start, a)))
        if end > b:
            out.append(self.tail[max(0, start - b):end - b])
        return b"".join(out)

    def open_read(self, rel: str) -> BinaryIO:
        raise AssertionError("a backward reader reads ranges only")


def test_forward_too_long_line_costs_bounded_memory() -> None:
    """A 64 MiB line is passed over holding a few times the 1 MiB bound, not the line."""
    stream = io.BufferedReader(HugeLine(64 << 20, b'\n{"a": 1}\n'), buffer_size=1 << 16)
    tracemalloc.start()
    try:
        got = list(ForwardLines(stream, max_line=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == [(1, None, True), (2, b'{"a": 1}\n', True)]
    assert peak < 8 << 20


def test_backward_too_long_line_costs_bounded_memory() -> None:
    """Reading a 64 MiB line backwards holds about the bound plus one chunk, and finds its start."""
    storage = HugeFile(b'{"a": 1}\n', 64 << 20, b'\n{"b": 2}\n')
    tracemalloc.start()
    try:
        got = list(backward_lines(storage, "f", storage.length, max_line=1 << 20,
                                  chunk=1 << 16, max_chunk=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == [BackwardLine(storage.length - 9, b'{"b": 2}', True),
                   BackwardLine(9, None, True), BackwardLine(0, b'{"a": 1}', True)]
    assert peak < 8 << 20
