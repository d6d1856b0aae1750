"""rlio.status: running (a live lease), finished (a final checkpoint or done_frac 1), stopped."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from factories import jsonl, write

from rlio import RunWriter
from rlio.cli import main
from rlio.cookbook import RlioStorage
from rlio.status import run_status
from rlio.storage import open_storage


def rl_metrics(steps: int, total: int) -> str:
    """An RL loop's metrics lines: done_frac (i + 1) / total, then an async eval line."""
    lines = [{"step": i, "progress/batch": i, "progress/done_frac": (i + 1) / total}
             for i in range(steps)]
    return jsonl([*lines, {"step": steps - 1, "test/env/all/reward/total": 0.5}])


def test_running_while_the_lease_is_held_then_stopped(tmp_path: Path) -> None:
    """A live lease holder makes a run running; after release it is stopped at what it wrote."""
    with RlioStorage(tmp_path / "run") as s:
        s.append("metrics.jsonl", b'{"step": 3, "progress/batch": 3, "progress/done_frac": 0.5}\n')
        s.append("checkpoints.jsonl", b'{"name": "000004", "batch": 4, "state_path": "t://x"}\n')
        live = run_status(open_storage(tmp_path / "run"))
        assert live.state == "running" and live.holder is not None
        assert live.text().startswith(f"running: process {live.holder['pid']} on ")
    stopped = run_status(open_storage(tmp_path / "run"))
    assert (stopped.state, stopped.last_step, stopped.done_frac) == ("stopped", 3, 0.5)
    assert stopped.last_checkpoint == "000004" and stopped.last_write is not None
    assert "last wrote step 3 (done_frac 0.5) at " in stopped.text()
    assert stopped.text().endswith("; last checkpoint '000004'")


def test_a_killed_writer_is_stopped_though_its_lease_file_remains(tmp_path: Path) -> None:
    """SIGKILL leaves .rlio-lease naming a dead process: the run is stopped, not running."""
    run = tmp_path / "run"
    code = ("import sys, time\nfrom rlio import RunWriter\nw = RunWriter(sys.argv[1])\n"
            "w.log_metrics({'progress/batch': 0}, step=0)\nprint('ready', flush=True)\n"
            "time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(run)], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        assert run_status(open_storage(run)).state == "running"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert (run / ".rlio-lease").exists()
    assert run_status(open_storage(run)).state == "stopped"


def test_an_rl_run_without_a_final_checkpoint_finishes_at_done_frac_one(tmp_path: Path) -> None:
    """The last training line at done_frac 1 is finished (eval lines after it do not count);
    short of it, stopped."""
    write(tmp_path / "done", "metrics.jsonl", rl_metrics(4, 4))
    write(tmp_path / "done", "checkpoints.jsonl", jsonl([{"name": "000004", "batch": 4}]))
    done = run_status(open_storage(tmp_path / "done"))
    assert (done.state, done.finished_by) == ("finished", "done_frac 1")
    write(tmp_path / "cut", "metrics.jsonl", rl_metrics(3, 4))
    assert run_status(open_storage(tmp_path / "cut")).state == "stopped"


def test_a_final_checkpoint_finishes_a_run(tmp_path: Path) -> None:
    """A last checkpoint named final (or final: true) is finished, whatever done_frac says."""
    with RunWriter(tmp_path / "run") as w:
        w.log_metrics({"progress/batch": 0}, step=0)
        w.record_checkpoint("final", batch=1, state_path="tinker://r/final")
    status = run_status(open_storage(tmp_path / "run"))
    assert (status.state, status.finished_by) == ("finished", "final checkpoint")
    write(tmp_path / "flag", "metrics.jsonl", jsonl([{"step": 0, "progress/batch": 0}]))
    write(tmp_path / "flag", "checkpoints.jsonl", jsonl([{"name": "x", "final": True}]))
    assert run_status(open_storage(tmp_path / "flag")).state == "finished"


def test_a_torn_or_empty_run_is_stopped_with_nothing_written(tmp_path: Path) -> None:
    """A run holding only a torn line reports no step; its status never raises."""
    write(tmp_path / "run", "metrics.jsonl", '{"step": 0, "progress/ba')
    status = run_status(open_storage(tmp_path / "run"))
    assert status.state == "stopped" and status.last_step is None
    assert status.text() == "stopped: no writer holds the lease; nothing written yet"


def test_show_and_fleet_report_the_status(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """rlio show has a status line; rlio validate gives each run's status in text and JSON."""
    write(tmp_path / "runs" / "a", "metrics.jsonl", rl_metrics(2, 2))
    write(tmp_path / "runs" / "b", "metrics.jsonl", rl_metrics(1, 2))
    main(["show", str(tmp_path / "runs" / "a"), "--no-validate"])
    assert "status       finished (done_frac 1)" in capsys.readouterr().out
    main(["validate", str(tmp_path / "runs"), "--jobs", "1"])
    out = capsys.readouterr().out
    assert f"{tmp_path / 'runs' / 'b'}: status stopped: no writer holds the lease" in out
    main(["validate", str(tmp_path / "runs"), "--jobs", "1", "--format", "json"])
    states = {Path(r["run"]).name: r["status"]["state"]
              for r in json.loads(capsys.readouterr().out)["runs"]}
    assert states == {"a": "finished", "b": "stopped"}
