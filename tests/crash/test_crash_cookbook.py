"""SIGKILL a real cookbook training loop: RlioStorage keeps every acknowledged record.

The child (``cookbook_child.py``) runs the cookbook's ``JsonLogger`` and ``TrainingRunStore``
over its own backend or over ``RlioStorage`` and is killed mid-loop. Every metrics line and
checkpoint record whose call returned must be in the run, whole, exactly once, when written
through rlio; the cookbook backend's figure is printed beside it (its cloud backend stages
appends in a local folder and uploads them on ``flush``, which the RL loop never calls).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlio import validate_run
from rlio.storage import open_storage

pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook 0.6.1 (.ci/run)")

CHILD = Path(__file__).with_name("cookbook_child.py")


def acked(acks: Path) -> tuple[set[int], set[int]]:
    """The metrics steps and checkpoint steps the child was told are stored."""
    metrics, checkpoints = set(), set()
    for line in acks.read_text().splitlines():
        kind, step = line.split()
        (metrics if kind == "m" else checkpoints).add(int(step))
    return metrics, checkpoints


def kill_after(run: str, backend: str, acks: Path, records: int) -> None:
    """Start the child and SIGKILL it once ``records`` metrics lines are acknowledged."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, str(CHILD), run, backend, str(acks)], env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if acks.exists() and acks.read_bytes().count(b"m ") >= records:
                break
            time.sleep(0.02)
        assert child.poll() is None, f"the {backend} child exited early ({child.returncode})"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def kept(run: str, rel: str) -> list[int]:
    """The steps of the whole records in ``rel`` of the run (batch - 1 for checkpoints)."""
    try:
        data = open_storage(run).read_bytes(rel)
    except FileNotFoundError:
        return []
    out = []
    for line in data.split(b"\n")[:-1]:  # the last piece is unterminated (or empty)
        rec = json.loads(line)
        out.append(rec["step"] if "step" in rec else rec["batch"] - 1)
    return out


def compare(run_of: dict[str, str], tmp_path: Path, records: int) -> dict[str, str]:
    """Kill each backend's child; assert rlio kept every acknowledged record, exactly once."""
    figures = {}
    for backend, run in run_of.items():
        acks = tmp_path / f"{backend}.acks"
        kill_after(run, backend, acks, records)
        metrics, checkpoints = acked(acks)
        got_m, got_c = kept(run, "metrics.jsonl"), kept(run, "checkpoints.jsonl")
        lost = len(metrics - set(got_m)) + len(checkpoints - set(got_c))
        figures[backend] = (f"{len(metrics) + len(checkpoints) - lost} of "
                            f"{len(metrics) + len(checkpoints)} acknowledged records kept")
        if backend == "rlio":
            assert metrics <= set(got_m) and checkpoints <= set(got_c)
            assert len(got_m) == len(set(got_m)) and len(got_c) == len(set(got_c))  # once
            assert validate_run(run).ok
    print(f"\nSIGKILL mid-loop ({', '.join(run_of.values())}): " +
          "; ".join(f"{k}: {v}" for k, v in figures.items()))
    return figures


def test_sigkill_local_rlio_keeps_every_acknowledged_record(tmp_path: Path) -> None:
    """Killed mid-loop on a local disk, the run written through RlioStorage holds every
    acknowledged metrics line and checkpoint (the cookbook's LocalStorage figure printed)."""
    compare({"rlio": str(tmp_path / "rlio"), "cookbook": str(tmp_path / "cookbook")},
            tmp_path, records=200)


def test_sigkill_gs_rlio_keeps_every_acknowledged_record(tmp_path: Path) -> None:
    """Killed mid-loop on the GCS emulator, RlioStorage keeps every acknowledged record; the
    cookbook's staged cloud backend, never flushed by the loop, keeps what it printed."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "storage"))
    import uuid

    from gcs_emulator import serving

    with serving("rlio-crash"):
        tag = uuid.uuid4().hex[:8]
        compare({"rlio": f"gs://rlio-crash/rlio-{tag}", "cookbook": f"gs://rlio-crash/cb-{tag}"},
                tmp_path, records=40)
