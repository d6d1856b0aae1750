"""Fleet validation: discovery at any depth, validate_runs over executors, fleet output formats."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from factories import cookbook_run, jsonl, run_cli, trajectory, write

from rlio import FleetReport, layout, validate_run, validate_runs
from rlio.cli import main
from rlio.errors import NotARunError
from rlio.validate.fleet import Progress, discover

RUN_KEYS = ["run", "ok", "counts", "findings"]


def sweep(root: Path) -> dict[str, Path]:
    """A sweep folder: two clean runs, one nested two levels down, one broken, one inside
    another run, and folders holding no run."""
    runs = {
        "a": cookbook_run(root / "a"),
        "deep": cookbook_run(root / "group" / "sub" / "deep", layout_name="nested"),
        "broken": cookbook_run(root / "broken"),
        "child": cookbook_run(root / "a" / "child"),
    }
    rec = trajectory(1, 0, 0)
    rec["iteration"] = 9
    write(runs["broken"], layout.iteration_path("flat", 1, "rollout_summaries"), jsonl([rec]))
    write(root / "notes", "readme.txt", "not a run")
    (root / "empty").mkdir()
    return runs


def test_discover_finds_runs_at_any_depth(tmp_path: Path) -> None:
    """Every run under a folder is found, nested runs included, and nothing else."""
    runs = sweep(tmp_path)
    assert sorted(discover([tmp_path])) == sorted(str(p) for p in runs.values())
    assert discover([runs["a"]])[0] == str(runs["a"])


def test_discover_skips_a_runs_iteration_folders(tmp_path: Path) -> None:
    """A nested-layout run's iteration folders are not searched for runs (they are its own)."""
    run = cookbook_run(tmp_path / "r", layout_name="nested")
    write(run / "iteration_000001", "config.json", "{}")  # a name a run folder would hold
    assert discover([tmp_path]) == [str(run)]


@pytest.mark.parametrize("what", ["file", "empty", "no run"])
def test_not_a_run_raises(tmp_path: Path, what: str) -> None:
    """A file, an empty folder or a folder of other files: discover and validate_run refuse."""
    target = tmp_path / "x"
    if what == "file":
        write(tmp_path, "x", "hello")
    elif what == "empty":
        target.mkdir()
    else:
        write(target / "deeper", "notes.txt", "hello")
    with pytest.raises(NotARunError, match="no run found"):
        discover([target])
    with pytest.raises(NotARunError, match="no run found"):
        validate_run(target)


def test_validate_runs_pool_matches_inline(tmp_path: Path) -> None:
    """The default process pool, a thread pool passed in and jobs=1 give the same report."""
    sweep(tmp_path)
    inline = validate_runs([tmp_path], jobs=1)
    pooled = validate_runs([tmp_path], jobs=2)
    with ThreadPoolExecutor(2) as ex:
        threaded = validate_runs([tmp_path], executor=ex)
    assert isinstance(inline, FleetReport)
    assert inline == pooled == threaded
    assert len(inline.runs) == 4 and not inline.ok and inline.exit_code() == 1


def test_progress_callback(tmp_path: Path) -> None:
    """progress gets the total first, then one event per run, with files and bytes read."""
    sweep(tmp_path)
    events: list[Progress] = []
    validate_runs([tmp_path], jobs=1, progress=events.append)
    assert [e.done for e in events] == [0, 1, 2, 3, 4]
    assert {e.total for e in events} == {4}
    assert events[-1].files > 0 and events[-1].bytes > 0


def test_fleet_json_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json over a sweep: one document, a runs list (run, ok, counts, findings) and
    an overall ok; exit 1 for the broken run."""
    runs = sweep(tmp_path)
    code = main(["validate", str(tmp_path), "--format", "json", "--jobs", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert list(doc) == ["version", "ok", "counts", "runs", "unreadable"]
    assert doc["ok"] is False
    assert all(list(r)[:4] == RUN_KEYS for r in doc["runs"])
    verdicts = {r["run"]: r["ok"] for r in doc["runs"]}
    assert verdicts == {str(p): name != "broken" for name, p in runs.items()}
    assert doc["counts"]["error"] == sum(r["counts"]["error"] for r in doc["runs"]) >= 1


def test_fleet_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The exit code is the worst over runs; a PATH holding no run makes it 2 and is named."""
    runs = sweep(tmp_path)
    assert main(["validate", str(runs["a"]), str(runs["deep"]), "-j", "1"]) == 0
    assert main(["validate", str(runs["a"]), str(runs["broken"]), "-j", "1"]) == 1
    capsys.readouterr()
    assert main(["validate", str(runs["a"]), str(tmp_path / "notes"), "-j", "1"]) == 2
    err = capsys.readouterr().err
    assert f"no run found at '{tmp_path / 'notes'}'" in err


