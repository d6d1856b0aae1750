"""Mutation probe of the validator's checks: which semantic mutants do the check tests miss?

Applies one AST mutation at a time to ``rlio/validate/checks/*.py`` and to ``rlio/rules.py`` (the
docs/format.md §9 rules the checks decide with) in a temporary copy of the
tree (the real files are never edited), runs the check tests there, and counts a mutant as killed
when they fail (or time out). Mutations: flip a comparison (``<`` <-> ``<=``, ``>`` <-> ``>=``,
``==`` <-> ``!=``, ``is`` <-> ``is not``, ``in`` <-> ``not in``), ``and`` <-> ``or``, drop a
``not``, an int constant +1 and -1, an ``if`` condition replaced by ``True`` and by ``False``.
Prints every survivor and the kill ratio. Not part of the test suite.

Usage: ``python tools/mutation_probe.py [--max N] [--timeout S] [--only NAME] [--tests PATH]``.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The mutated modules: the validator's checks and the rules they decide with.
TARGETS = ("rlio/validate/checks/*.py", "rlio/rules.py")
COPIED = ("rlio", "tests", "schemas", "conformance", "pyproject.toml")
#: The unit tests of those modules (``tests/unit/validate`` adds the engine's, ~100 s a run).
DEFAULT_TESTS = ("tests/unit/validate/checks", "tests/unit/test_rules.py")

_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.In: ast.NotIn, ast.NotIn: ast.In,
}


@dataclass(frozen=True)
class Mutant:
    """One mutation: the file, the node's position in ``ast.walk`` order, and what it does."""

    file: str
    index: int
    what: str
    line: int


def _is_docstring_or_annotation(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    parent = parents.get(node)
    return isinstance(parent, (ast.arg, ast.AnnAssign)) and getattr(parent, "annotation",
                                                                      None) is node


def _sites(tree: ast.Module) -> Iterator[tuple[int, ast.AST, str]]:
    """Every (walk index, node, mutation) of a module."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in _FLIP:
                    yield index, node, f"cmp{k}:{type(op).__name__}->{_FLIP[type(op)].__name__}"
        elif isinstance(node, ast.BoolOp):
            yield index, node, "and->or" if isinstance(node.op, ast.And) else "or->and"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield index, node, "drop not"
        elif (isinstance(node, ast.Constant) and type(node.value) is int
              and not _is_docstring_or_annotation(node, parents)):
            yield index, node, f"{node.value}+1"
            yield index, node, f"{node.value}-1"
        elif isinstance(node, ast.If):
            yield index, node, "if True"
            yield index, node, "if False"


def _apply(tree: ast.Module, index: int, what: str) -> ast.Module:
    """``tree`` with the mutation ``what`` applied to the node at walk position ``index``."""
    node = next(n for i, n in enumerate(ast.walk(tree)) if i == index)
    if isinstance(node, ast.Compare):
        k = int(what[3:what.index(":")])
        node.ops[k] = _FLIP[type(node.ops[k])]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        # "not x" -> "(x)": the operand replaces the operation in its parent
        for parent in ast.walk(tree):
            for field, value in ast.iter_fields(parent):
                if value is node:
                    setattr(parent, field, node.operand)
                elif isinstance(value, list):
                    for j, item in enumerate(value):
                        if item is node:
                            value[j] = node.operand
    elif isinstance(node, ast.Constant) and type(node.value) is int:  # the sites are ints only
        node.value = node.value + (1 if what.endswith("+1") else -1)
    elif isinstance(node, ast.If):
        node.test = ast.Constant(what == "if True")
    return ast.fix_missing_locations(tree)


def mutants(only: str | None) -> list[Mutant]:
    """Every mutant of the target modules (of one module with ``only``)."""
    found: list[Mutant] = []
    for path in sorted(p for pattern in TARGETS for p in ROOT.glob(pattern)):
        if only is not None and path.stem != only:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = str(path.relative_to(ROOT))
        found.extend(Mutant(rel, i, what, getattr(node, "lineno", 0))
                     for i, node, what in _sites(tree))
    return found


def _run_tests(copy: Path, tests: list[str], timeout: float) -> str:
    """``passed``, ``failed`` or ``timeout`` for the tests in the copy."""
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", *tests, "-q", "-x", "-p", "no:cacheprovider"]
    try:
        proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "passed" if proc.returncode == 0 else "failed"


def main() -> int:
    """Run the probe; exit 0 when every mutant was killed, 1 when some survived."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=10_000, help="at most this many mutants")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    ap.add_argument("--only", help="one module by name (say: metrics, or rules)")
    ap.add_argument("--tests", nargs="+", default=list(DEFAULT_TESTS),
                    help="the tests run against each mutant")
    args = ap.parse_args()
    todo = mutants(args.only)[: args.max]
    with tempfile.TemporaryDirectory(prefix="rlio-mutants-") as tmp:
        copy = Path(tmp)
        for name in COPIED:
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif src.exists():
                shutil.copy2(src, copy / name)
        baseline = _run_tests(copy, args.tests, args.timeout)
        if baseline != "passed":
            print(f"the unmutated tree does not pass {' '.join(args.tests)} ({baseline}); "
                  "nothing probed")
            return 2
        survivors: list[Mutant] = []
        started = time.monotonic()
        for n, m in enumerate(todo, 1):
            target = copy / m.file
            original = target.read_text(encoding="utf-8")
            mutated = ast.unparse(_apply(ast.parse(original), m.index, m.what))
            if mutated == ast.unparse(ast.parse(original)):
                continue  # no change (cannot happen for these mutations; kept safe)
            target.write_text(mutated, encoding="utf-8")
            try:
                outcome = _run_tests(copy, args.tests, args.timeout)
            finally:
                target.write_text(original, encoding="utf-8")
            if outcome == "passed":
                survivors.append(m)
            print(f"[{n}/{len(todo)}] {m.file}:{m.line} {m.what}: "
                  f"{'SURVIVED' if outcome == 'passed' else outcome}", flush=True)
    killed = len(todo) - len(survivors)
    print(f"\nsurvivors ({len(survivors)}):")
    for m in survivors:
        print(f"  {m.file}:{m.line} {m.what}")
    ratio = killed / len(todo) if todo else 1.0
    print(f"killed {killed}/{len(todo)} mutants ({ratio:.1%}) in "
          f"{time.monotonic() - started:.0f} s; tests: {' '.join(args.tests)}")
    return 0 if not survivors else 1


if __name__ == "__main__":
    sys.exit(main())
