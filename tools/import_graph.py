"""Print the graph of rlio-internal imports, find import cycles, and check module sizes.

Stdlib only; it reads the sources with ``ast`` and never imports them. Every import counts,
whatever its depth (module level, inside functions, under ``try``). Imports under
``if TYPE_CHECKING:`` are type-only edges: listed separately, they never make a runtime cycle.
Also counted:

- ``from rlio import x`` is the edge to ``rlio.x`` when ``x`` is a module, else to ``rlio``;
  relative imports are resolved against the importing module's package.
- ``importlib`` tricks: in a module that calls ``import_module`` or ``__import__``, every string
  literal naming a module of the package is an edge (``rlio/__init__.py`` exports lazily so).
- Importing ``rlio.a.b`` first runs ``rlio/a/__init__.py``: the edge to the package ``rlio.a``
  counts too, unless the importer is inside ``rlio.a`` (then that package is already loaded).
- Under ``if __name__ == "__main__":`` a module importing its own name loads its importable
  copy (the file runs as ``__main__``); that one edge is not a self-import and is dropped.

Usage (from the repository root)::

    python tools/import_graph.py             # "module -> imports" lines, sorted
    python tools/import_graph.py --cycles    # strongly connected components; exit 1 if any
    python tools/import_graph.py --dot       # Graphviz (type-only edges dashed)
    python tools/import_graph.py --check     # exit 1 on a runtime cycle or two modules sharing a
                                             # file name across packages
    python tools/import_graph.py --root path/to/pkg --max-lines 400 --check

``--dot`` output renders with ``python tools/import_graph.py --dot | dot -Tsvg > imports.svg``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The package this repository ships; the default ``--root``.
DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "rlio"
#: The CLI's modules are named for their subcommands, so they may share a name with the module
#: that does the work; modules under rlio.storage may share names with each other (an object
#: store's backend package mirrors the interface's modules).
CLI_PACKAGE = "rlio.cli"
STORAGE_PACKAGE = "rlio.storage"
_DYNAMIC_IMPORTERS = frozenset({"import_module", "__import__"})


@dataclass
class Graph:
    """Modules of one package and its internal import edges (importer -> imported)."""

    modules: dict[str, Path]
    runtime: dict[str, set[str]] = field(default_factory=dict)
    type_only: dict[str, set[str]] = field(default_factory=dict)


def module_files(root: Path) -> dict[str, Path]:
    """Map dotted module names to their files; ``pkg/a/__init__.py`` is the module ``pkg.a``."""
    root = root.resolve()
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_main_guard(test: ast.expr) -> bool:
    """True for ``__name__ == "__main__"``."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _is_type_checking(test: ast.expr) -> bool:
    """True for ``TYPE_CHECKING`` and ``typing.TYPE_CHECKING`` (or any ``x.TYPE_CHECKING``)."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    """Collect the module names one file imports, split into runtime and type-only."""

    def __init__(self, name: str, is_package: bool, modules: dict[str, Path]) -> None:
        self.name = name
        self.package = name if is_package else name.rpartition(".")[0]
        self.modules = modules
        self.runtime: set[str] = set()
        self.type_only: set[str] = set()
        self.dynamic = False
        self.literals: set[str] = set()
        self._type_depth = 0
        self._main_depth = 0

    def _add(self, target: str) -> None:
        """Record an edge to ``target`` (if internal) and to the packages its import runs."""
        edges = self.type_only if self._type_depth else self.runtime
        # Under ``if __name__ == "__main__":`` the file runs as ``__main__``; importing its own
        # dotted name there loads the importable copy, which is not a self-import.
        if target in self.modules and not (target == self.name and self._main_depth):
            edges.add(target)
        parts = target.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            inside = self.name == parent or self.name.startswith(parent + ".")
            if parent in self.modules and not inside:
                edges.add(parent)

    def _resolve(self, level: int, module: str | None) -> str | None:
        """Absolute name of ``from <dots><module> import ...`` (None when it escapes the root)."""
        if level == 0:
            return module
        base = self.package.split(".")
        if level - 1 > len(base) - 1:
            return None
        base = base[: len(base) - (level - 1)]
        return ".".join([*base, module] if module else base)

    def add_literals(self) -> None:
        """Count every string literal that names a module as a runtime edge (dynamic imports)."""
        for literal in sorted(self.literals):
            self._add(literal)

    def visit_If(self, node: ast.If) -> None:
        if _is_main_guard(node.test):
            self._main_depth += 1
            for child in node.body:
                self.visit(child)
            self._main_depth -= 1
            for child in node.orelse:
                self.visit(child)
            return
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self._type_depth += 1
        for child in node.body:
            self.visit(child)
        self._type_depth -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._resolve(node.level, node.module)
        if base is None:
            return
        attribute = False
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if alias.name != "*" and sub in self.modules:
                self._add(sub)
            else:
                attribute = True
        if attribute:  # a name read off the package (or module) itself: a real dependency on it
            self._add(base)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called in _DYNAMIC_IMPORTERS:
            self.dynamic = True
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in self.modules:
            self.literals.add(node.value)


def build_graph(root: Path = DEFAULT_ROOT) -> Graph:
    """Parse every module under ``root`` and collect its package-internal imports."""
    modules = module_files(root)
    graph = Graph(modules)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        collector = _Collector(name, path.name == "__init__.py", modules)
        collector.visit(tree)
        if collector.dynamic:
            collector.add_literals()
        graph.runtime[name] = collector.runtime
        graph.type_only[name] = collector.type_only - collector.runtime
    return graph


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    work: list[tuple[str, Iterator[str]]] = []  # the explicit DFS stack: node, successors left

    def enter(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        work.append((node, iter(sorted(edges.get(node, ())))))

    for start in sorted(set(edges) | {t for ts in edges.values() for t in ts}):
        if start in index:
            continue
        enter(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    enter(succ)
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Components with more than one module, or one module importing itself; sorted."""
    return sorted(c for c in strongly_connected(edges)
                  if len(c) > 1 or c[0] in edges.get(c[0], set()))


