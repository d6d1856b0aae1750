"""Architecture of the package: no import cycle, small modules, a folder per part.

The checks run ``tools/import_graph.py`` (loaded by path; ``tools/`` is not a package), which
anyone can run by hand: ``python tools/import_graph.py --check``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "rlio"

#: The part folders of DESIGN.md's package layout; each is a package.
PART_FOLDERS = (
    "storage", "storage/gcs", "validate", "validate/checks", "writer", "logtree", "report",
    "_schema", "_codec",
)
#: Prefixes of the flat layout that a part folder replaced (``_checks_metrics.py`` and the like).
FLAT_PREFIXES = ("_checks_", "_fastcheck_", "_normalize_", "_svg_", "_gcs_", "_html_")


def _load_tool() -> ModuleType:
    """Load tools/import_graph.py by path."""
    path = REPO / "tools" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


ig: Any = _load_tool()


@pytest.fixture(scope="module")
def graph() -> Any:
    """The import graph of this repository's rlio/."""
    return ig.build_graph(PACKAGE)


def test_no_runtime_import_cycle(graph: Any) -> None:
    """No import cycle in rlio/, counting imports inside functions and importlib literals."""
    assert ig.find_cycles(graph.runtime) == []


def test_no_two_modules_share_a_file_name(graph: Any) -> None:
    """No two modules in different packages share a file name (the CLI's subcommands and a
    storage backend's modules mirroring the interface's aside)."""
    assert ig.duplicate_names(graph) == []


def test_no_function_above_complexity_15() -> None:
    """No function in rlio/ or tools/ has a cyclomatic complexity above 15 (ruff's C901)."""
    ruff = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with .[dev])")
    done = subprocess.run([ruff, "check", "--no-cache", "--select", "C901", "--output-format",
                           "concise", "rlio", "tools"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_holds_no_native_code() -> None:
    """rlio is pure Python: no C source, header or shared object under rlio/."""
    assert [p for p in PACKAGE.rglob("*") if p.suffix in (".c", ".h", ".so", ".pyd")] == []


def test_part_folders_are_packages() -> None:
    """Each part of DESIGN.md's layout is a folder with an __init__.py."""
    missing = [f for f in PART_FOLDERS if not (PACKAGE / f / "__init__.py").is_file()]
    assert missing == []


def test_no_flat_layout_module_names(graph: Any) -> None:
    """No module is named with a folder-like prefix (``_checks_x``): that part is a folder."""
    names = {m.rpartition(".")[2] for m in graph.modules if m != "rlio"}
    flat = sorted(n for n in names if n.startswith(FLAT_PREFIXES) or re.match(r"_[a-z0-9]+_", n))
    assert flat == []


def _write(root: Path, files: dict[str, str]) -> Path:
    """Write a synthetic package from relative paths and their text."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_tool_finds_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    """A cycle closed only by an import inside a function is found; --check exits 1 naming it."""
    pkg = _write(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from pkg.sub import b\n",
        "sub/__init__.py": "",
        "sub/b.py": "def f():\n    from .. import a\n    return a\n",
        "c.py": "X = 1\n",
    })
    g = ig.build_graph(pkg)
    assert g.runtime["pkg.a"] == {"pkg.sub", "pkg.sub.b"}
    assert g.runtime["pkg.sub.b"] == {"pkg.a"}
    assert ig.find_cycles(g.runtime) == [["pkg.a", "pkg.sub.b"]]
    assert ig.main(["--root", str(pkg), "--check"]) == 1
    assert ig.main(["--root", str(pkg), "--cycles"]) == 1


def test_tool_counts_package_init_and_importlib_edges(tmp_path: Path) -> None:
    """Importing pkg.p.m runs pkg/p/__init__.py, and importlib string literals are edges."""
    pkg = _write(tmp_path / "pkg", {
        "__init__.py": "import importlib\n_LAZY = {'X': 'pkg.low'}\n"
                       "def get(n):\n    return importlib.import_module(_LAZY[n])\n",
        "p/__init__.py": "from pkg.p.m import Y\n",
        "p/m.py": "from pkg import low\nY = 1\n",
        "low.py": "from pkg.p.m import Y\n",
    })
    g = ig.build_graph(pkg)
    assert g.runtime["pkg"] == {"pkg.low"}
    assert g.runtime["pkg.p"] == {"pkg.p.m"}  # its own package is already loaded: no edge back
    assert g.runtime["pkg.p.m"] == {"pkg.low"}
    assert g.runtime["pkg.low"] == {"pkg.p", "pkg.p.m"}
    assert ig.find_cycles(g.runtime) == [["pkg.low", "pkg.p", "pkg.p.m"]]


def test_tool_lists_type_only_edges_apart(tmp_path: Path) -> None:
    """Imports under if TYPE_CHECKING: are type-only edges and make no runtime cycle."""
    pkg = _write(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from pkg.b import B\n",
        "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"
                "else:\n    import pkg.c\nB = 1\n",
        "c.py": "",
    })
    g = ig.build_graph(pkg)
    assert g.runtime["pkg.b"] == {"pkg.c"}
    assert g.type_only["pkg.b"] == {"pkg.a"}
    assert ig.find_cycles(g.runtime) == []
    assert ig.find_cycles(ig.merged(g)) == [["pkg.a", "pkg.b"]]
    assert ig.main(["--root", str(pkg), "--check"]) == 0


def test_tool_flags_long_modules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check exits 1 and names a module longer than --max-lines."""
    pkg = _write(tmp_path / "pkg", {"__init__.py": "", "big.py": "x = 1\n" * 6})
    assert ig.oversized(ig.build_graph(pkg), 5) == [("pkg.big", 6)]
    assert ig.main(["--root", str(pkg), "--check", "--max-lines", "5"]) == 1
    assert "big.py has 6 lines (max 5)" in capsys.readouterr().out


def test_architecture_document_is_linked_and_names_real_modules() -> None:
    """docs/architecture.md exists, the README links it, and every ``rlio/...`` path it names
    exists (so the page stays true as modules move)."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "docs/architecture.md" in (REPO / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(rlio/[A-Za-z0-9_/.]+)`", doc))
    assert named, "docs/architecture.md names no module"
    assert sorted(p for p in named if not (REPO / p.rstrip("/")).exists()) == []
