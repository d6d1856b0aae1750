"""Parquet datasets of one or many runs, for engines that read a whole sweep at once.

``export_parquet(runs, out)`` writes one dataset per record kind under ``out``::

    out/metrics/run=<run>/split=<split>/part-0.parquet      one row per metrics line
    out/rollouts/run=<run>/split=<split>/part-0.parquet     one row per trajectory
    out/steps/run=<run>/split=<split>/part-0.parquet        one row per rollout step
    out/checkpoints/run=<run>/split=train/part-0.parquet    one row per checkpoint record
    out/<kind>_keys.json                                    column name -> a safe identifier

Every file also holds ``run``, ``iteration`` and ``split`` as columns, so a reader gets them with
or without hive partitioning (partition values in directory names are percent-encoded:
``split=eval%2Ftest``). ``run`` and ``split`` are dictionary-encoded strings: the type pyarrow
(and so ``pandas.read_parquet(folder)``) gives a partition it discovers, which must equal the
file's own column's type. Column names are the record keys unchanged (``env/all/reward/total``);
the key map beside each dataset gives each a name of ``[A-Za-z0-9_]`` for engines that restrict
column names. All partitions of a kind share one schema: a key some run lacks is a null column
there, an integer column meeting floats becomes float, any other type conflict becomes text.
Gaps are nulls; ``NaN`` tokens stay NaN. Metrics lines are split ``train`` (a line with a
training key, docs/format.md §3) or ``eval``; rollouts by their file (``train``,
``eval/<label>``).

pyarrow is the optional extra ``rlio[parquet]``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from rlio.errors import RlioError
from rlio.layout import split_name
from rlio.reader.extras import require
from rlio.reader.run import Run, open_run
from rlio.reader.table import GAP, Table, step_rows, trajectory_rows
from rlio.rules import TRAINING_KEYS, X_AXIS_KEYS

__all__ = ["KINDS", "ExportResult", "export_parquet", "safe_names"]

#: The datasets written, in order.
KINDS: Final = ("metrics", "rollouts", "steps", "checkpoints")
_IDS: Final = ("run", "iteration", "split")
_UNSAFE = re.compile(r"[^A-Za-z0-9_]+")


@dataclass
class ExportResult:
    """What an export wrote: rows per dataset, and every file written (sorted)."""

    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    files: list[str] = field(default_factory=list)


def safe_names(keys: Iterable[str]) -> dict[str, str]:
    """Map each key to a distinct identifier of ``[A-Za-z0-9_]`` not starting with a digit."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for key in keys:
        base = _UNSAFE.sub("_", key).strip("_") or "column"
        if base[0].isascii() and base[0].isdigit():
            base = "_" + base
        name, n = base, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name)
        out[key] = name
    return out


