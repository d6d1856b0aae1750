"""A seekable raw stream over a remote file's first bytes, read by ranged requests (the
object stores' ``open_read``: gs://, s3://, az://)."""

from __future__ import annotations

import errno
import io
from collections.abc import Callable
from typing import Any


class RangeReader(io.RawIOBase):
    """The first ``size`` bytes of one remote file. ``first`` holds bytes already fetched from
    offset 0; ``fetch(start, end)`` reads the rest, pinned to the version first seen when the
    backend pins it: a ``FileNotFoundError`` or ``FileExistsError`` from it (that version is
    gone) is a replacement in the middle of a read, an error, never a mix of two versions."""

    def __init__(self, fetch: Callable[[int, int], bytes], first: bytes, size: int,
                 display: str, noun: str = "object") -> None:
        self._fetch, self._first, self._size, self._pos = fetch, first, size, 0
        self._display, self._noun = display, noun

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self._size - self._pos)
        if n <= 0:
            return 0
        if self._pos < len(self._first):
            data = self._first[self._pos: self._pos + n]
        else:
            try:
                data = self._fetch(self._pos, self._pos + n)
            except (FileNotFoundError, FileExistsError):
                raise OSError(errno.ESTALE, f"the {self._noun} was replaced while it was being "
                              "read", self._display) from None
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)
