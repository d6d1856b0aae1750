"""Fleet validation with real processes: a terminal (pty), a Dask cluster, --watch and SIGINT,
and discovery on the GCS emulator."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import cookbook_run, jsonl, metrics_line, run_cli, trajectory, write

from rlio import layout
from rlio.validate.fleet import validate_runs

sys.path.insert(0, str(Path(__file__).parents[2] / "storage"))
from gcs_emulator import Emulator, serving


def _stderr_on_a_pty(*args: str) -> tuple[int, bytes]:
    """Run ``rlio ARGS`` with stderr on a real pseudo-terminal: exit code and what it wrote."""
    primary, secondary = os.openpty()
    out = b""
    try:
        proc = subprocess.Popen([sys.executable, "-m", "rlio", *args],
                                stdout=subprocess.DEVNULL, stderr=secondary)
        # the secondary end stays open here until the end: Linux drops unread pty output once
        # every secondary descriptor is closed
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.1)
            if ready:
                out += os.read(primary, 65536)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=60)
    finally:
        os.close(secondary)
        os.close(primary)
    return code, out


def test_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    """stderr a terminal: a progress bar with runs done/total; not a terminal or --quiet:
    nothing on stderr."""
    for name in ("a", "b", "c"):
        cookbook_run(tmp_path / name)
    code, err = _stderr_on_a_pty("validate", str(tmp_path), "-j", "1")
    assert code == 0
    assert b"3/3" in err and b"run" in err and b"files" in err
    plain = run_cli("validate", str(tmp_path), "-j", "1")
    assert plain.returncode == 0 and plain.stderr == ""
    assert _stderr_on_a_pty("validate", str(tmp_path), "-j", "1", "--quiet") == (0, b"")


@pytest.mark.dask
def test_dask_cluster_gives_the_jobs_1_report(tmp_path: Path) -> None:
    """A real LocalCluster of two worker processes on loopback: the same fleet report as
    --jobs 1, through the library and through `rlio validate --dask`."""
    distributed = pytest.importorskip("distributed")
    for name in ("a", "b", "c"):
        cookbook_run(tmp_path / name)
    rec = trajectory(1, 0, 0)
    rec["iteration"] = 9  # an error: RL401
    write(tmp_path / "b", layout.iteration_path("flat", 1, "rollout_summaries"), jsonl([rec]))
    inline = validate_runs([tmp_path], jobs=1)
    with distributed.LocalCluster(n_workers=2, processes=True, host="127.0.0.1",
                                  threads_per_worker=1, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert validate_runs([tmp_path], executor=client.get_executor()) == inline
        proc = run_cli("validate", str(tmp_path), "--dask", cluster.scheduler_address,
                       "--format", "json")
    local = run_cli("validate", str(tmp_path), "--jobs", "1", "--format", "json")
    assert proc.returncode == local.returncode == 1
    assert json.loads(proc.stdout) == json.loads(local.stdout)


def test_watch_prints_new_findings_and_exits_on_sigint(tmp_path: Path) -> None:
    """--watch re-checks a growing run, prints a finding for a bad appended line once, and
    SIGINT ends it with the usual exit code (1: an error is present)."""
    run = cookbook_run(tmp_path / "run")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "rlio", "validate", "--watch", str(run),
                             "--interval", "0.2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()  # the first check's findings end with a verdict line
        assert first
        with open(run / "metrics.jsonl", "ab") as f:
            f.write(jsonl([metrics_line(3)]).encode() + b"[1, 2]\n")
        lines: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(b"RL201" in x for x in lines):
            lines.append(proc.stdout.readline())
        found = [x for x in lines if b"metrics.jsonl:" in x and b"RL201" in x]
        assert len(found) == 1, lines
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert b"Traceback" not in err
    assert out.count(b"RL201") == 0  # reported once, not again on later checks
    assert b": FAILED: " in out.splitlines()[-1]


@pytest.fixture(scope="module")
def gcs() -> Iterator[Emulator]:
    """The GCS emulator on a free loopback port, with STORAGE_EMULATOR_HOST set meanwhile."""
    with serving("rlio-fleet") as emu:
        yield emu


def test_gs_prefix_discovery_is_one_listing(tmp_path: Path, gcs: Emulator) -> None:
    """Runs under a gs:// prefix are found at any depth from one listing of the prefix, and
    validate as their local copies do."""
    from rlio.storage.opener import open_storage
    from rlio.validate.fleet import discover

    prefix = f"gs://rlio-fleet/sweep-{uuid.uuid4().hex[:8]}"
    local = {name: cookbook_run(tmp_path / name) for name in ("a", "g/b", "g/h/c")}
    for name, run in local.items():
        store = open_storage(f"{prefix}/{name}", create=True)
        for path in sorted(run.rglob("*")):
            if path.is_file():
                store.replace(path.relative_to(run).as_posix(), path.read_bytes())
    gcs.stats(reset=True)
    found = discover([prefix + "/"])
    assert found == [f"{prefix}/{n}" for n in sorted(local)]
    lists = gcs.stats().get("list", {}).get("requests", 0)
    assert 1 <= lists <= 2  # one listing (its probe for existence included), not one per folder
    fleet = validate_runs([prefix], jobs=1)
    assert [r.counts for r in fleet.runs] == [
        validate_runs([local[n]], jobs=1).runs[0].counts for n in sorted(local)]
