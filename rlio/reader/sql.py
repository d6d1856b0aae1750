"""SQL over runs: ``rlio.query(sql, paths)`` and ``rlio query``, on DuckDB.

The runs under ``paths`` are found as ``rlio validate`` finds them and read with the reader, each
run into Arrow tables of at most ``CHUNK_ROWS`` rows (``rlio.reader.table.Table``: every key is a
column, a key first logged late included), in parallel on the fleet's executor. The chunks stream
into one DuckDB table per view; a view's column that a later chunk adds is added to the table,
and a type conflict widens it (integers meeting floats become DOUBLE, anything else VARCHAR).
DuckDB keeps the tables in its buffer pool and spills them to a temporary folder past its memory
limit, so a sweep larger than memory can be queried; the SQL then runs on those tables.

Views (each with a ``run`` column: the run's path relative to the PATH it was found under):
``runs`` (one row per run), ``configs`` (``run, key, value, kind``: the config flattened to
``.``-joined paths, ``value`` the string itself or the leaf's JSON text), ``metrics`` (one row
per ``metrics.jsonl`` record), ``checkpoints``, ``rollouts`` (one row per trajectory, with
``iteration`` and ``split``), ``steps`` (one row per rollout step) and ``captures`` (one row per
token-capture record of ``capture/<kind>.jsonl``: ``kind``, ``scope/<key>`` columns, the
record's keys; ``sampling_params``, ``hyperparams`` and ``metrics`` spread as ``<name>/<key>``).

DuckDB and pyarrow are the optional extra ``rlio[duckdb]``.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from itertools import repeat
from typing import Any, Final, cast

import orjson

from rlio.errors import MissingExtraError, NotARunError
from rlio.layout import split_name
from rlio.reader.export import unify
from rlio.reader.extras import require
from rlio.reader.run import Run, open_run, run_status
from rlio.reader.table import capture_rows, flatten, step_rows, trajectory_rows
from rlio.storage.base import Entry
from rlio.storage.listed import listed
from rlio.validate.fleet import Found, Unreadable, discover_named, each_run

__all__ = ["CHUNK_ROWS", "VIEWS", "query", "unquoted_slash_keys"]

#: The views, in the order they are built.
VIEWS: Final = ("runs", "configs", "metrics", "checkpoints", "rollouts", "steps", "captures")
#: Rows of one Arrow chunk: what one run holds in memory at a time, per view.
CHUNK_ROWS: Final = 50_000
_NUMERIC: Final = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "DOUBLE",
                             "FLOAT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"})


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    for t, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"),
                    (list, "list")):
        if isinstance(value, t):
            return name
    return "object"


def _text(value: Any) -> str:
    """A config leaf as text: a string as itself, anything else as JSON (``NaN``, ``Infinity``
    and ``-Infinity`` for non-finite numbers)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr(value)


def config_rows(name: str, config: Mapping[str, Any] | None) -> Iterator[dict[str, Any]]:
    """The ``configs`` rows of one run: each leaf of its config, as text, with its kind."""
    for key, value in flatten(config or {}):
        yield {"run": name, "key": key, "value": _text(value), "kind": _kind(value)}


def _run_row(name: str, run: Run) -> dict[str, Any]:
    ckpts = run.checkpoints()
    last = ckpts[-1] if ckpts else None
    return {"run": name, "location": run.location, "status": run_status(ckpts),
            "layout": run.layout, "checkpoints": len(ckpts),
            "last_checkpoint": None if last is None else last.get("name"),
            "has_config": run.config() is not None}


def _ids(name: str, rows: Iterable[Mapping[str, Any]], **ids: Any) -> Iterator[dict[str, Any]]:
    """Each row with ``run`` (and ``ids``) first; they win over a record's own keys of the same
    name (merged by dict displays: no Python loop per key)."""
    head = {"run": name, **ids}
    for rec in rows:
        yield {**head, **rec, **head}


def _rollout_rows(name: str, run: Run, *, steps: bool) -> Iterator[dict[str, Any]]:
    for info in run.iterations():
        for label in (None, *info.evaluators):
            records = run.rollouts(info.index, evaluator=label)
            rows = step_rows(records) if steps else trajectory_rows(records)
            yield from _ids(name, rows, iteration=info.index, split=split_name(label))


