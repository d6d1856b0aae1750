"""DataFrames of a run's records, pandas or polars, built from a ``Table`` with explicit types.

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
from rlio.reader.table import GAP, Table, metrics_table, rollouts_table

__all__ = ["Backend", "build_frame", "metrics_table", "rollouts_table"]

Backend = Literal["pandas", "polars"]


def build_frame(table: Table, backend: Backend = "pandas") -> Any:
    """``table`` as a pandas or polars DataFrame."""
    if backend == "pandas":
        return _pandas(table)
    if backend == "polars":
        return _polars(table)
    raise ValueError(f"backend must be 'pandas' or 'polars', got {backend!r}")


def _numeric(table: Table, key: str) -> bool:
    kind = table.kinds[key]
    return kind in ("float", "empty") or (kind == "int" and table.has_gaps(key))


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
            data[key] = pd.Series(cells, dtype=None if table.kinds[key] == "str" else object)
    return pd.DataFrame(data, index=pd.RangeIndex(table.rows))


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