def merged(graph: Graph) -> dict[str, set[str]]:
    """Runtime and type-only edges together (for cycles that only type checkers see)."""
    return {m: graph.runtime.get(m, set()) | graph.type_only.get(m, set()) for m in graph.modules}


def duplicate_names(graph: Graph) -> list[list[str]]:
    """Groups of modules in different packages sharing a file name, each sorted (``__init__``,
    the CLI's subcommand modules and groups wholly inside the storage package aside)."""
    by_name: dict[str, list[str]] = {}
    for module, path in graph.modules.items():
        if path.name != "__init__.py" and not module.startswith(CLI_PACKAGE + "."):
            by_name.setdefault(path.name, []).append(module)
    return sorted(sorted(group) for group in by_name.values() if len(group) > 1 and not all(
        m.startswith(STORAGE_PACKAGE + ".") for m in group))


def oversized(graph: Graph, limit: int) -> list[tuple[str, int]]:
    """Modules with more than ``limit`` lines, as (module, lines), sorted by module."""
    sizes = ((m, len(p.read_text(encoding="utf-8").splitlines())) for m, p in graph.modules.items())
    return sorted((m, n) for m, n in sizes if n > limit)


def format_lines(graph: Graph) -> Iterator[str]:
    """``module -> a, b`` per module (runtime edges), then the type-only edges."""
    for module in sorted(graph.modules):
        yield f"{module} -> {', '.join(sorted(graph.runtime[module]))}".rstrip()
    typed = [m for m in sorted(graph.modules) if graph.type_only[m]]
    if typed:
        yield ""
        yield "# type-only (under if TYPE_CHECKING:), not part of a runtime cycle"
        for module in typed:
            yield f"{module} -> {', '.join(sorted(graph.type_only[module]))}"


def format_dot(graph: Graph) -> Iterator[str]:
    """Graphviz digraph; type-only edges dashed."""
    yield "digraph imports {"
    yield "  rankdir=LR;"
    yield "  node [shape=box, fontsize=10];"
    for module in sorted(graph.modules):
        yield f'  "{module}";'
    for module in sorted(graph.modules):
        for target in sorted(graph.runtime[module]):
            yield f'  "{module}" -> "{target}";'
        for target in sorted(graph.type_only[module]):
            yield f'  "{module}" -> "{target}" [style=dashed];'
    yield "}"


def _print(lines: Iterable[str]) -> None:
    for line in lines:
        sys.stdout.write(line + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                        help="package directory to scan (default: this repository's rlio/)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cycles", action="store_true", help="print import cycles; exit 1 if any")
    mode.add_argument("--dot", action="store_true", help="print the graph for Graphviz")
    mode.add_argument("--check", action="store_true",
                      help="exit 1 on a runtime cycle, a duplicate module file name or (with "
                           "--max-lines) a module over that many lines")
    parser.add_argument("--max-lines", type=int, default=None,
                        help="module size limit for --check (default: none)")
    args = parser.parse_args(argv)
    graph = build_graph(args.root)
    if args.dot:
        _print(format_dot(graph))
        return 0
    if args.cycles or args.check:
        cycles = find_cycles(graph.runtime)
        _print(f"cycle: {' <-> '.join(c)}" for c in cycles)
        status = 1 if cycles else 0
        if args.cycles:
            typed = [c for c in find_cycles(merged(graph)) if c not in cycles]
            _print(f"type-only cycle (not a runtime cycle): {' <-> '.join(c)}" for c in typed)
            if not cycles:
                _print(["no runtime import cycle"])
            return status
        big = [] if args.max_lines is None else oversized(graph, args.max_lines)
        _print(f"too long: {graph.modules[m]} has {n} lines (max {args.max_lines})" for m, n in big)
        twins = duplicate_names(graph)
        _print(f"same file name: {', '.join(g)}" for g in twins)
        if not cycles and not big and not twins:
            _print([f"ok: {len(graph.modules)} modules, no runtime import cycle, "
                    "no two modules with one file name"])
        return 1 if cycles or big or twins else status
    _print(format_lines(graph))
    return 0


if __name__ == "__main__":
    sys.exit(main())
