"""DataFrames of a run's records, pandas or polars, with explicit types.

A JSONL file is read by pyarrow's reader when it can give exactly the columns the Python path
gives (``rlio.reader.native``), else record by record into a ``Table``; both are turned into a
frame by the same rules, below.

Both libraries are optional extras, imported only here and only when a frame is asked for:
``pip install 'rlio[pandas]'`` / ``'rlio[polars]'``; without one, ``MissingExtraError`` (an
``ImportError``) names the extra. Numeric columns hold float NaN for gaps and nulls (an int column
with a gap becomes float); in pandas every other column holds NaN for gaps too, in polars null
(a polars string column cannot hold NaN). Columns mixing types (a number here, a string there)
are objects in pandas and JSON text in polars.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from rlio.reader.extras import require
from rlio.reader.native import complete_end, concat, read_table, rollout_table
from rlio.reader.source import iter_records
from rlio.reader.table import GAP, Table, metrics_table, rollouts_table
from rlio.storage.base import Storage

__all__ = ["Backend", "build_frame", "jsonl_frame", "metrics_table", "rollout_frame",
           "rollouts_table"]

Backend = Literal["pandas", "polars"]


def _check(backend: str) -> None:
    if backend not in ("pandas", "polars"):
        raise ValueError(f"backend must be 'pandas' or 'polars', got {backend!r}")


def build_frame(table: Table, backend: Backend = "pandas") -> Any:
    """``table`` as a pandas or polars DataFrame."""
    _check(backend)
    return _pandas(table) if backend == "pandas" else _polars(table)


def jsonl_frame(storage: Storage, rel: str, backend: Backend = "pandas") -> Any:
    """JSONL file ``rel`` as a DataFrame, one row per record, one column per key ever seen:
    natively read when that gives the same frame, else through ``metrics_table``."""
    _require(backend)
    native = read_table(storage, rel)
    if native is None:
        return build_frame(metrics_table(iter_records(storage, rel)), backend)
    holder = [native]
    del native
    return _native_frame(holder, backend)


def _require(backend: Backend) -> None:
    _check(backend)
    if backend == "pandas":
        require("pandas", "pandas", purpose="a pandas DataFrame")
    else:
        require("polars", "polars", purpose="a polars DataFrame")


def _native_frame(holder: list[Any], backend: Backend) -> Any:
    """The frame of the native table in ``holder``, which is emptied: the caller keeps no
    reference, so each column's memory is freed as it is converted."""
    return _pandas_native(holder) if backend == "pandas" else _polars_native(holder)


def rollout_frame(storage: Storage, rels: list[str], backend: Backend = "pandas", *,
                  steps: bool = False) -> Any:
    """The rollout summaries of files ``rels``, in order, as a DataFrame of one row per
    trajectory (or per step): natively read when every file can be, else through
    ``rollouts_table``."""
    _require(backend)
    tables = []
    for rel in rels:
        entry = storage.stat(rel)
        if entry is None or entry.kind != "file" or complete_end(storage, rel, entry.size) == 0:
            continue  # no record in it
        table = rollout_table(storage, rel, steps=steps)
        if table is None:
            break
        tables.append(table)
    else:
        native = concat(tables) if tables else None
        del tables
        if native is not None:
            holder = [native]
            del native
            return _native_frame(holder, backend)
    records = (rec for rel in rels for rec in iter_records(storage, rel))
    return build_frame(rollouts_table(records, steps=steps), backend)


def _numeric(table: Table, key: str) -> bool:
    kind = table.kinds[key]
    return kind in ("float", "empty") or (kind == "int" and table.has_gaps(key))


def _pandas_cells(pd: Any, cells: list[Any], kind: str) -> Any:
    """A column that is neither float nor gapless int: gaps as NaN, strings as pandas strings."""
    return pd.Series(cells, dtype=None if kind == "str" else object)


def _pandas(table: Table) -> Any:
    pd = require("pandas", "pandas", purpose="a pandas DataFrame")
    np = require("numpy", "pandas", purpose="a pandas DataFrame")
    data: dict[str, Any] = {}
    for key, values in table.columns.items():
        if _numeric(table, key):
            data[key] = pd.Series(np.array(table.numbers(key), dtype="float64"))
        elif table.kinds[key] == "int":
            data[key] = pd.Series(values)
        else:
            cells = [math.nan if v is GAP else v for v in values]
            data[key] = _pandas_cells(pd, cells, table.kinds[key])
    return pd.DataFrame(data, index=pd.RangeIndex(table.rows))


def _floats(holder: list[Any]) -> Any:
    """The native table in ``holder`` (taken out of it, so each column's memory is freed as
    it is replaced) with the float rule of ``_numeric``: number columns with a gap, and columns
    that are always null, as float64 with NaN for the gaps."""
    pa = require("pyarrow", "pandas", purpose="a DataFrame")
    pc = require("pyarrow.compute", "pandas", purpose="a DataFrame")
    table = holder.pop()
    for i, field in enumerate(table.schema):
        kind = str(field.type)
        col = table.column(i)
        if kind == "null" or (kind in ("double", "int64") and col.null_count):
            filled = pc.fill_null(col.cast(pa.float64()), math.nan)
            del col
            table = table.set_column(i, field.name, filled)
    return table


def _pandas_native(holder: list[Any]) -> Any:
    """A native table (``rlio.reader.native``, in ``holder``) by the rules of ``_pandas``."""
    pd = require("pandas", "pandas", purpose="a pandas DataFrame")
    table = _floats(holder)
    others = {field.name: (i, str(field.type)) for i, field in enumerate(table.schema)
              if str(field.type) not in ("double", "int64")}
    cells = {name: [math.nan if v is None else v for v in table.column(i).to_pylist()]
             for name, (i, _) in others.items()}
    names = table.column_names
    frame = table.to_pandas(self_destruct=True, split_blocks=True, ignore_metadata=True)
    del table
    for name, (_, kind) in others.items():
        frame[name] = _pandas_cells(pd, cells.pop(name), "str" if kind == "string" else kind)
    frame.columns = pd.Index(names)
    return frame


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _polars(table: Table) -> Any:
    pl = require("polars", "polars", purpose="a polars DataFrame")
    series = []
    for key, values in table.columns.items():
        kind = table.kinds[key]
        if _numeric(table, key):
            series.append(pl.Series(key, table.numbers(key), dtype=pl.Float64))
            continue
        cells = [None if v is GAP else v for v in values]
        if kind == "int":
            series.append(pl.Series(key, cells, strict=False))
        elif kind == "bool":
            series.append(pl.Series(key, cells, dtype=pl.Boolean))
        elif kind == "str":
            series.append(pl.Series(key, cells, dtype=pl.String))
        elif kind == "list":
            series.append(pl.Series(key, cells, strict=False))
        else:
            series.append(pl.Series(key, [None if c is None else _text(c) for c in cells],
                                    dtype=pl.String))
    return pl.DataFrame(series)


def _polars_native(holder: list[Any]) -> Any:
    """A native table (``rlio.reader.native``, in ``holder``) by the rules of ``_polars``."""
    pl = require("polars", "polars", purpose="a polars DataFrame")
    return pl.from_arrow(_floats(holder), rechunk=False)
