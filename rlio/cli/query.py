"""``rlio query``: SQL over runs with DuckDB (views runs, configs, metrics, checkpoints, rollouts,
steps, captures), printed as an aligned table, CSV, JSON or written as Parquet."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from typing import Any

import orjson

from rlio._codec.numtext import number_text
from rlio.cli.common import (
    EXIT_OK,
    EXIT_UNREADABLE,
    add_command,
    add_parallel_options,
    dask_executor,
    fail,
    printable,
)

FORMATS = ("table", "csv", "json", "parquet")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``query`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "query",
        summary="SQL over runs with DuckDB (needs the extra rlio[duckdb])",
        description="Views, each with a run column: runs (one row per run), configs (run, key, "
        "value, kind: the config flattened to dotted paths), metrics (one row per metrics "
        "record, every key a column), checkpoints, rollouts (one row per trajectory), steps "
        "(one row per rollout step) and captures (one row per token-capture record of "
        "capture/<kind>.jsonl, scope/<key> columns). Column names are the record keys: quote them "
        '("env/all/reward/total").',
        examples=(
            ("rlio query 'SELECT run, max(\"env/all/reward/total\") AS best FROM metrics "
             "GROUP BY run ORDER BY best DESC' runs/sweep/", "the best reward of each run"),
            ("rlio query \"SELECT * FROM configs WHERE key = 'learning_rate'\" runs/ "
             "--format csv", "one config key across a sweep, as CSV"),
            ("rlio query 'SELECT * FROM steps' gs://bucket/sweep/ --format parquet -o steps.pq",
             "every rollout step of a sweep in one Parquet file"),
        ),
        exit_codes=(
            (EXIT_OK, "the query ran"),
            (EXIT_UNREADABLE, "a PATH holds no run or a run cannot be read (the query still "
             "runs over the others), the SQL is invalid, or the command was misused"),
        ),
    )
    p.add_argument("sql", metavar="SQL", help="one DuckDB SQL statement")
    p.add_argument("paths", metavar="PATH", nargs="+",
                   help="a run, a folder holding runs at any depth, or a URI prefix")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table: aligned columns; csv; json: a list of row objects; parquet")
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="write the result to FILE instead of stdout (needed for parquet)")
    add_parallel_options(p, "read")
    p.set_defaults(handler=run)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return number_text(value)
    return printable(value)


def render_table(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """Aligned columns under a header and a rule; numbers right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    heads = [printable(c) for c in columns]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(heads)]
    numeric = [all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool)
                   for row in rows if row[i] is not None) for i in range(len(columns))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    out = [line(heads), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"


def _text(table: Any, fmt: str) -> str:
    columns = list(table.column_names)
    rows = [tuple(r.values()) for r in table.to_pylist()]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        w.writerows(["" if v is None else v for v in r] for r in rows)
        return buf.getvalue()
    if fmt == "json":
        return orjson.dumps([dict(zip(columns, r, strict=True)) for r in rows],
                            option=orjson.OPT_INDENT_2, default=str).decode() + "\n"
    return render_table(columns, rows)


def _query_failed(message: str, sql: str) -> int:
    """``rlio: error: the query failed: ...`` with DuckDB's message on its own lines (each
    terminal-safe) and, when the SQL has a bare name holding ``/``, a hint to quote it."""
    from rlio.reader.sql import unquoted_slash_keys

    lines = [printable(line) for line in message.splitlines()]
    keys = unquoted_slash_keys(sql)
    if keys:
        quoted = ", ".join('"' + k.replace('"', '""') + '"' for k in keys[:3])
        lines.append(f"hint: a key holding '/' is a column only in double quotes: {quoted} "
                     "(unquoted, SQL reads '/' as a division)")
    sys.stderr.write("rlio: error: the query failed: " + "\n".join(lines) + "\n")
    return EXIT_UNREADABLE


def run(args: argparse.Namespace) -> int:
    """Run ``args.sql`` over ``args.paths`` and print or write the result."""
    from rlio.reader.extras import require
    from rlio.reader.sql import query
    from rlio.validate.fleet import Unreadable

    if args.format == "parquet" and args.output is None:
        return fail("--format parquet writes a file: pass -o FILE")
    if args.jobs is not None and args.jobs < 1:
        return fail(f"--jobs must be at least 1, got {args.jobs}")
    duckdb = require("duckdb", "duckdb", purpose="rlio query")
    bad: list[Unreadable] = []
    try:
        with dask_executor(args.dask) as executor:
            table = query(args.sql, args.paths, jobs=args.jobs, executor=executor,
                          unreadable=bad)
    except duckdb.Error as exc:
        return _query_failed(str(exc), args.sql)
    except ValueError as exc:  # --dask without the package or its scheduler
        return fail(str(exc))
    for u in bad:
        fail(u.message if u.path in u.message else f"{u.path}: {u.message}")
    if args.format == "parquet":
        pq = require("pyarrow.parquet", "duckdb", purpose="rlio query --format parquet")
        pq.write_table(table, args.output)
    else:
        text = _text(table, args.format)
        if args.output is None:
            sys.stdout.write(text)
        else:
            with open(args.output, "w", encoding="utf-8", newline="") as f:
                f.write(text)
    return EXIT_UNREADABLE if bad else EXIT_OK
