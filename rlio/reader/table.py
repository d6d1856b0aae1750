"""Columns built from records: every key ever seen is a column, gaps kept as gaps.

Dataframe libraries infer columns from a prefix of the rows (polars 100, DuckDB 20,480), so a
metric first logged at step 30,000 silently disappears. ``Table`` instead grows a column the
moment a key first appears, back-filled with gaps, and knows each column's kind (all numbers, all
booleans, all strings, or mixed) so each backend gets one explicit type per column.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, Literal

__all__ = ["GAP", "Kind", "Table", "capture_rows", "flatten", "metrics_table", "rollouts_table"]

Kind = Literal["int", "float", "bool", "str", "list", "mixed", "empty"]


class _Gap:
    """The marker of a cell whose record did not have the key (or held null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "GAP"


GAP: Final = _Gap()


def _kind_of(value: Any) -> Kind:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "mixed"


def _merge(a: Kind, b: Kind) -> Kind:
    if a == b or b == "empty":
        return a
    if a == "empty":
        return b
    if {a, b} == {"int", "float"}:
        return "float"
    return "mixed"


class Table:
    """Rows added one at a time as mappings; columns in first-seen key order."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {}
        self.kinds: dict[str, Kind] = {}
        self.rows = 0

    def add(self, row: Mapping[str, Any]) -> None:
        """Append one row; a null value is a gap, a new key becomes a back-filled column."""
        n = self.rows
        columns, kinds = self.columns, self.kinds
        for key, value in row.items():
            col = columns.get(key)
            if col is None:
                col = columns[key] = [GAP] * n
                kinds[key] = "empty"
            elif len(col) > n:
                continue  # a repeated key in one row (flattening): the first one stays
            if value is None:
                col.append(GAP)
                continue
            col.append(value)
            kind = _kind_of(value)
            if kind != kinds[key]:
                kinds[key] = _merge(kinds[key], kind)
        self.rows = n + 1
        for col in columns.values():
            if len(col) == n:
                col.append(GAP)

    def has_gaps(self, key: str) -> bool:
        """Whether column ``key`` has a missing cell."""
        return any(v is GAP for v in self.columns[key])

    def numbers(self, key: str) -> list[float]:
        """A numeric column as floats, gaps as NaN."""
        return [math.nan if v is GAP else float(v) for v in self.columns[key]]


def metrics_table(records: Iterable[Mapping[str, Any]]) -> Table:
    """One row per metrics record, one column per key ever seen."""
    table = Table()
    for rec in records:
        table.add(rec)
    return table


_NESTED_TRAJECTORY = ("trajectory_metrics",)
_NESTED_STEP = ("metrics", "logs")


def _flat(record: Mapping[str, Any], nested: tuple[str, ...], skip: str | None,
          head: dict[str, Any]) -> dict[str, Any]:
    """``record``'s keys after ``head``, with the ``nested`` objects spread as ``<name>/<key>``."""
    row = dict(head)
    for key, value in record.items():
        if key == skip:
            continue
        if key in nested and isinstance(value, Mapping):
            for k, v in value.items():
                row[f"{key}/{k}"] = v
        else:
            row[key] = value
    return row


def _steps(record: Mapping[str, Any]) -> list[Any]:
    steps = record.get("steps")
    return steps if isinstance(steps, list) else []


def trajectory_rows(records: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """One flat row per trajectory: its scalar keys, ``n_steps``, ``trajectory_metrics/<k>``."""
    for rec in records:
        head = {"iteration": rec.get("iteration"), "split": rec.get("split"),
                "n_steps": len(_steps(rec))}
        yield _flat(rec, _NESTED_TRAJECTORY, "steps", head)


def step_rows(records: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """One flat row per step: the trajectory's identity, the step's keys, ``metrics/<k>``,
    ``logs/<k>``."""
    for rec in records:
        head = {k: rec.get(k) for k in ("iteration", "split", "group_idx", "traj_idx")}
        for step in _steps(rec):
            if isinstance(step, Mapping):
                yield _flat(step, _NESTED_STEP, None, head)


_NESTED_CAPTURE = ("scope", "sampling_params", "hyperparams", "metrics")


def capture_rows(records: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """One flat row per token-capture record: ``kind`` first, its ``scope``,
    ``sampling_params``, ``hyperparams`` and ``metrics`` spread as ``<name>/<key>``."""
    for rec in records:
        yield _flat(rec, _NESTED_CAPTURE, None, {"kind": rec.get("kind")})


def rollouts_table(records: Iterable[Mapping[str, Any]], *, steps: bool = False) -> Table:
    """Rollout summaries as a table: one row per trajectory, or per step."""
    table = Table()
    for row in (step_rows(records) if steps else trajectory_rows(records)):
        table.add(row)
    return table


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` pairs of a config: nested objects' keys joined with ``.``
    (``sampling.temperature``); lists, and empty objects below the top, are leaves."""
    if isinstance(value, Mapping) and (value or not prefix):
        for k, v in value.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value
