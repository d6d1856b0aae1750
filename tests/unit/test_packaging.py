"""The wheel ships the schemas inside the package, so an installed rlio finds them anywhere."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_contains_schemas_and_runs_from_any_directory(tmp_path: Path) -> None:
    """A built wheel holds rlio/schemas/*.json and py.typed; installed, `rlio schema` works."""
    pytest.importorskip("hatchling")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(dist)],
                   cwd=ROOT, check=True, capture_output=True)
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "schemas").glob("*.schema.json")}
    assert {f"rlio/schemas/{n}" for n in shipped} <= names
    assert "rlio/py.typed" in names
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(target), str(wheel)], check=True, capture_output=True)
    out = subprocess.run(
        [sys.executable, "-m", "rlio", "schema", "metrics-line"], cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    ).stdout
    assert json.loads(out)["$id"] == "urn:rlio:schema:metrics-line:1"
    probe = subprocess.run(
        [sys.executable, "-c", "import rlio.schema as s; print(s.schema_dir())"], cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    ).stdout
    assert probe.strip().startswith(str(target))