def view_rows(view: str, name: str, run: Run) -> Iterator[dict[str, Any]]:
    """The rows of one view from one run, streamed (``run`` is set again by ``block_table``)."""
    if view == "runs":
        return iter([_run_row(name, run)])
    if view == "configs":
        return config_rows(name, run.config())
    if view == "metrics":
        # records as read (plain dicts at run time): ``block_table`` adds the run column
        return cast(Iterator[dict[str, Any]], run.iter_metrics())
    if view == "checkpoints":
        return iter(cast(list[dict[str, Any]], run.checkpoints()))
    if view == "captures":
        return capture_rows(cast(Iterator[dict[str, Any]], run.captures()))
    return _rollout_rows(name, run, steps=view == "steps")


def _column(pa: Any, values: list[Any]) -> Any:
    """One column as Arrow infers it (numbers, strings, booleans, lists; integers meeting
    floats are doubles; all-null is double); anything mixed as text (JSON for non-strings)."""
    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return pa.array([None if v is None else _json_text(v) for v in values], pa.string())
    if pa.types.is_null(arr.type):
        return pa.nulls(len(values), pa.float64())
    if pa.types.is_struct(arr.type):  # an object value: kept as its JSON text
        return pa.array([None if v is None else _json_text(v) for v in values], pa.string())
    return arr


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def block_table(pa: Any, name: str, rows: list[dict[str, Any]],
                keys: dict[str, None]) -> Any:
    """``rows`` as an Arrow table: ``run`` (``name``; a record's own ``run`` key gives way),
    then a column per key of ``keys`` (in order), read key by key with C-level passes
    (``map(dict.get, ...)``): no Python code runs per cell."""
    columns = {"run": pa.array([name] * len(rows), pa.string())}
    columns.update((k, _column(pa, list(map(dict.get, rows, repeat(k))))) for k in keys
                   if k != "run")
    return pa.table(columns)


def run_chunks(location: str, name: str, *, listing: list[Entry] | None = None
               ) -> Iterator[tuple[str, Any]]:
    """``(view, Arrow table)`` chunks of one run, each of at most ``CHUNK_ROWS`` rows;
    ``listing``: its entries when a fleet's listing has them."""
    pa = require("pyarrow", "duckdb", purpose="rlio query")
    run = open_run(listed(location, listing))
    for view in VIEWS:
        rows: list[dict[str, Any]] = []
        keys: dict[str, None] = {}
        for row in view_rows(view, name, run):
            if not keys.keys() >= row.keys():
                keys.update(dict.fromkeys(row))
            rows.append(row)
            if len(rows) >= CHUNK_ROWS:
                yield view, block_table(pa, name, rows, keys)
                rows, keys = [], {}
        if rows:
            yield view, block_table(pa, name, rows, keys)