def _with_ids(run: str, iteration: Any, split: str,
              rows: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    for rec in rows:
        row: dict[str, Any] = {"run": run, "iteration": iteration, "split": split}
        for k, v in rec.items():
            if k not in row:
                row[k] = v
        yield row


def _metrics_iteration(rec: Mapping[str, Any]) -> Any:
    for key in X_AXIS_KEYS:
        v = rec.get(key)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def _metrics_parts(run: Run, name: str) -> dict[str, Table]:
    records = run.metrics()
    any_training = any(k in rec for rec in records for k in TRAINING_KEYS)
    parts: dict[str, Table] = {}
    for rec in records:
        split = "train" if not any_training or any(k in rec for k in TRAINING_KEYS) else "eval"
        table = parts.setdefault(split, Table())
        for row in _with_ids(name, _metrics_iteration(rec), split, [rec]):
            table.add(row)
    return parts


def _rollout_parts(run: Run, name: str, *, steps: bool) -> dict[str, Table]:
    parts: dict[str, Table] = {}
    for info in run.iterations():
        for label in (None, *info.evaluators):
            split = split_name(label)
            records = run.rollouts(info.index, evaluator=label)
            rows = step_rows(records) if steps else trajectory_rows(records)
            for row in _with_ids(name, info.index, split, rows):
                parts.setdefault(split, Table()).add(row)
    return parts


def _checkpoint_parts(run: Run, name: str) -> dict[str, Table]:
    table = Table()
    for rec in run.checkpoints():
        batch = rec.get("batch")
        for row in _with_ids(name, batch, "train", [dict(rec)]):
            table.add(row)
    return {"train": table} if table.rows else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _arrow_column(pa: Any, table: Table, key: str) -> Any:
    """One column as an Arrow array with an explicit type (gaps as nulls)."""
    kind = table.kinds[key]
    cells = [None if v is GAP else v for v in table.columns[key]]
    if kind in ("float", "empty") or (kind == "int" and table.has_gaps(key)):
        return pa.array([None if c is None else float(c) for c in cells], pa.float64())
    try:
        if kind == "int":
            return pa.array(cells, pa.int64())
        if kind == "bool":
            return pa.array(cells, pa.bool_())
        if kind == "str":
            return pa.array(cells, pa.string())
        if kind == "list":
            return pa.array(cells)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pass
    return pa.array([None if c is None else _text(c) for c in cells], pa.string())


def to_arrow(pa: Any, table: Table) -> Any:
    """``table`` as an Arrow table, one explicitly typed column per key (gaps as nulls)."""
    return pa.table({key: _arrow_column(pa, table, key) for key in table.columns})


def unify(pa: Any, tables: Sequence[Any]) -> list[Any]:
    """The tables with one schema: every column everywhere, conflicts widened (module doc)."""
    types: dict[str, list[Any]] = {}
    for t in tables:
        for f in t.schema:
            types.setdefault(f.name, []).append(f.type)
    target: dict[str, Any] = {}
    for name, ts in types.items():
        distinct = {str(t): t for t in ts if not pa.types.is_null(t)}
        if len(distinct) <= 1:
            target[name] = next(iter(distinct.values()), pa.float64())
        elif all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in distinct.values()):
            target[name] = pa.float64()
        else:
            target[name] = pa.string()
    out = []
    for t in tables:
        columns = {}
        for name, typ in target.items():
            if name not in t.column_names:
                columns[name] = pa.nulls(t.num_rows, typ)
                continue
            col = t.column(name)
            if col.type == typ:
                columns[name] = col
            elif pa.types.is_string(typ):
                columns[name] = pa.array(
                    [None if v is None else _text(v) for v in col.to_pylist()], pa.string())
            else:
                columns[name] = col.cast(typ)
        out.append(pa.table(columns))
    return out


def _partition_columns(pa: Any, table: Any) -> Any:
    """``table`` with ``run`` and ``split`` dictionary-encoded (the module docstring says why)."""
    for name in ("run", "split"):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, table.column(i).dictionary_encode())
    return table


def _unique_names(runs: Sequence[Run]) -> list[str]:
    seen: dict[str, int] = {}
    names = []
    for run in runs:
        base = run.name
        n = seen.get(base, 0) + 1
        seen[base] = n
        names.append(base if n == 1 else f"{base}-{n}")
    return names


def export_parquet(runs: Sequence[Run | str | os.PathLike[str]],
                   out: str | os.PathLike[str]) -> ExportResult:
    """Write the Parquet datasets of ``runs`` under the local folder ``out`` (module docstring).

    Raises:
        RlioError: ``out`` exists and is not an empty folder (an export never mixes with an
            older one).
        RunNotFoundError: a run cannot be opened (``NotARunError``: it is not a run); nothing
            is written then.
        MissingExtraError: pyarrow is not installed (``pip install 'rlio[parquet]'``).
    """
    pa = require("pyarrow", "parquet", purpose="the Parquet export")
    pq = require("pyarrow.parquet", "parquet", purpose="the Parquet export")
    root = Path(out)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise RlioError(f"{root}: exists and is not an empty folder; export to a new folder")
    opened = [r if isinstance(r, Run) else open_run(r) for r in runs]
    names = _unique_names(opened)
    root.mkdir(parents=True, exist_ok=True)  # "wrote 0 file(s) under OUT" names a folder
    result = ExportResult()
    for kind in KINDS:
        parts: list[tuple[str, str, Table]] = []
        for run, name in zip(opened, names, strict=True):
            if kind == "metrics":
                found = _metrics_parts(run, name)
            elif kind == "checkpoints":
                found = _checkpoint_parts(run, name)
            else:
                found = _rollout_parts(run, name, steps=kind == "steps")
            parts.extend((name, split, table) for split, table in found.items())
        if not parts:
            continue
        tables = unify(pa, [to_arrow(pa, t) for _, _, t in parts])
        for (name, split, _), table in zip(parts, tables, strict=True):
            folder = root / kind / f"run={quote(name, safe='')}" / f"split={quote(split, safe='')}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(_partition_columns(pa, table), folder / "part-0.parquet")
            result.rows[kind] += table.num_rows
            result.files.append(str(folder / "part-0.parquet"))
        keys = root / f"{kind}_keys.json"
        keys.write_text(json.dumps(safe_names(tables[0].column_names), indent=2) + "\n",
                        encoding="utf-8")
        result.files.append(str(keys))
    result.files.sort()
    return result
