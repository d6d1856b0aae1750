"""The fast path of the frames: a JSONL file read whole by pyarrow's JSON reader.

``Table`` (``rlio.reader.table``) builds columns in Python, one value at a time: exact, but
several times slower than parsing. pyarrow's reader parses in C++ and, unlike polars' and
DuckDB's readers, adds a column for a key first seen late in the file (it infers the type of
every key in every block, not only of a prefix). A local file without a torn tail is opened by
pyarrow itself and parsed on its threads; any other file (a torn tail to leave out, object
storage) is streamed to it through ``Storage.open_read`` on one thread (with threads, the blocks
read ahead as Python bytes held a third of the file more in memory). ``read_table`` returns its
table only when it is exactly what the Python path would build a frame from, and None
otherwise, so the caller falls back to that path:

- the torn last line (no final newline) is never given to the reader;
- a blank line gives no row, as in the Python path; through a stream, the rows are counted
  against the lines (two objects on one line, which the Python path skips as not JSON, would
  be two rows; pyarrow's own file reads are not counted, and such a line, which no writer
  produces, not even a killed one, would be two rows there);
- a line the reader refuses (not JSON, not an object, a key twice in one object, a number and a
  string under one key) makes it refuse the file;
- every column must be a number, a boolean, a string, always null or a list of those (other
  lists and nested objects are left to the Python path; ``rollout_table`` spreads the objects a
  rollout row spreads), and strings valid UTF-8.

``NaN``/``Infinity`` tokens are read as floats, as the Python path reads them. Without pyarrow
(``pip install 'rlio[pandas]'`` or ``'rlio[polars]'`` bring it) there is no fast path.

The reader infers every column's type (numbers, booleans, lists); only the keys holding strings
in the file's first and last lines (parsed here, a few hundred each) are named to it as strings,
since it would take a string that looks like a date for a timestamp (which sends the file to the
Python path). Numbers are not named: with their types given, the reader spends more CPU
(``docs/benchmarks.md``, issue 31's frames rows).
"""

from __future__ import annotations

import importlib
import io
import itertools
import os
from collections.abc import Iterable
from typing import Any

from rlio._codec.lines import MAX_LINE, ForwardLines, backward_lines
from rlio.reader.source import decode_line
from rlio.reader.table import step_rows, trajectory_rows
from rlio.storage.base import Storage

__all__ = ["read_table", "rollout_table"]

#: The reader's block: a line longer than this makes it refuse the file (the Python path then
#: reads it, skipping lines over ``MAX_LINE``).
_BLOCK = 4 << 20
_SCALARS = frozenset({"int64", "double", "bool", "string", "null"})
#: Lines parsed at each end of the file for the string keys.
_SAMPLE = 200


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


def _strings(records: Iterable[dict[str, Any] | None]) -> list[str]:
    """The keys whose values in ``records`` are all strings or null, with at least one string."""
    kinds: dict[str, set[type]] = {}
    for rec in records:
        for key, value in (rec or {}).items():
            if value is not None:
                kinds.setdefault(key, set()).add(type(value))
    return [key for key, seen in kinds.items() if seen == {str}]


def _sample(storage: Storage, rel: str, end: int) -> tuple[list[str], list[str]]:
    """The keys of the first ``_SAMPLE`` lines in first-seen order, and the string keys of
    those and of the last ``_SAMPLE`` complete lines."""
    with storage.open_read(rel) as f:
        head = [decode_line(raw) for _, raw, ok in
                itertools.islice(ForwardLines(f, max_line=MAX_LINE, limit=end), _SAMPLE) if ok]
    tail = [decode_line(line.data) for line in
            itertools.islice(backward_lines(storage, rel, end, max_line=MAX_LINE), _SAMPLE)]
    keys = dict.fromkeys(key for rec in head for key in (rec or {}))
    return list(keys), _strings(head + tail)


def _local_path(storage: Storage, rel: str, end: int, size: int) -> str | None:
    """The file's own path when pyarrow may open it itself: a local file with no torn tail."""
    from rlio.storage.local import LocalStorage

    if not isinstance(storage, LocalStorage) or end != size:
        return None
    return os.path.join(storage.root, *rel.split("/"))


def _read(pa: Any, pj: Any, storage: Storage, rel: str, end: int, schema: Any,
          path: str | None) -> Any | None:
    """One read of ``rel[:end]`` with ``schema`` given, or None when refused (or, read through
    a stream, not one row per line)."""
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
    try:
        if path is not None:  # pyarrow's own file reads: its threads, no Python buffers
            table = pj.read_json(path, read_options=pj.ReadOptions(block_size=_BLOCK),
                                 parse_options=parse)
            table.validate(full=True)
            return table
        with storage.open_read(rel) as f:
            prefix = _Prefix(f, end)
            table = pj.read_json(
                io.BufferedReader(prefix, 1 << 20),
                read_options=pj.ReadOptions(block_size=_BLOCK, use_threads=False),
                parse_options=parse)
            table.validate(full=True)
    except (pa.ArrowException, ValueError, UnicodeError, OverflowError):
        return None
    return table if table.num_rows == prefix.newlines else None


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


def read_table(storage: Storage, rel: str, *, nested: bool = False) -> Any | None:
    """JSONL file ``rel`` as a ``pyarrow.Table`` (one row per line, one column per key ever
    seen, in first-seen order), or None when the Python path must read it (see the module
    docstring). ``nested``: lists and objects are kept (as pyarrow lists and structs) for the
    caller to flatten."""
    libs = _pyarrow()
    entry = storage.stat(rel)
    if libs is None or entry is None or entry.kind != "file":
        return None
    pa, pj, pc = libs
    end = complete_end(storage, rel, entry.size)
    if end == 0:
        return None
    head, strings = _sample(storage, rel, end)
    schema = pa.schema([(key, pa.string()) for key in strings])
    table = _read(pa, pj, storage, rel, end, schema, _local_path(storage, rel, end, entry.size))
    if table is None or (not nested and not _flat_columns(table)):
        return None
    return _first_seen(pc, table, head)


