"""`rlio validate`: formats, exit codes 0/1/2 and --fail-on, in-process and as a real subprocess."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from factories import cookbook_run, jsonl, run_cli, trajectory, write

from rlio import layout
from rlio.cli import main

KEYS = ["code", "severity", "file", "line", "pointer", "message"]


def broken_run(root: Path) -> Path:
    """A cookbook run with one error: a record whose iteration is not its file's."""
    run = cookbook_run(root)
    rec = trajectory(1, 0, 0)
    rec["iteration"] = 9
    write(run, layout.iteration_path("flat", 1, "rollout_summaries"), jsonl([rec]))
    return run


def test_json_format_clean_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json of one run prints version, run, ok, counts, its findings, the runs list
    and unreadable paths; a run with warnings only exits 0."""
    code = main(["validate", str(cookbook_run(tmp_path / "run")), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert list(doc) == ["version", "run", "ok", "counts", "findings", "runs", "unreadable"]
    assert doc["ok"] is True and doc["unreadable"] == []
    assert doc["run"] == str(tmp_path / "run")
    assert [r["findings"] for r in doc["runs"]] == [doc["findings"]]
    assert set(doc["counts"]) == {"error", "warning", "info"}
    assert doc["counts"]["warning"] >= 1
    assert all(list(f) == KEYS for f in doc["findings"])


def test_json_format_broken_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An error-level finding makes the exit code 1 and ok false, at the right file and line."""
    code = main(["validate", str(broken_run(tmp_path / "run")), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["ok"] is False
    assert {"code": "RL401", "severity": "error",
            "file": layout.iteration_path("flat", 1, "rollout_summaries"), "line": 1,
            "pointer": "/iteration"}.items() <= next(
        f for f in doc["findings"] if f["code"] == "RL401").items()


def test_fail_on_warning_and_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--fail-on warning (or info) turns a warnings-only run into exit code 1."""
    run = str(cookbook_run(tmp_path / "run"))
    assert main(["validate", run, "--fail-on", "warning"]) == 1
    assert main(["validate", run, "--fail-on", "info"]) == 1
    assert main(["validate", run, "--fail-on", "error"]) == 0
    capsys.readouterr()


def test_text_format_is_compiler_style(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Text output has file:line: pointer: CODE severity: message lines and a summary line."""
    main(["validate", str(broken_run(tmp_path / "run"))])
    out = capsys.readouterr().out.splitlines()
    path = layout.iteration_path("flat", 1, "rollout_summaries")
    assert any(line.startswith(f"{path}:1: /iteration: RL401 error: ") for line in out)
    assert "FAILED" in out[-1] and "error(s)" in out[-1]


def test_text_folds_repeats_of_one_code_and_all_lists_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three RL401 in one file print as one line with a count, infos of one code in several
    files as one line; --all prints each finding; JSON still lists all of them."""
    run = cookbook_run(tmp_path / "run", 4)  # 4 logtrees with a naive started_at: 4 RL204
    path = layout.iteration_path("flat", 1, "rollout_summaries")
    write(run, path, jsonl([dict(trajectory(1, 0, t), iteration=9) for t in range(3)]))
    main(["validate", str(run)])
    folded = capsys.readouterr().out.splitlines()
    rl401 = [line for line in folded if " RL401 " in line]
    assert len(rl401) == 1
    assert rl401[0].startswith(f"{path}:1: /iteration: RL401 error: ")
    assert rl401[0].endswith("[+2 more RL401 in this file (lines 2, 3); --all lists them]")
    rl204 = [line for line in folded if " RL204 " in line]
    assert len(rl204) == 1 and rl204[0].endswith("[+3 more RL204 in 4 files; --all lists them]")
    main(["validate", str(run), "--all"])
    every = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[0] for line in every if " RL401 " in line] == [
        f"{path}:{n}" for n in (1, 2, 3)]
    assert len([line for line in every if " RL204 " in line]) == 4
    main(["validate", str(run), "--format", "json"])
    assert [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]].count("RL401") == 3


def test_github_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format github prints one workflow annotation per finding (info as notice), file=
    relative to the current directory."""
    run = broken_run(tmp_path / "run")
    assert main(["validate", str(run), "--format", "github"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    path = layout.iteration_path("flat", 1, "rollout_summaries")
    rel = os.path.relpath(run / path)
    assert any(line.startswith(f"::error file={rel},line=1,title=RL401::/iteration: ")
               for line in lines)
    assert any(line.startswith("::notice ") for line in lines)


def test_missing_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run that does not exist exits 2 with a message on stderr; --format json still prints
    one JSON document naming the path."""
    assert main(["validate", str(tmp_path / "absent"), "--format", "json"]) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["ok"] is False and doc["runs"] == []
    assert [u["path"] for u in doc["unreadable"]] == [str(tmp_path / "absent")]
    assert "absent" in captured.err


def test_misuse_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown --format is a usage error: exit status 2."""
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(tmp_path), "--format", "xml"])
    assert exc.value.code == 2
    capsys.readouterr()


def test_subprocess_exit_codes_and_json(tmp_path: Path) -> None:
    """The real command exits 0 (clean), 1 (errors), 2 (no run) and prints parseable JSON."""
    clean = run_cli("validate", str(cookbook_run(tmp_path / "clean")), "--format", "json")
    assert clean.returncode == 0, clean.stderr
    assert list(json.loads(clean.stdout)) == ["version", "run", "ok", "counts", "findings",
                                              "runs", "unreadable"]
    broken = run_cli("validate", str(broken_run(tmp_path / "broken")), "--format", "json")
    assert broken.returncode == 1, broken.stderr
    doc = json.loads(broken.stdout)
    assert doc["ok"] is False and all(list(f) == KEYS for f in doc["findings"])
    missing = run_cli("validate", str(tmp_path / "absent"))
    assert missing.returncode == 2
    assert missing.stdout == "" and "Traceback" not in missing.stderr
    assert "no such file or directory" in missing.stderr
    warned = run_cli("validate", str(tmp_path / "clean"), "--fail-on", "warning")
    assert warned.returncode == 1
