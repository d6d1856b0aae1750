"""Runs every case of the language-neutral conformance corpus (conformance/cases/) against rlio.

The matching rule is the one conformance/README.md documents; ``match_case`` of
conformance/check.py is its reference implementation. The corpus is also checked for shape, size,
coverage of the finding catalogue, and for being exactly what conformance/build_cases.py writes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rlio.cli import main
from rlio.findings import CATALOGUE
from rlio.validate import validate_run

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "conformance"
CASES = CONFORMANCE / "cases"
CASE_NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir())
KEYS = ("code", "severity", "file", "line", "pointer")
EXPECTED_KEYS = {"description", "spec", "exit_code", "findings", "forbidden_codes", "no_errors",
                 "filesystem_only"}

#: Catalogue codes no static corpus can reproduce, with the reason. Everything else must be
#: expected by at least one case.
NOT_REPRODUCIBLE: dict[str, str] = {
    "RL114": "needs a line over 64 MiB or a document over 512 MiB; the corpus stays under 1 MB",
    "RL115": "needs a line over 1 MiB; the corpus stays under 1 MB",
}


def _load(name: str) -> ModuleType:
    """Import conformance/<name>.py (the corpus folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, CONFORMANCE / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[name]
    return mod


CHECK = _load("check")
match_case = CHECK.match_case


def load_expected(name: str) -> dict[str, Any]:
    """The parsed expected.json of case ``name``."""
    doc: dict[str, Any] = json.loads((CASES / name / "expected.json").read_text(encoding="utf-8"))
    return doc


def shape_problems(actual: list[dict[str, Any]]) -> list[str]:
    """Findings: the docs/format.md §10 shape, known code, relative file, 1-based line, pointer."""
    problems = []
    for f in actual:
        ok = (
            f["code"] in CATALOGUE
            and f["severity"] in ("error", "warning", "info")
            and isinstance(f["file"], str) and not f["file"].startswith("/")
            and "\\" not in f["file"] and ".." not in f["file"].split("/")
            and (f["line"] is None or (isinstance(f["line"], int) and f["line"] >= 1))
            and isinstance(f["pointer"], str) and (f["pointer"] == "" or f["pointer"][0] == "/")
            and isinstance(f["message"], str) and f["message"].strip() != ""
            and "\n" not in f["message"]
        )
        if not ok:
            problems.append(f"finding breaks the docs/format.md §10 shape: {f}")
    return problems


def _report(problems: list[str], actual: list[dict[str, Any]]) -> str:
    listing = "\n".join(
        f"  {f['code']} {f['severity']} {f['file']}:{f['line']} {f['pointer']!r}: {f['message']}"
        for f in actual)
    return "\n".join(problems) + "\nactual findings:\n" + listing


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_api(name: str) -> None:
    """validate_run() on the case's run/ reports every expected finding and nothing forbidden."""
    expected = load_expected(name)
    run = CASES / name / "run"
    if expected["exit_code"] == 2:
        with pytest.raises(OSError):
            validate_run(str(run))
        return
    actual = [f.to_dict() for f in validate_run(str(run)).findings]
    problems = match_case(expected, actual) + shape_problems(actual)
    assert not problems, _report(problems, actual)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_cli(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`rlio validate RUN --format json` exits with the case's exit_code and prints its findings
    (a run that cannot be read: still one JSON document, naming it unreadable)."""
    expected = load_expected(name)
    code = main(["validate", str(CASES / name / "run"), "--format", "json"])
    out = capsys.readouterr().out
    assert code == expected["exit_code"], out
    doc = json.loads(out)
    if code == 2:
        assert doc["ok"] is False and doc["runs"] == [] and len(doc["unreadable"]) == 1
        return
    assert set(doc) == {"version", "run", "ok", "counts", "findings", "runs", "unreadable"}
    assert doc["ok"] == (code == 0)
    assert all(list(f) == [*KEYS, "message"] for f in doc["findings"])
    problems = match_case(expected, doc["findings"])
    assert not problems, _report(problems, doc["findings"])


def test_check_script_runs_a_validator_command() -> None:
    """conformance/check.py runs `python -m rlio validate` per case and reports pass or fail."""
    cases = ["clean_nested", "torn_metrics", "run_is_a_file"]
    argv = [sys.executable, str(CONFORMANCE / "check.py")]
    for c in cases:
        argv += ["--case", c]
    proc = subprocess.run([*argv, "--", sys.executable, "-m", "rlio", "validate", "{run}",
                           "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [*(f"ok   {c}" for c in sorted(cases)), "all cases passed"]
    # A command that reports nothing fails the cases that expect findings.
    proc = subprocess.run([*argv, "--", sys.executable, "-c",
                           "import sys; print('{\"findings\": []}'); sys.argv[1]", "{run}"],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 1
    assert "FAIL torn_metrics" in proc.stdout and "FAIL run_is_a_file" in proc.stdout
    assert "ok   clean_nested" in proc.stdout


def _object_store_cases() -> list[str]:
    return [n for n in CASE_NAMES if not load_expected(n).get("filesystem_only")]


@pytest.mark.parametrize("name", _object_store_cases())
def test_case_on_memory_backend(name: str) -> None:
    """The same case uploaded to a memory:// object store gives a matching report."""
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/rlio-conformance/{name}"
    run = CASES / name / "run"
    for dirpath, _dirnames, filenames in os.walk(run):
        for n in filenames:
            p = Path(dirpath) / n
            fs.pipe(f"{root}/{p.relative_to(run).as_posix()}", p.read_bytes())
    try:
        if load_expected(name)["exit_code"] == 2:  # no run there: the API raises
            with pytest.raises(OSError):
                validate_run(f"memory://{root}")
            return
        actual = [f.to_dict() for f in validate_run(f"memory://{root}").findings]
    finally:
        fs.rm(root, recursive=True)
    problems = match_case(load_expected(name), actual) + shape_problems(actual)
    assert not problems, _report(problems, actual)


def test_matching_rule_rejects_what_it_should() -> None:
    """match_case flags a missing finding, a forbidden code and an error in a no-error case."""
    exp = {"findings": [{"code": "RL103", "severity": "warning", "file": "metrics.jsonl",
                         "line": 4, "pointer": ""}],
           "forbidden_codes": ["RL102"], "no_errors": True}
    hit = {**exp["findings"][0], "message": "torn"}  # type: ignore[index]
    assert match_case(exp, [hit]) == []
    assert match_case(exp, [{**hit, "line": 3}])
    assert match_case(exp, [hit, {**hit, "code": "RL102", "severity": "warning"}])
    assert match_case(exp, [hit, {**hit, "code": "RL201", "severity": "error"}])
    assert match_case({**exp, "findings": exp["findings"] * 2}, [hit])  # type: ignore[operator]


def test_expected_files_are_well_formed() -> None:
    """Every expected.json uses only the documented keys, known codes and a consistent exit_code."""
    assert len(CASE_NAMES) >= 30
    for name in CASE_NAMES:
        exp = load_expected(name)
        assert set(exp) <= EXPECTED_KEYS and {"description", "spec", "exit_code", "findings",
                                               "no_errors"} <= set(exp), name
        assert exp["exit_code"] in (0, 1, 2), name
        errors = [f for f in exp["findings"] if f["severity"] == "error"]
        if exp["exit_code"] != 2:
            assert exp["exit_code"] == (1 if errors else 0), name
            assert exp["no_errors"] == (not errors), name
        for f in exp["findings"]:
            assert list(f) == list(KEYS), (name, f)
            assert f["code"] in CATALOGUE, (name, f)
            assert f["severity"] == str(CATALOGUE[f["code"]].severity), (name, f)
        for code in exp.get("forbidden_codes", []):
            assert code in CATALOGUE, (name, code)
        assert (CASES / name / "run").exists() or (CASES / name / "run").is_symlink(), name


def test_corpus_covers_the_catalogue() -> None:
    """Every catalogue code is expected by some case, unless listed as not reproducible."""
    seen = {f["code"] for n in CASE_NAMES for f in load_expected(n)["findings"]}
    missing = set(CATALOGUE) - seen - set(NOT_REPRODUCIBLE)
    assert not missing, f"codes no conformance case expects: {sorted(missing)}"
    assert set(NOT_REPRODUCIBLE) <= set(CATALOGUE)


def test_both_layouts_are_covered() -> None:
    """Clean and broken cases exist in both the flat and the nested layout."""
    flat = nested = 0
    for name in CASE_NAMES:
        for _dirpath, dirnames, filenames in os.walk(CASES / name / "run"):
            names = dirnames + filenames
            flat += any("_iteration_" in n for n in names)
            nested += any(n.startswith("iteration_") for n in dirnames)
    assert flat >= 10 and nested >= 10


def test_corpus_is_small_and_git_safe() -> None:
    """The corpus stays under 1 MB, keeps bytes exactly (-text) and has git-safe file names."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(CASES):
        for n in dirnames + filenames:
            assert n not in (".git", ".gitattributes", ".gitignore", ".gitmodules"), n
            n.encode("utf-8")  # names are valid UTF-8 (str from a UTF-8 filesystem)
            p = Path(dirpath) / n
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    assert total < 1_000_000
    assert (CONFORMANCE / ".gitattributes").read_text().split() == ["*", "-text"]


def test_corpus_is_what_the_generator_writes(tmp_path: Path) -> None:
    """build_cases.py regenerates the committed corpus byte for byte (symlinks included)."""
    mod = _load("build_cases")
    out = tmp_path / "cases"
    assert mod.main([str(out)]) == 0

    def tree(base: Path) -> dict[str, bytes | str]:
        found: dict[str, bytes | str] = {}
        for dirpath, dirnames, filenames in os.walk(base):
            for n in dirnames + filenames:
                p = Path(dirpath) / n
                rel = p.relative_to(base).as_posix()
                if p.is_symlink():
                    found[rel] = "-> " + os.readlink(p)
                elif p.is_file():
                    found[rel] = p.read_bytes()
        return found

    committed, regenerated = tree(CASES), tree(out)
    assert committed.keys() == regenerated.keys()
    differ = [k for k in committed if committed[k] != regenerated[k]]
    assert not differ, f"regenerate the corpus (python conformance/build_cases.py): {differ}"