@pytest.mark.parametrize("what", ["/etc", "empty", "file"])
def test_cli_not_a_run_exits_2(tmp_path: Path, what: str) -> None:
    """`rlio validate /etc`, an empty folder or a file: exit 2, "no run found at ...", and
    --format json still prints one JSON document."""
    if what == "/etc":
        target = "/etc"
    elif what == "empty":
        (tmp_path / "e").mkdir()
        target = str(tmp_path / "e")
    else:
        target = str(write(tmp_path, "f.txt", "x"))
    proc = run_cli("validate", target)
    assert proc.returncode == 2 and f"no run found at '{target}'" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_cli("validate", target, "--format", "json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False and doc["unreadable"][0]["path"] == target


def test_fail_on_info_verdict_matches_exit(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """--fail-on info: a run with info findings is FAILED in the text verdict and exits 1."""
    run = cookbook_run(tmp_path / "run")
    assert main(["validate", str(run), "--fail-on", "info"]) == 1
    assert ": FAILED: " in capsys.readouterr().out.splitlines()[-1]
    assert main(["validate", str(run), "--fail-on", "error"]) == 0
    assert ": ok: " in capsys.readouterr().out.splitlines()[-1]


def test_fleet_text_and_github(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Text: paths carry the run's location and each run has a verdict line; github: file=
    relative to the current directory, so it names the file from the repository root."""
    runs = sweep(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["validate", ".", "--jobs", "1"]) == 1
    out = capsys.readouterr().out.splitlines()
    bad = os.path.join("broken", layout.iteration_path("flat", 1, "rollout_summaries"))
    assert any(line.startswith(f"{os.path.join('.', bad)}:1: /iteration: RL401 error:")
               for line in out)
    assert sum(1 for line in out if ": FAILED: " in line) == 1
    assert sum(1 for line in out if ": ok: " in line) == len(runs) - 1
    assert out[-1].startswith("4 run(s): 3 ok, 1 FAILED")
    assert main(["validate", str(tmp_path), "--format", "github", "--jobs", "1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith(f"::error file={bad},line=1,title=RL401::") for line in lines)


def test_control_characters_escaped_in_fleet_text(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A run folder name holding a newline and ESC cannot forge lines or reach the terminal."""
    run = cookbook_run(tmp_path / "evil\nRL999 error: forged\x1b[2J")
    write(run, "stray\nfile.txt", "x")
    main(["validate", str(tmp_path), "--jobs", "1"])
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert not any(line.startswith("RL999") for line in out.splitlines())


def test_no_path_means_the_cookbooks_run_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Without a PATH, discovery and `rlio validate` look under $TINKER_COOKBOOK_RUNS_DIR."""
    cookbook_run(tmp_path / "runs" / "math" / "exp1")
    monkeypatch.setenv("TINKER_COOKBOOK_RUNS_DIR", str(tmp_path / "runs"))
    assert discover([]) == [str(tmp_path / "runs" / "math" / "exp1")]
    assert [r.run for r in validate_runs([], jobs=1).runs] == discover([])
    assert main(["validate", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["run"].endswith("exp1")


def test_no_path_falls_back_to_tinker_runs_in_home(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Unset, the root is ~/tinker-runs; when it is missing the CLI says so and exits 2."""
    monkeypatch.delenv("TINKER_COOKBOOK_RUNS_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["validate"]) == 2
    assert "tinker-runs is not a folder (set TINKER_COOKBOOK_RUNS_DIR" in capsys.readouterr().err
    cookbook_run(tmp_path / "tinker-runs" / "exp2")
    assert discover([]) == [str(tmp_path / "tinker-runs" / "exp2")]
