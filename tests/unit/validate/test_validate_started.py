"""A run that has not started yet is not an error; report.html is a known file.

A writer killed right after ``RunWriter(...)`` opened the run leaves no config.json and an empty
metrics.jsonl (a folder with neither is not a run at all): with no metrics line, checkpoint or
per-iteration file, the missing required files are RL116 info.
Once the run holds any record they are RL109 errors again.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from factories import HTML, cookbook_run, findings, has, jsonl, run_python, write

from rlio import layout
from rlio.errors import NotARunError
from rlio.validate import validate_run


def test_empty_directory_is_not_a_run(tmp_path: Path) -> None:
    """An empty directory holds no run marker: validate_run raises NotARunError, not a pass."""
    (tmp_path / "run").mkdir()
    with pytest.raises(NotARunError, match="no run found"):
        validate_run(tmp_path / "run")


def test_run_not_started_is_not_an_error(tmp_path: Path) -> None:
    """A run holding only an empty metrics.jsonl (nothing written yet) reports its missing
    config.json as RL116 info."""
    write(tmp_path / "run", "metrics.jsonl", b"")
    found = findings(tmp_path / "run")
    assert ("RL116", "info", "config.json", None, "") in found
    assert not [f for f in found if f[1] != "info"]


def test_writer_killed_before_config_is_not_an_error(tmp_path: Path) -> None:
    """A writer SIGKILLed right after RunWriter() opened the run (empty metrics.jsonl, no
    config.json) leaves a run that has not started: info only."""
    code = ("import os, signal, sys\nfrom rlio import RunWriter\n"
            "w = RunWriter(sys.argv[1])\nos.kill(os.getpid(), signal.SIGKILL)\n")
    proc = run_python(code, str(tmp_path / "run"))
    assert proc.returncode == -signal.SIGKILL
    report = validate_run(tmp_path / "run")
    assert report.ok
    assert {(f.code, f.file) for f in report.findings} == {
        ("RL116", "metrics.jsonl"), ("RL116", "config.json")}


@pytest.mark.parametrize("record", ["metrics", "checkpoint", "iteration file", "unreadable"])
def test_any_record_makes_missing_files_findings(tmp_path: Path, record: str) -> None:
    """One metrics line, one checkpoint or one per-iteration file: a missing config.json is
    an RL118 warning again (and a metrics.jsonl that cannot be read an error)."""
    run = tmp_path / "run"
    write(run, "metrics.jsonl", b"")
    write(run, "checkpoints.jsonl", b"")
    if record == "metrics":
        write(run, "metrics.jsonl", jsonl([{"step": 0, "loss": 1.0}]))
    elif record == "checkpoint":
        write(run, "checkpoints.jsonl", jsonl([{"name": "000000", "batch": 0}]))
    elif record == "iteration file":
        write(run, layout.iteration_path("flat", 0, "html"), HTML)
    else:
        (run / "metrics.jsonl").unlink()
        (run / "metrics.jsonl").mkdir()  # present, not a file: RL107, and maybe records
    found = findings(run)
    assert ("RL118", "warning", "config.json", None, "") in found
    assert not has(found, "RL116", "config.json")


def test_empty_checkpoints_and_metrics_without_config_is_info(tmp_path: Path) -> None:
    """Empty append-only files and logs are not records: a missing config.json stays info."""
    run = tmp_path / "run"
    write(run, "metrics.jsonl", b"")
    write(run, "checkpoints.jsonl", b"")
    write(run, "logs.log", "INFO starting\n")
    found = findings(run)
    assert ("RL116", "info", "config.json", None, "") in found
    assert ("RL116", "info", "metrics.jsonl", None, "") in found
    assert not [f for f in found if f[1] != "info"]


def test_run_report_html_is_checked_as_a_document(tmp_path: Path) -> None:
    """report.html (written by ``rlio report``) is known: complete is clean, cut or empty is
    RL110, never RL301."""
    run = cookbook_run(tmp_path / "run")
    write(run, "report.html", HTML)
    found = findings(run)
    assert not [f for f in found if f[2] == "report.html"]
    write(run, "report.html", HTML[:50])
    assert ("RL110", "warning", "report.html", None, "") in findings(run)
    write(run, "report.html", b"")
    found = findings(run)
    assert ("RL110", "warning", "report.html", None, "") in found
    assert not has(found, "RL301", "report.html")