def _flat_columns(table: Any) -> bool:
    """Whether every column is a scalar, or a list of scalars (a list of lists or objects is
    left to the Python path)."""
    for field in table.schema:
        kind = str(field.type)
        if kind in _SCALARS:
            continue
        value = getattr(field.type, "value_type", None)
        if not kind.startswith("list<") or value is None or str(value) not in _SCALARS:
            return False
    return True


#: The objects spread into ``<name>/<key>`` columns (``rlio.reader.table``'s rows).
_TRAJECTORY_NESTED = ("trajectory_metrics",)
_STEP_NESTED = ("metrics", "logs")
_STEP_HEAD = ("iteration", "split", "group_idx", "traj_idx")


def _spread(pc: Any, names: list[str], columns: list[Any], source: Any,
            nested: tuple[str, ...], skip: str | None) -> bool:
    """Append ``source``'s fields (a table's columns or a struct's children) to ``names`` and
    ``columns`` as ``rlio.reader.table._flat`` spreads a record: each object of ``nested`` as
    ``<name>/<key>``. False when the Python path must build the rows: a nested object that is
    null somewhere (it would be a column of its own there), or a name met twice."""
    fields = list(source.type) if hasattr(source, "type") else list(source.schema)
    for i, field in enumerate(fields):
        if field.name == skip:
            continue
        col = source.field(i) if hasattr(source, "type") else source.column(i)
        if field.name in nested and str(field.type).startswith("struct<"):
            if col.null_count:
                return False
            for j, child in enumerate(field.type):
                names.append(f"{field.name}/{child.name}")
                columns.append(pc.struct_field(col, [j]))
        else:
            names.append(field.name)
            columns.append(col)
    return len(set(names)) == len(names)


def rollout_table(storage: Storage, rel: str, *, steps: bool) -> Any | None:
    """Rollout summary file ``rel`` as the flat table ``rlio.reader.table.trajectory_rows`` (or
    ``step_rows``) would give, natively, or None when the Python path must build it."""
    libs = _pyarrow()
    table = read_table(storage, rel, nested=True)
    if libs is None or table is None:
        return None
    pa, _, pc = libs
    table = table.combine_chunks()
    names = table.column_names
    if "steps" in names and (not pa.types.is_list(table.schema.field("steps").type)
                             or table.column("steps").null_count):
        return None
    n = table.num_rows
    out_names: list[str] = []
    out_cols: list[Any] = []
    if steps:
        if "steps" not in names:
            return None
        lists = table.column("steps").chunk(0) if n else None
        flat = lists.flatten() if lists is not None else None
        if flat is None or not pa.types.is_struct(flat.type) or flat.null_count:
            return None
        parents = pc.list_parent_indices(lists)
        for name in _STEP_HEAD:
            out_names.append(name)
            out_cols.append(table.column(name).chunk(0).take(parents) if name in names
                            else pa.nulls(len(flat)))
        ok = _spread(pc, out_names, out_cols, flat, _STEP_NESTED, None)
    else:
        if "n_steps" in names:
            return None
        for name in ("iteration", "split"):
            out_names.append(name)
            out_cols.append(table.column(name) if name in names else pa.nulls(n))
        out_names.append("n_steps")
        out_cols.append(pc.list_value_length(table.column("steps")).cast(pa.int64())
                        if "steps" in names else pa.array([0] * n, pa.int64()))
        rest_names: list[str] = []
        rest_cols: list[Any] = []
        ok = _spread(pc, rest_names, rest_cols, table, _TRAJECTORY_NESTED, "steps")
        for name, col in zip(rest_names, rest_cols, strict=True):
            if name in ("iteration", "split"):
                out_cols[out_names.index(name)] = col
            else:
                out_names.append(name)
                out_cols.append(col)
        ok = ok and len(set(out_names)) == len(out_names)
    if not ok:
        return None
    flat_table = pa.table(dict(zip(out_names, out_cols, strict=True)))
    if not _flat_columns(flat_table):
        return None
    return _first_seen(pc, flat_table, _head_keys(storage, rel, steps=steps))


def _head_keys(storage: Storage, rel: str, *, steps: bool) -> list[str]:
    """The columns of the rows of the first ``_SAMPLE`` records of ``rel``, in first-seen
    order (built as the Python path builds them)."""
    with storage.open_read(rel) as f:
        head = [rec for _, raw, ok in itertools.islice(ForwardLines(f, max_line=MAX_LINE),
                                                       _SAMPLE)
                if ok and (rec := decode_line(raw)) is not None]
    rows = step_rows(head) if steps else trajectory_rows(head)
    return list(dict.fromkeys(key for row in rows for key in row))


def concat(tables: list[Any]) -> Any | None:
    """``tables`` as one, columns in first-seen order, a column holding ints in one table and
    floats in another as floats (as ``rlio.reader.table`` merges kinds); None when a column has
    two other types (the Python path makes it a mixed column)."""
    libs = _pyarrow()
    if libs is None:
        return None
    pa = libs[0]
    types: dict[str, set[str]] = {}
    for t in tables:
        for field in t.schema:
            if str(field.type) != "null":
                types.setdefault(field.name, set()).add(str(field.type))
    if any(len(ts) > 1 and ts != {"int64", "double"} for ts in types.values()):
        return None
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowException, ValueError, TypeError):
        return None
