"""``rlio top`` as a command: registered, a missing extra and a missing run each one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import cli, run_python

from rlio.demo import run_demo
from rlio.errors import install_line


def test_without_textual_rlio_top_names_the_extra_in_one_line(tmp_path: Path) -> None:
    """With textual unimportable, rlio top exits 2 with one line naming pip install
    'rlio[tui]'."""
    run_demo(tmp_path / "run", iterations=1)
    code = ("import sys; sys.modules['textual'] = None\n"
            "from rlio.cli import main; raise SystemExit(main(['top', sys.argv[1]]))")
    proc = run_python(code, str(tmp_path / "run"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("rlio: error: rlio top needs textual, which is not installed")
    assert proc.stderr.endswith(f"{install_line('tui')}\n") and proc.stderr.count("\n") == 1


def test_a_path_without_a_run_is_one_line(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A folder holding no run exits 2 before any screen is drawn."""
    (tmp_path / "empty").mkdir()
    code, out, err = cli(capsys, "top", str(tmp_path / "empty"))
    assert code == 2 and out == ""
    assert err.startswith("rlio: error: ") and err.count("\n") == 1 and "empty" in err
