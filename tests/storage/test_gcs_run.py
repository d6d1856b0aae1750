"""gs:// runs through the public API: concurrent writers, SIGKILL, resume, validate, the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rlio.storage import open_storage
from rlio.storage.gcs.api import PARTS_DIR
from rlio.storage.gcs.storage import GcsStorage

CHECKPOINTER = r"""
import sys
from rlio import RunWriter

uri, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with RunWriter(uri, attach=True) as run:  # a helper beside the run's writer: no lease
    for i in range(n):
        run.record_checkpoint(f"{i:06d}", writer=tag, seq=i)
"""

TRAINER = r"""
import sys
from rlio import RunWriter
from rlio import read_resume_state

uri = sys.argv[1]
# A short lease (the test restarts after a kill); resume=True because the side checkpointer may
# have recorded into the run before this writer opens it (a plain open would be RunExistsError).
with RunWriter(uri, lease_seconds=2.0, resume=True) as run:
    state = read_resume_state(run.log_path)  # None on a fresh run
    start = state.next_batch if state else 0
    run.write_config({"lr": 1e-4, "seed": 0})
    for i in range(start, start + int(sys.argv[2])):
        run.log_metrics({"progress/batch": i, "env/all/reward/total": 0.5}, step=i)
        run.record_checkpoint(f"{i + 1:06d}", batch=i + 1,
                              state_path=f"tinker://run/weights/{i + 1:06d}")
        print(i + 1, flush=True)  # acknowledged: record_checkpoint has returned
"""


def _run(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _lines(uri: str, rel: str) -> list[dict[str, Any]]:
    data = open_storage(uri).read_bytes(rel)
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]  # raises on a torn line


def _parts(uri: str) -> list[dict[str, Any]]:
    st = open_storage(uri)
    assert isinstance(st, GcsStorage)
    return list(st.api.list(st.key(PARTS_DIR) + "/"))


def _concurrent_checkpoints(uri: str, writers: int, n: int) -> None:
    from rlio import RunWriter

    RunWriter(uri).close()  # the run exists; the checkpointers attach to it
    procs = [_run(CHECKPOINTER, uri, f"w{k}", str(n)) for k in range(writers)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    records = _lines(uri, "checkpoints.jsonl")
    counts = Counter((r["writer"], r["seq"]) for r in records)
    assert len(records) == writers * n  # nothing lost ...
    assert set(counts) == {(f"w{k}", i) for k in range(writers) for i in range(n)}
    assert max(counts.values()) == 1  # ... and nothing duplicated
    for k in range(writers):  # each process's records keep its order
        assert [r["seq"] for r in records if r["writer"] == f"w{k}"] == list(range(n))
    assert _parts(uri) == []


@pytest.mark.parametrize("n", [100, pytest.param(500, marks=pytest.mark.slow)])
def test_four_writer_processes_lose_duplicate_and_tear_nothing(gs_uri: str, n: int) -> None:
    """4 processes x n record_checkpoint calls on one gs:// ledger: 0 lost, 0 dup, 0 torn (the
    default suite's 4 x 100 already contend on every compose; 4 x 500 is the stress run)."""
    _concurrent_checkpoints(gs_uri, 4, n)


def _reopen_after_expiry(uri: str) -> Any:
    """``RunWriter(uri, resume=True)`` once the killed writer's 2 s lease has expired."""
    import time

    from rlio import RunInUseError, RunWriter

    deadline = time.monotonic() + 30
    while True:
        try:
            return RunWriter(uri, resume=True)
        except RunInUseError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _kill_after(proc: subprocess.Popen[str], acks: int) -> int:
    """SIGKILL ``proc`` once it has acknowledged ``acks`` checkpoints; the last one acknowledged."""
    assert proc.stdout is not None
    last = 0
    for line in proc.stdout:
        last = int(line)
        if last >= acks:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()
    return last


