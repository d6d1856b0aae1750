"""The whole table: every benchmark module here that defines ``rows(quick)``, in one run.

Modules are found by listing this directory (any ``*.py`` whose top level defines ``rows``), so a
new benchmark joins the table by defining ``rows(quick: bool) -> list[Row]`` (see ``harness.py``).
The load average is printed before and after: ratios are interleaved and mean something under
load, absolute times less so.

Usage: ``python benchmarks/run_all.py [--quick] [--only NAME ...]`` (NAME: a module name, e.g.
``resume_floor``). Exit 1 when a row misses its goal, 2 when a module failed to run.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from harness import Row  # noqa: E402

_SELF = {"run_all", "harness"}


def discover() -> list[str]:
    """Names of the modules in this directory whose top level defines a ``rows`` function."""
    names = []
    for entry in sorted(os.listdir(HERE)):
        name, ext = os.path.splitext(entry)
        if ext != ".py" or name in _SELF or name.startswith("_"):
            continue
        with open(os.path.join(HERE, entry), encoding="utf-8") as f:
            tree = ast.parse(f.read(), entry)
        if any(isinstance(node, ast.FunctionDef) and node.name == "rows" for node in tree.body):
            names.append(name)
    return names


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _num(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def module_main(rows: Callable[[bool], Sequence[Row]], doc: str | None,
                argv: list[str] | None = None) -> int:
    """One benchmark module as a script: ``--quick`` and its rows as one table."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    print_table(rows(args.quick))
    return 0


def print_table(rows: Sequence[tuple[str, Row] | Row], out: object = None) -> None:
    """Print ``rows`` (optionally with their module) as one aligned table."""
    stream = out if out is not None else sys.stdout
    head = ("module", "path", "rlio", "floor", "ratio", "goal", "meets", "floor is")
    body = []
    for item in rows:
        module, row = item if isinstance(item, tuple) else ("", item)
        meets = {None: "-", True: "yes", False: "NO"}[row.meets_goal]
        goal = "-" if row.goal is None else f"<= {row.goal:g}x"
        body.append((module, row.path, f"{_num(row.rlio)} {row.unit}",
                     f"{_num(row.floor)} {row.unit}", f"{row.ratio:.2f}x", goal, meets,
                     row.floor_name))
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    for r in [head, tuple("-" * w for w in widths), *body]:
        line = "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True))
        print(line.rstrip(), file=stream)  # type: ignore[call-overload]


def main(argv: list[str] | None = None) -> int:
    """Run the chosen modules' rows and print the table between two load averages."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds and sizes: a fast pass")
    p.add_argument("--only", action="append", metavar="NAME", default=None,
                   help="run only this module (repeatable)")
    args = p.parse_args(argv)
    names = discover()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            p.error(f"no benchmark module {', '.join(unknown)} (have: {', '.join(names)})")
        names = [n for n in names if n in args.only]
    print(f"load average before: {_load()}  (cores: {os.cpu_count()})")
    start = time.perf_counter()
    table: list[tuple[str, Row]] = []
    failed = []
    for name in names:
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(name)
            table += [(name, row) for row in module.rows(args.quick)]
        except Exception:
            failed.append(name)
            traceback.print_exc()
        print(f"  {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print_table(table)
    print(f"load average after:  {_load()}  ({time.perf_counter() - start:.0f} s)")
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 2
    return 1 if any(row.meets_goal is False for _, row in table) else 0


if __name__ == "__main__":
    sys.exit(main())
