"""The wheel: pure Python (py3-none-any), schemas inside the package, a lean base install, and
gs:// naming its extra."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from factories import run_python

from rlio.errors import install_line

ROOT = Path(__file__).resolve().parents[2]
#: Distributions the base install must never pull in (the gs:// stack lives in rlio[gcs]).
HEAVY = re.compile(
    r"^(google.*|grpc.*|aiohttp|gcsfs|fsspec|boto3|botocore|azure.*|cryptography|requests|pyarrow"
    r"|pandas)$")


def canonical(name: str) -> str:
    """A distribution name normalized (``Typing_Extensions`` -> ``typing-extensions``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheel(dist: Path) -> tuple[Path, str]:
    """Build this tree's wheel into ``dist`` with hatchling (no network, no build isolation);
    return the wheel and the build's output."""
    pytest.importorskip("hatchling")
    done = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d",
                           str(dist)], cwd=ROOT, check=True, capture_output=True, text=True)
    (built,) = dist.glob("*.whl")
    return built, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this tree (what ``pip wheel .`` builds here)."""
    return build_wheel(tmp_path_factory.mktemp("dist"))[0]


def wheel_tags(wheel: Path) -> list[str]:
    """The wheel's tags, as its file name gives them (``py3-none-any``)."""
    from packaging.utils import parse_wheel_filename

    return sorted(str(tag) for tag in parse_wheel_filename(wheel.name)[3])


def wheel_file(wheel: Path, name: str) -> str:
    """The text of the wheel's ``*.dist-info/NAME`` (``METADATA``, ``WHEEL``)."""
    with zipfile.ZipFile(wheel) as zf:
        found = next(n for n in zf.namelist() if n.endswith(f".dist-info/{name}"))
        return zf.read(found).decode()


def wheel_metadata(wheel: Path) -> Parser:
    """The parsed METADATA of ``wheel``."""
    return Parser().parsestr(wheel_file(wheel, "METADATA"))  # type: ignore[return-value]