def test_a_killed_writer_keeps_every_acknowledged_checkpoint_and_the_run_resumes(
        gs_uri: str) -> None:
    """SIGKILL a gs:// writer next to a live one; resume, validate and the CLI work from the URI."""
    from rlio import RunWriter, read_resume_state, validate_run

    RunWriter(gs_uri).close()  # the run exists before the side checkpointer attaches to it
    trainer = _run(TRAINER, gs_uri, "100000")
    side = _run(CHECKPOINTER, gs_uri, "side", "25")
    acked = _kill_after(trainer, 6)
    _, err = side.communicate(timeout=300)
    assert side.returncode == 0, err

    records = _lines(gs_uri, "checkpoints.jsonl")
    mine = [r["batch"] for r in records if "batch" in r]
    assert mine[:acked] == list(range(1, acked + 1))  # every acknowledged one, in order, once
    assert len(mine) == len(set(mine))
    assert sorted(r["seq"] for r in records if r.get("writer") == "side") == list(range(25))

    state = read_resume_state(gs_uri)
    assert state is not None and state.next_batch == mine[-1] >= acked
    with _reopen_after_expiry(gs_uri) as run:  # a new writer takes the dead one's lease over
        assert run.resume_state is not None and run.resume_state.next_batch == mine[-1]
        for i in range(state.next_batch, state.next_batch + 3):
            run.log_metrics({"progress/batch": i}, step=i)
            run.record_checkpoint(f"{i + 1:06d}", batch=i + 1,
                                  state_path=f"tinker://run/weights/{i + 1:06d}")
    assert _parts(gs_uri) == []
    after = read_resume_state(gs_uri)
    assert after is not None and after.next_batch == mine[-1] + 3
    steps = [r["step"] for r in _lines(gs_uri, "metrics.jsonl")]
    assert steps == sorted(steps) and steps[-1] == mine[-1] + 2

    report = validate_run(gs_uri)
    assert report.ok, report.findings
    out = subprocess.run([sys.executable, "-m", "rlio", "validate", gs_uri, "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ok"] is True
    out = subprocess.run([sys.executable, "-m", "rlio", "resume", gs_uri, "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["next_batch"] == mine[-1] + 3
    out = subprocess.run([sys.executable, "-m", "rlio", "report", gs_uri],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    page = open_storage(gs_uri).read_bytes("report.html")
    assert page.lstrip().lower().startswith(b"<!doctype html")


def test_rlio_validate_reads_a_gs_run_and_reports_a_missing_one(gs_uri: str) -> None:
    """`rlio validate gs://...` exits 0 on a clean run and 2 when nothing is at the URI."""
    from rlio import RunWriter

    with RunWriter(gs_uri) as run:
        run.write_config({"lr": 0.1})
        run.log_metrics({"progress/batch": 0}, step=0)
    ok = subprocess.run([sys.executable, "-m", "rlio", "validate", gs_uri],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    missing = subprocess.run([sys.executable, "-m", "rlio", "validate", gs_uri + "-nothing"],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2, missing.stdout + missing.stderr


def test_import_and_local_writes_never_import_gcsfs(tmp_path: Path) -> None:
    """`import rlio`, a local RunWriter and memory:// runs leave gcsfs (and locally fsspec) out."""
    code = r"""
import sys
import rlio
from rlio import RunWriter
with RunWriter(sys.argv[1]) as run:
    run.write_config({"a": 1})
    run.log_metrics({"progress/batch": 0}, step=0)
    run.record_checkpoint("000001", batch=1, state_path="tinker://x/1")
local = sorted(m for m in ("fsspec", "gcsfs") if m in sys.modules)
from rlio.storage import open_storage
open_storage("memory://probe", create=True).replace("config.json", b"{}")
print(local, "gcsfs" in sys.modules)
"""
    env = {k: v for k, v in os.environ.items() if k != "STORAGE_EMULATOR_HOST"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["[]", "False"]