def _read_run(location: str, names: dict[str, str], *, listing: list[Entry] | None = None
              ) -> list[tuple[str, Any]] | str:
    """Every chunk of one run (what a worker ships back), or why it could not be read."""
    try:
        return list(run_chunks(location, names[location], listing=listing))
    except OSError as exc:
        return f"cannot read {location}: {exc.strerror or exc}"
    except MissingExtraError:
        raise
    except Exception as exc:  # a reader bug must not take the whole query down: report it
        return f"{location} could not be read ({type(exc).__name__}: {exc})"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Sink:
    """One DuckDB table per view, grown chunk by chunk (columns added, types widened)."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.columns: dict[str, dict[str, str]] = {}  # view -> column -> DuckDB type

    def _types(self, view: str) -> dict[str, str]:
        rows = self.con.execute(f"DESCRIBE {_quote(view)}").fetchall()
        return {r[0]: str(r[1]) for r in rows}

    def add(self, view: str, chunk: Any) -> None:
        self.con.register("_rlio_chunk", chunk)
        try:
            if view not in self.columns:
                self.con.execute(f"CREATE TABLE {_quote(view)} AS SELECT * FROM _rlio_chunk")
            else:
                self._insert(view)
            self.columns[view] = self._types(view)
        finally:
            self.con.unregister("_rlio_chunk")

    def _insert(self, view: str) -> None:
        have = self.columns[view]
        new = {r[0]: str(r[1]) for r in self.con.execute(
            "DESCRIBE SELECT * FROM _rlio_chunk").fetchall()}
        select = []
        for col, typ in new.items():
            old = have.get(col)
            if old is None:
                self.con.execute(f"ALTER TABLE {_quote(view)} ADD COLUMN {_quote(col)} {typ}")
                old = typ
            elif old != typ:
                wide = "DOUBLE" if {old, typ} <= _NUMERIC else "VARCHAR"
                if wide != old:
                    self.con.execute(f"ALTER TABLE {_quote(view)} ALTER {_quote(col)} "
                                     f"TYPE {wide}")
                old = wide
            cast = f"CAST({_quote(col)} AS {old})" if old != typ else _quote(col)
            select.append(f"{cast} AS {_quote(col)}")
        self.con.execute(f"INSERT INTO {_quote(view)} BY NAME SELECT {', '.join(select)} "
                         "FROM _rlio_chunk")


def connect(paths: Sequence[str | os.PathLike[str]], tmp: str, *,
            executor: Executor | None = None, jobs: int | None = None,
            unreadable: list[Unreadable] | None = None) -> Any:
    """A DuckDB connection holding the views of every run under ``paths`` (spilling to ``tmp``).

    A view no run has rows for is still a table: ``runs``' columns, or only ``run``.
    """
    duckdb = require("duckdb", "duckdb", purpose="rlio query")
    pa = require("pyarrow", "duckdb", purpose="rlio query")
    bad = unreadable if unreadable is not None else []
    listings: Found = {}
    found = discover_named(paths, bad, listings)
    if not found and unreadable is None:
        raise NotARunError(2, "no run found under " + ", ".join(os.fspath(p) for p in paths))
    con = duckdb.connect(":memory:", config={"temp_directory": tmp})
    sink = _Sink(con)
    by_loc = {loc: name for name, loc in found}
    buffered: dict[str, list[Any]] = {v: [] for v in VIEWS}

    def flush(view: str) -> None:
        tables = buffered[view]
        if tables:  # many runs' chunks as one insert: one schema first (export's rules)
            sink.add(view, pa.concat_tables(unify(pa, tables)))
            buffered[view] = []

    for loc, result in zip(by_loc, each_run(_read_run, list(by_loc), by_loc, executor=executor,
                                            jobs=jobs, listings=listings), strict=True):
        if isinstance(result, str):
            bad.append(Unreadable(loc, result))
            continue
        for view, chunk in result:
            buffered[view].append(chunk)
            if sum(t.num_rows for t in buffered[view]) >= CHUNK_ROWS:
                flush(view)
    for view in VIEWS:
        flush(view)
    for view in VIEWS:
        if view not in sink.columns:
            con.execute(f"CREATE TABLE {_quote(view)} (run VARCHAR)")
    return con


def query(sql: str, paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *,
          executor: Executor | None = None, jobs: int | None = None,
          unreadable: list[Unreadable] | None = None) -> Any:
    """Run ``sql`` over the runs under ``paths`` (runs, parent folders, URI prefixes) and return
    the result as a ``pyarrow.Table`` (``.to_pandas()``, ``polars.from_arrow`` convert it).

    The views are ``runs``, ``configs``, ``metrics``, ``checkpoints``, ``rollouts``,
    ``steps`` and ``captures``, each with a ``run`` column (the module docstring says what
    each holds).

    Args:
        executor, jobs: where the runs are read in parallel (as for ``validate_runs``).
        unreadable: when given, paths without a run and runs that could not be read are added
            to it instead of raising.

    Raises:
        NotARunError, RunNotFoundError: a path holds no run (unless ``unreadable`` is given).
        MissingExtraError: DuckDB or pyarrow is not installed (``pip install 'rlio[duckdb]'``).
        duckdb.Error: the SQL is invalid.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    with tempfile.TemporaryDirectory(prefix="rlio-query-") as tmp:
        con = connect(paths, tmp, executor=executor, jobs=jobs, unreadable=unreadable)
        try:
            rel = con.sql(sql)  # None for a statement that returns no rows
            pa = require("pyarrow", "duckdb", purpose="rlio query")
            if rel is None:
                return pa.table({})
            # DuckDB 1.x names it fetch_arrow_table; 2.x deprecates that for to_arrow_table
            fetch = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
            return fetch()
        finally:
            con.close()


#: String literals and quoted identifiers (skipped), and a bare name holding ``/``.
_SQL_TOKENS = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|([A-Za-z_][\w:.-]*(?:/[\w:.-]+)+)""")


def unquoted_slash_keys(sql: str) -> list[str]:
    """Bare (unquoted) names in ``sql`` that hold ``/``, such as ``env/all/reward/total``: to SQL
    each is a division, so a metric key must be written ``"env/all/reward/total"``."""
    found = [m[1] for m in _SQL_TOKENS.finditer(sql) if m[1]]
    return list(dict.fromkeys(found))
