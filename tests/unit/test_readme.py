"""The README keeps the two set-up commands and the finding catalogue in sync with the code."""

from __future__ import annotations

from pathlib import Path

from rlio.findings import CATALOGUE, catalogue_markdown

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_readme_has_the_finding_catalogue_verbatim() -> None:
    """Every catalogue code, severity and title appears in the README table exactly."""
    assert catalogue_markdown() in README
    assert all(f"| {code} |" in README for code in CATALOGUE)


def test_readme_has_install_demo_and_test_commands() -> None:
    """The set-up section holds the install + demo + validate command and the test command."""
    assert "pip install -e '.[dev]'" in README and "rlio demo" in README
    assert "rlio validate out/demo" in README
    assert ".venv/bin/python -m pytest -m 'not slow'" in README
    ci = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text(encoding="utf-8")
    assert ".venv/bin/python -m pytest -m 'not slow'" in ci