def base_closure(requirements: list[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions the base requirements pull in, transitively (no extras).

    Markers are evaluated for this interpreter with no extra selected: exactly what
    ``pip install rlio`` resolves, read from the installed distributions' own metadata.
    """
    from packaging.requirements import Requirement

    found: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonical(req.name)
        if name in found:
            continue
        dist = metadata.distribution(name)
        assert dist.version in req.specifier or not req.specifier, (name, dist.version)
        found[name] = dist
        todo.extend(Requirement(r) for r in dist.requires or [])
    return found


def test_wheel_contains_schemas_license_and_typing(wheel: Path) -> None:
    """The wheel holds rlio/schemas/*.json, py.typed and the LICENSE; classifiers say Typed."""
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "schemas").glob("*.schema.json")}
    assert {f"rlio/schemas/{n}" for n in shipped} <= names
    assert "rlio/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    meta = wheel_metadata(wheel)
    assert "Typing :: Typed" in meta.get_all("Classifier", [])
    assert meta["License-Expression"] == "MIT"
    assert "Copyright (c) 2026 the rlio authors" in (ROOT / "LICENSE").read_text()


def test_wheel_is_pure_python(wheel: Path) -> None:
    """The wheel is py3-none-any and purelib, and neither it nor the tree holds C source, a
    shared object or a build hook."""
    import tomllib

    assert wheel_tags(wheel) == ["py3-none-any"]
    assert "Root-Is-Purelib: true" in wheel_file(wheel, "WHEEL")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".c", ".h", ".so", ".pyd", ".pyi"))], names
    assert not [p for p in (ROOT / "rlio").rglob("*") if p.suffix in (".c", ".h", ".so")]
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    assert "hooks" not in build["targets"]["wheel"]
    assert not (ROOT / "hatch_build.py").exists()


def test_base_install_is_small_and_pulls_no_cloud_stack(wheel: Path) -> None:
    """The wheel's base Requires-Dist closure has no google/grpc/aiohttp/gcsfs/fsspec package,
    stays at a dozen distributions, and is the list the README gives."""
    meta = wheel_metadata(wheel)
    base = [r for r in meta.get_all("Requires-Dist", []) if "extra ==" not in r]
    closure = base_closure(base)
    assert [n for n in closure if HEAVY.match(n)] == []
    assert len(closure) <= 12, sorted(closure)
    gcs = [r for r in meta.get_all("Requires-Dist", []) if "extra == 'gcs'" in r]
    assert any(r.startswith("gcsfs") for r in gcs)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"base install pulls in (.*?)\.\n", readme, flags=re.S)
    assert listed, "README: keep the sentence 'The base install pulls in ...'"
    assert sorted(["rlio", *closure]) == sorted(re.findall(r"`([a-z0-9-]+)`", listed[1])), \
        "update the README's list of the base install's packages"


def test_wheel_in_a_fresh_venv_writes_and_validates_a_local_run(wheel: Path,
                                                                tmp_path: Path) -> None:
    """A fresh venv holding only the wheel and its base closure runs the demo and validate;
    gs:// there fails with one line naming pip install 'rlio[gcs]' (exit 2)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--no-compile", "--target", str(site), str(wheel)], check=True,
                   capture_output=True)
    # the base closure, copied file by file from this interpreter's installed distributions
    meta = wheel_metadata(wheel)
    here = Path(sysconfig.get_paths()["purelib"])
    for dist in base_closure([r for r in meta.get_all("Requires-Dist", [])
                              if "extra ==" not in r]).values():
        for rel in dist.files or []:
            src = Path(str(dist.locate_file(rel)))
            if src.is_file() and here in src.parents and "__pycache__" not in rel.parts:
                dst = site / src.relative_to(here)
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    probe = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m, json, rlio, rlio.schema as s; "
         "print(json.dumps([sorted(d.metadata['Name'].lower() for d in m.distributions()), "
         "str(s.schema_dir())]))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    names, schema_dir = json.loads(probe.stdout)
    assert "rlio" in names and not [n for n in names if HEAVY.match(canonical(n))]
    assert schema_dir.startswith(str(site))

    def rlio_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(py), "-m", "rlio", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=False, timeout=120)

    made = rlio_cli("demo", "out/demo", "--layout", "nested", "--iterations", "3")
    assert made.returncode == 0, made.stderr
    checked = rlio_cli("validate", "out/demo", "--format", "json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["ok"] is True
    assert json.loads(rlio_cli("schema", "metrics-line").stdout)["$id"] == \
        "urn:rlio:schema:metrics-line:1"
    for command in ("validate", "resume", "report"):
        for uri, extra in (("gs://bucket/run", "gcs"), ("s3://bucket/run", "s3"),
                           ("az://container/run", "azure")):
            out = rlio_cli(command, uri)
            assert out.returncode == 2, (command, out.stderr)
            assert out.stderr.count("\n") == 1, out.stderr
            assert f"pip install 'rlio[{extra}]'" in out.stderr, out.stderr
            assert "Traceback" not in out.stderr


def test_gs_without_gcsfs_raises_missing_extra_error() -> None:
    """With gcsfs unimportable, opening gs:// raises MissingExtraError (an ImportError) naming
    the install line that works from this checkout, from the writer and the reader alike."""
    proc = run_python("""
        import sys
        sys.modules["gcsfs"] = None
        from rlio import MissingExtraError, RunWriter, read_resume_state
        for call in (lambda: RunWriter("gs://bucket/run"), lambda: read_resume_state("gs://b/r")):
            try:
                call()
            except MissingExtraError as exc:
                assert isinstance(exc, ImportError)
                print(exc)
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(install_line("gcs") in line for line in lines), lines


def test_s3_without_boto3_raises_missing_extra_error() -> None:
    """With boto3 unimportable, opening s3:// raises MissingExtraError naming rlio[s3]."""
    proc = run_python("""
        import sys
        sys.modules["boto3"] = None
        from rlio import MissingExtraError, RunWriter, read_resume_state
        for call in (lambda: RunWriter("s3://bucket/run"), lambda: read_resume_state("s3://b/r")):
            try:
                call()
            except MissingExtraError as exc:
                assert isinstance(exc, ImportError)
                print(exc)
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(install_line("s3") in line for line in lines), lines


def test_az_without_azure_storage_blob_raises_missing_extra_error() -> None:
    """With azure-storage-blob unimportable, opening az:// raises MissingExtraError naming
    rlio[azure]."""
    proc = run_python("""
        import sys
        sys.modules["azure.storage.blob"] = None
        from rlio import MissingExtraError, RunWriter, read_resume_state
        for call in (lambda: RunWriter("az://c/run"), lambda: read_resume_state("az://c/r")):
            try:
                call()
            except MissingExtraError as exc:
                assert isinstance(exc, ImportError)
                print(exc)
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and all(install_line("azure") in line for line in lines), lines


def test_pyproject_extras_keep_gcs_out_of_the_base() -> None:
    """pyproject: gcsfs only in the gcs extra, boto3 only in s3; all includes both; dev
    includes all and test."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"]
                if re.match(r"(gcsfs|fsspec|boto3|azure)\b", d)]
    extras = project["optional-dependencies"]
    assert any(d.startswith("gcsfs") for d in extras["gcs"])
    assert any(d.startswith("boto3") for d in extras["s3"])
    assert any(d.startswith("azure-storage-blob") for d in extras["azure"])
    inside = re.fullmatch(r"rlio\[(.*)\]", extras["all"][0])
    assert inside and {"gcs", "s3", "azure"} <= set(inside[1].split(","))
    assert {x for d in extras["dev"] if (m := re.fullmatch(r"rlio\[(.*)\]", d))
            for x in m[1].split(",")} >= {"test", "all"}
    assert os.path.basename(str(ROOT / "LICENSE")) == "LICENSE"


def test_install_line_from_a_checkout_names_the_checkout_editable() -> None:
    """Run from a checkout, the install line is this interpreter's pip installing the checkout's
    extra in editable mode (a line that works where `pip install 'rlio[gcs]'` finds nothing)."""
    line = install_line("gcs")
    assert line == f"{sys.executable} -m pip install -e '{ROOT}[gcs]'"
    assert (ROOT / "pyproject.toml").is_file()


def test_every_extra_is_listed_in_the_readme_and_all() -> None:
    """Every extra of pyproject.toml (but test, inside dev) is named in the README, and `all`
    holds every user-facing extra (all but test, dev and all)."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [e for e in extras if f"[{e}]" not in readme and e != "test"] == []
    inside = set(re.fullmatch(r"rlio\[(.*)\]", extras["all"][0])[1].split(","))
    assert inside == set(extras) - {"test", "dev", "all"}


def test_the_wheel_ships_every_page_template(wheel: Path) -> None:
    """Every Jinja2 template under rlio/templates is in the wheel (the pages render from them)."""
    shipped = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted((ROOT / "rlio" / "templates").glob("*.j2"))
    assert templates and all(f"rlio/templates/{t.name}" in shipped for t in templates)
