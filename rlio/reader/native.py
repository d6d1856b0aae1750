"""The fast path of the frames: a JSONL file read whole by pyarrow's JSON reader.

``Table`` (``rlio.reader.table``) builds columns in Python, one value at a time: exact, but
several times slower than parsing. pyarrow's reader parses in C++ on every core and, unlike
polars' and DuckDB's readers, adds a column for a key first seen late in the file (it infers the
type of every key in every block, not only of a prefix). ``read_table`` returns its table only
when it is exactly what the Python path would build a frame from, and None otherwise, so the
caller falls back to that path:

- the torn last line (no final newline) is never given to the reader;
- every line must give exactly one row: a blank line (the Python path skips it) or two objects
  on one line make the row count differ from the line count;
- a line the reader refuses (not JSON, not an object, a key twice in one object, a number and a
  string under one key) makes it refuse the file;
- every column must be a number, a boolean, a string or always null (lists and nested objects
  are left to the Python path), and strings valid UTF-8.

``NaN``/``Infinity`` tokens are read as floats, as the Python path reads them. Without pyarrow
(``pip install 'rlio[pandas]'`` or ``'rlio[polars]'`` bring it) there is no fast path.

Inferring types costs the reader more than parsing, so the keys of the file's first and last
lines (parsed here, a few hundred each) are given to it with their types; a key seen only in the
middle is still inferred. A hint the middle contradicts (an int key holding a float there) makes
the reader refuse, and the file is read again with nothing given.
"""

from __future__ import annotations

import importlib
import io
import itertools
from collections.abc import Iterable
from typing import Any

from rlio._codec.lines import MAX_LINE, ForwardLines, backward_lines
from rlio.reader.source import decode_line
from rlio.storage.base import Storage

__all__ = ["read_table"]

#: The reader's block: a line longer than this makes it refuse the file (the Python path then
#: reads it, skipping lines over ``MAX_LINE``).
_BLOCK = 4 << 20
_SCALARS = frozenset({"int64", "double", "bool", "string", "null"})
#: Lines parsed at each end of the file for the type hints.
_SAMPLE = 200
_TYPES = {int: "int64", float: "float64", bool: "bool_", str: "string"}


def _pyarrow() -> tuple[Any, Any, Any] | None:
    """pyarrow, its JSON reader and its compute functions, or None without pyarrow."""
    try:
        return tuple(importlib.import_module(m)  # type: ignore[return-value]
                     for m in ("pyarrow", "pyarrow.json", "pyarrow.compute"))
    except ImportError:
        return None


class _Prefix(io.RawIOBase):
    """The first ``limit`` bytes of a stream, counting their newlines as they are read."""

    def __init__(self, stream: Any, limit: int) -> None:
        super().__init__()
        self._stream, self._left, self.newlines = stream, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._left)
        if want <= 0:
            return 0
        chunk = self._stream.read(want)
        n = len(chunk)
        view[:n] = chunk
        self._left -= n
        self.newlines += chunk.count(b"\n")
        return n


def complete_end(storage: Storage, rel: str, size: int) -> int:
    """The offset just past the last newline of ``rel[:size]`` (0 when there is none)."""
    for line in backward_lines(storage, rel, size, max_line=MAX_LINE):
        return size if line.terminated else line.start
    return 0


def _hints(records: Iterable[dict[str, Any] | None]) -> dict[str, str | None]:
    """Each key of ``records`` in first-seen order with its one type (a ``pyarrow`` type
    factory's name), or None when its values there are all null or do not share one type."""
    hints: dict[str, str | None] = {}
    mixed: set[str] = set()
    for rec in records:
        for key, value in (rec or {}).items():
            old = hints.setdefault(key, None)
            if value is None or key in mixed:
                continue
            kind = _TYPES.get(type(value))
            if old is None or old == kind:
                hints[key] = kind
            elif {old, kind} == {"int64", "float64"}:
                hints[key] = "float64"
            else:
                kind = None
            if kind is None:
                mixed.add(key)
                hints[key] = None
    return hints


def _sample(storage: Storage, rel: str, end: int) -> tuple[list[str], dict[str, str | None]]:
    """The keys of the first ``_SAMPLE`` lines in first-seen order, and the type hints of those
    and of the last ``_SAMPLE`` complete lines."""
    with storage.open_read(rel) as f:
        head = [decode_line(raw) for _, raw, ok in
                itertools.islice(ForwardLines(f, max_line=MAX_LINE, limit=end), _SAMPLE) if ok]
    tail = [decode_line(line.data) for line in
            itertools.islice(backward_lines(storage, rel, end, max_line=MAX_LINE), _SAMPLE)]
    head_hints = _hints(head)
    hints = _hints(head + tail[::-1])
    return list(head_hints), hints


def _read(pa: Any, pj: Any, storage: Storage, rel: str, end: int, schema: Any) -> Any | None:
    """One read of ``rel[:end]`` with ``schema`` given, or None when refused or not one row per
    line."""
    with storage.open_read(rel) as f:
        prefix = _Prefix(f, end)
        try:
            table = pj.read_json(
                io.BufferedReader(prefix, 1 << 20),
                read_options=pj.ReadOptions(block_size=_BLOCK),
                parse_options=pj.ParseOptions(explicit_schema=schema,
                                              unexpected_field_behavior="infer"))
            table.validate(full=True)
        except (pa.ArrowException, ValueError, UnicodeError, OverflowError):
            return None
    if table.num_rows != prefix.newlines:
        return None
    return table


def _first_seen(pc: Any, table: Any, head: list[str]) -> Any:
    """``table``'s columns in first-seen order: the head's keys in their order, then the others
    by the first row holding a value."""
    names = table.column_names
    known = set(head)
    rest = [n for n in names if n not in known]

    def first_row(name: str) -> int:
        col = table.column(name)
        index = pc.index(col.is_valid(), True).as_py() if col.null_count < len(col) else -1
        return index if index >= 0 else len(col)

    rest.sort(key=first_row)
    present = set(names)
    order = [n for n in head if n in present] + rest
    return table if order == names else table.select(order)


def read_table(storage: Storage, rel: str) -> Any | None:
    """JSONL file ``rel`` as a ``pyarrow.Table`` (one row per line, one column per key ever
    seen, in first-seen order), or None when the Python path must read it (see the module
    docstring)."""
    libs = _pyarrow()
    entry = storage.stat(rel)
    if libs is None or entry is None or entry.kind != "file":
        return None
    pa, pj, pc = libs
    end = complete_end(storage, rel, entry.size)
    if end == 0:
        return None
    head, hints = _sample(storage, rel, end)
    schema = pa.schema([(k, getattr(pa, t)()) for k, t in hints.items() if t is not None])
    table = _read(pa, pj, storage, rel, end, schema)
    if table is None and len(schema):
        table = _read(pa, pj, storage, rel, end, None)
    if table is None or any(str(field.type) not in _SCALARS for field in table.schema):
        return None
    return _first_seen(pc, table, head)
