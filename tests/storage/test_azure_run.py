"""az:// runs through the public API and the CLI: fleets read as their local copies, the reader,
the report written into the run, show/diff/export, and writers killed mid-append."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from azurite import FaultProxy
from factories import cookbook_run

from rlio import RunInUseError, RunWriter, open_run, read_resume_state, validate_run
from rlio.cli import main
from rlio.storage import open_storage
from rlio.storage.azure.api import PARTS_DIR
from rlio.storage.azure.storage import AzureStorage
from rlio.validate.fleet import discover, validate_runs


def _upload(local: Path, uri: str) -> None:
    """Copy a local run to ``uri`` as block blobs, the way fsspec/adlfs writes them."""
    st = open_storage(uri, create=True)
    assert isinstance(st, AzureStorage)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            st.api.upload(st.key(path.relative_to(local).as_posix()), path.read_bytes())


def test_a_fleet_on_az_validates_and_reads_as_its_local_copies(
        az_uri: str, az: FaultProxy, tmp_path: Path) -> None:
    """Runs under an az:// prefix: found from one listing, verdicts and records equal to the
    same runs on local disk (block blobs, as other tools write them)."""
    local = {name: cookbook_run(tmp_path / name) for name in ("a", "g/b")}
    for name, run in local.items():
        _upload(run, f"{az_uri}/{name}")
    az.stats(reset=True)
    assert discover([az_uri + "/"]) == [f"{az_uri}/{n}" for n in sorted(local)]
    assert 1 <= az.stats().get("list", {}).get("requests", 0) <= 2  # not one per folder
    fleet = validate_runs([az_uri], jobs=1)
    assert [r.findings for r in fleet.runs] == [
        validate_runs([local[n]], jobs=1).runs[0].findings for n in sorted(local)]
    assert all(r.ok for r in fleet.runs)
    remote, disk = open_run(f"{az_uri}/a"), open_run(local["a"])
    assert repr(remote.metrics()) == repr(disk.metrics())  # repr: NaN values compare equal
    assert repr(list(remote.follow_metrics(idle_timeout=0.1))) == repr(disk.metrics())


@pytest.mark.slow  # a few seconds of requests; the default suite keeps one of each kind
def test_the_cli_reads_and_reports_an_az_run(az_uri: str, az: FaultProxy, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """validate, resume, report (pages written back into the run), show, diff and export work
    on az:// URIs; a missing run is exit 2."""
    _upload(cookbook_run(tmp_path / "run"), az_uri)
    assert main(["validate", az_uri]) == 0
    capsys.readouterr()
    assert main(["resume", az_uri, "--format", "json"]) == 0
    assert "next_batch" in json.loads(capsys.readouterr().out)
    assert main(["report", az_uri]) == 0
    page = open_storage(az_uri).read_bytes("report.html")
    assert page.lstrip().lower().startswith(b"<!doctype html")
    assert validate_run(az_uri).ok  # a reported run validates as before
    assert main(["show", az_uri]) == 0
    assert main(["diff", az_uri, str(tmp_path / "run")]) == 0
    assert main(["export", az_uri, str(tmp_path / "out")]) == 0
    assert any((tmp_path / "out").iterdir())
    capsys.readouterr()
    assert main(["validate", az_uri + "-nothing"]) == 2


TRAINER = r"""
import sys
from rlio import RunWriter, read_resume_state

uri = sys.argv[1]
with RunWriter(uri, lease_seconds=15, resume=True) as run:
    state = read_resume_state(run.log_path)
    start = state.next_batch if state else 0
    run.write_config({"lr": 1e-4})
    for i in range(start, start + int(sys.argv[2])):
        run.log_metrics({"progress/batch": i, "env/all/reward/total": 0.5}, step=i)
        run.record_checkpoint(f"{i + 1:06d}", batch=i + 1,
                              state_path=f"tinker://run/weights/{i + 1:06d}")
        print(i + 1, flush=True)  # acknowledged: record_checkpoint has returned
"""

CHECKPOINTER = r"""
import sys
from rlio import RunWriter

uri, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with RunWriter(uri, attach=True) as run:
    for i in range(n):
        run.record_checkpoint(f"{tag}-{i:06d}", writer=tag, seq=i)
        print(i, flush=True)  # acknowledged
"""


def _start(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _kill_after(proc: subprocess.Popen[str], acks: int) -> list[int]:
    """SIGKILL ``proc`` once it acknowledged ``acks`` records; what it acknowledged."""
    assert proc.stdout is not None and proc.stderr is not None
    seen: list[int] = []
    for line in proc.stdout:
        seen.append(int(line))
        if len(seen) >= acks:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    return seen


def _records(uri: str) -> list[dict[str, Any]]:
    data = open_storage(uri).read_bytes("checkpoints.jsonl")
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]  # raises on a torn line


@pytest.mark.slow
def test_an_owner_and_three_attached_writers_killed_lose_and_duplicate_nothing(
        az_uri: str, az: FaultProxy) -> None:
    """1 owner + 3 attached processes appending at once, each SIGKILLed mid-run (the owner
    twice): every acknowledged checkpoint is there exactly once, in order; the run resumes at
    the last one and validates."""
    RunWriter(az_uri).close()
    acked: dict[str, list[int]] = {}
    for round_ in range(2):
        trainer = _start(TRAINER, az_uri, "100000")
        sides = {f"s{round_}{k}": _start(CHECKPOINTER, az_uri, f"s{round_}{k}", "100000")
                 for k in range(3)}
        for tag, proc in sides.items():
            acked[tag] = _kill_after(proc, 15 + 5 * int(tag[-1]))
        acked[f"t{round_}"] = _kill_after(trainer, 8)
        deadline = time.monotonic() + 40  # the killed owner's 15 s lease must expire first
        while round_ == 0:
            try:
                RunWriter(az_uri, resume=True).close()
                break
            except RunInUseError:
                assert time.monotonic() < deadline
                time.sleep(0.5)
    records = _records(az_uri)
    for tag in (t for t in acked if t.startswith("s")):
        mine = [r["seq"] for r in records if r.get("writer") == tag]
        assert mine[:len(acked[tag])] == acked[tag]  # every acknowledged one, in order
        assert len(mine) == len(set(mine))  # none twice
    batches = [r["batch"] for r in records if "batch" in r]
    assert len(batches) == len(set(batches))
    assert set(acked["t0"]) | set(acked["t1"]) <= set(batches)
    state = read_resume_state(az_uri)
    assert state is not None and state.next_batch == batches[-1] >= acked["t1"][-1]
    deadline = time.monotonic() + 40
    while True:
        try:
            with RunWriter(az_uri, resume=True) as run:
                assert run.resume_state is not None
                assert run.resume_state.next_batch == batches[-1]
            break
        except RunInUseError:
            assert time.monotonic() < deadline
            time.sleep(0.5)
    assert validate_run(az_uri).ok
    st = open_storage(az_uri)
    assert isinstance(st, AzureStorage)
    assert list(st.api.list(st.key(PARTS_DIR) + "/")) == []
    counts = Counter((r.get("writer"), r.get("seq"), r.get("batch")) for r in records)
    assert max(counts.values()) == 1
