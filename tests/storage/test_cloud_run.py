"""Runs on every object store (gs://, s3://, az://) through the public API and the CLI: writer
processes killed, resume, validate, fleets equal to local disk, reading, reports."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from clouds import (
    ATTACHED,
    ONE_BY_DEFAULT,
    OPS,
    OWNER,
    acked,
    expire,
    kill_after,
    records,
    start,
    take_over,
)

from rlio import RunInUseError, RunWriter, open_run, read_resume_state, validate_run
from rlio.cli import main
from rlio.storage import open_storage
from rlio.validate.fleet import discover, validate_runs


def _clean(uri: str) -> None:
    """Nothing a writer leaves while it works (gs:// parts, s3:// uploads, az:// staged
    copies) is left: a reopening writer's sweep finds nothing."""
    assert open_storage(uri).sweep_orphans() == 0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run([sys.executable, "-m", "rlio", *args], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out


@pytest.mark.parametrize(("cloud", "n"), [
    ("gs", 100), pytest.param("gs", 500, marks=pytest.mark.slow),
    pytest.param("s3", 100, marks=pytest.mark.slow),
    pytest.param("az", 100, marks=pytest.mark.slow)])
def test_four_attached_writer_processes_lose_duplicate_and_tear_nothing(
        cloud_uri: str, n: int) -> None:
    """4 processes x n record_checkpoint calls on one ledger: 0 lost, 0 dup, 0 torn, each
    process's records in order (4 x 100 already contend on every commit; 4 x 500 is stress)."""
    RunWriter(cloud_uri).close()  # the run exists; the checkpointers attach to it
    procs = [start(ATTACHED, cloud_uri, f"w{k}", str(n)) for k in range(4)]
    for p in procs:
        assert len(acked(p)) == n
    got = records(cloud_uri, "checkpoints.jsonl")
    counts = Counter((r["writer"], r["seq"]) for r in got)
    assert set(counts) == {(f"w{k}", i) for k in range(4) for i in range(n)}
    assert len(got) == 4 * n and max(counts.values()) == 1
    for k in range(4):
        assert [r["seq"] for r in got if r["writer"] == f"w{k}"] == list(range(n))
    _clean(cloud_uri)


@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)
def test_a_killed_owner_keeps_every_acknowledged_checkpoint_and_the_run_resumes(
        cloud_uri: str) -> None:
    """SIGKILL the holder next to a live attached writer; every acknowledged checkpoint is
    there once, in order; the run is taken over and goes on; validate, `rlio validate`,
    `resume` and `report` work from the URI."""
    RunWriter(cloud_uri).close()  # the run exists before the side checkpointer attaches to it
    owner = start(OWNER, cloud_uri, "100000")
    side = start(ATTACHED, cloud_uri, "side", "25")
    last = kill_after(owner, 6)[-1]
    assert acked(side) == list(range(25))
    got = records(cloud_uri, "checkpoints.jsonl")
    mine = [r["batch"] for r in got if "batch" in r]
    assert mine[:last] == list(range(1, last + 1)) and len(mine) == len(set(mine))
    assert sorted(r["seq"] for r in got if r.get("writer") == "side") == list(range(25))

    state = read_resume_state(cloud_uri)
    assert state is not None and state.next_batch == mine[-1] >= last
    with take_over(cloud_uri) as run:
        assert run.resume_state is not None and run.resume_state.next_batch == mine[-1]
        for i in range(state.next_batch, state.next_batch + 3):
            run.log_metrics({"progress/batch": i}, step=i)
            run.record_checkpoint(f"{i + 1:06d}", batch=i + 1,
                                  state_path=f"tinker://run/weights/{i + 1:06d}")
    _clean(cloud_uri)
    after = read_resume_state(cloud_uri)
    assert after is not None and after.next_batch == mine[-1] + 3
    steps = [r["step"] for r in records(cloud_uri, "metrics.jsonl")]
    assert steps == sorted(steps) and steps[-1] == mine[-1] + 2

    assert validate_run(cloud_uri).ok
    assert json.loads(_cli("validate", cloud_uri, "--format", "json").stdout)["ok"] is True
    resumed = json.loads(_cli("resume", cloud_uri, "--format", "json").stdout)
    assert resumed["next_batch"] == mine[-1] + 3
    _cli("report", cloud_uri)
    page = open_storage(cloud_uri).read_bytes("report.html")
    assert page.lstrip().lower().startswith(b"<!doctype html")


def _wait_resumable(uri: str, timeout: float = 40.0) -> Any:
    """``RunWriter(uri, resume=True)`` once the killed holder's lease is gone."""
    expire(uri)
    deadline = time.monotonic() + timeout
    while True:
        try:
            return RunWriter(uri, resume=True)
        except RunInUseError:
            assert time.monotonic() < deadline, "the killed holder's lease never went"
            time.sleep(0.2)


@pytest.mark.slow  # the default suite's killed owner and four writer processes cover both
@pytest.mark.parametrize("cloud", ["gs", "s3", "az"])
def test_an_owner_and_three_attached_writers_killed_lose_and_duplicate_nothing(
        cloud_uri: str) -> None:
    """1 owner + 3 attached processes appending at once, each SIGKILLed mid-run (the owner
    twice): every acknowledged checkpoint is there exactly once, in order; the run resumes at
    the last one and validates."""
    RunWriter(cloud_uri).close()
    acks: dict[str, list[int]] = {}
    for round_ in range(2):
        owner = start(OWNER, cloud_uri, "100000")
        sides = {f"s{round_}{k}": start(ATTACHED, cloud_uri, f"s{round_}{k}", "100000")
                 for k in range(3)}
        for tag, proc in sides.items():
            acks[tag] = kill_after(proc, 15 + 5 * int(tag[-1]))
        acks[f"t{round_}"] = kill_after(owner, 8)
        if round_ == 0:
            _wait_resumable(cloud_uri).close()
    got = records(cloud_uri, "checkpoints.jsonl")
    for tag in (t for t in acks if t.startswith("s")):
        mine = [r["seq"] for r in got if r.get("writer") == tag]
        assert mine[:len(acks[tag])] == acks[tag] and len(mine) == len(set(mine)), tag
    batches = [r["batch"] for r in got if "batch" in r]
    assert len(batches) == len(set(batches))
    assert set(acks["t0"]) | set(acks["t1"]) <= set(batches)
    state = read_resume_state(cloud_uri)
    assert state is not None and state.next_batch == batches[-1] >= acks["t1"][-1]
    with _wait_resumable(cloud_uri) as run:
        assert run.resume_state is not None and run.resume_state.next_batch == batches[-1]
    assert validate_run(cloud_uri).ok
    _clean(cloud_uri)
    counts = Counter((r.get("writer"), r.get("seq"), r.get("batch")) for r in got)
    assert max(counts.values()) == 1


def _copy_to(local: Path, uri: str) -> None:
    """Upload every file of a local run to ``uri``, byte for byte."""
    st = open_storage(uri, create=True)
    for path in sorted(local.rglob("*")):
        if path.is_file() and not path.name.startswith(".rlio"):
            st.replace(path.relative_to(local).as_posix(), path.read_bytes())


@pytest.mark.parametrize("cloud", [
    "az", pytest.param("gs", marks=pytest.mark.slow), pytest.param("s3", marks=pytest.mark.slow)])
def test_a_fleet_under_a_prefix_validates_and_reads_as_on_local_disk(
        cloud: str, cloud_uri: str, cloud_emulator: Any, tmp_path: Path) -> None:
    """Runs copied byte for byte under a prefix: found from one listing, the verdicts and
    records they get on local disk (a followed run's too), and `rlio report` writes into one."""
    from rlio.demo import run_demo

    fleet = tmp_path / "fleet"
    run_demo(fleet / "good", layout="nested", iterations=3)
    run_demo(fleet / "g" / "bad", iterations=2, seed=1)
    with (fleet / "g" / "bad" / "metrics.jsonl").open("ab") as f:
        f.write(b'{"step": "three"}\n{"torn')
    for name in ("good", "g/bad"):
        _copy_to(fleet / name, f"{cloud_uri}/{name}")
    cloud_emulator.stats(reset=True)
    assert discover([cloud_uri + "/"]) == [f"{cloud_uri}/g/bad", f"{cloud_uri}/good"]
    lists = cloud_emulator.stats().get(OPS[cloud]["list"], {}).get("requests", 0)
    assert 1 <= lists <= 2  # not one per folder

    def verdicts(root: str) -> dict[str, Any]:
        report = validate_runs([root], jobs=1)
        return {r.run.rsplit("/", 1)[1]: sorted(
            (f.code, f.severity.value, f.file, f.line or 0, f.pointer) for f in r.findings)
            for r in report.runs}

    local, remote = verdicts(str(fleet)), verdicts(cloud_uri + "/")
    assert set(remote) == {"good", "bad"} and remote == local
    assert local["bad"] != local["good"] and len(local["bad"]) >= 2, local  # found something
    for name in ("good", "g/bad"):
        disk, far = open_run(fleet / name), open_run(f"{cloud_uri}/{name}")
        assert repr(list(far.metrics())) == repr(list(disk.metrics()))  # NaN equal in repr
        assert list(far.checkpoints()) == list(disk.checkpoints())
    followed = open_run(f"{cloud_uri}/good").follow_metrics(idle_timeout=0.1)
    assert repr(list(followed)) == repr(list(open_run(fleet / "good").metrics()))
    assert main(["report", f"{cloud_uri}/good"]) == 0
    page = open_storage(f"{cloud_uri}/good").read_bytes("report.html")
    assert page.lstrip().lower().startswith(b"<!doctype html")


@pytest.mark.slow  # a few seconds of requests; the killed-owner round covers validate and report
@pytest.mark.parametrize("cloud", ["gs", "s3", "az"])
def test_the_cli_reads_and_reports_a_cloud_run(cloud_uri: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """validate, resume, report (pages written back into the run), show, diff and export work
    on the URI."""
    from factories import cookbook_run

    _copy_to(cookbook_run(tmp_path / "run"), cloud_uri)
    assert main(["validate", cloud_uri]) == 0
    capsys.readouterr()
    assert main(["resume", cloud_uri, "--format", "json"]) == 0
    assert "next_batch" in json.loads(capsys.readouterr().out)
    assert main(["report", cloud_uri]) == 0
    page = open_storage(cloud_uri).read_bytes("report.html")
    assert page.lstrip().lower().startswith(b"<!doctype html")
    assert validate_run(cloud_uri).ok  # a reported run validates as before
    assert main(["show", cloud_uri, "--no-validate"]) == 0
    assert cloud_uri in capsys.readouterr().out
    assert main(["diff", cloud_uri, str(tmp_path / "run")]) == 0
    assert main(["export", cloud_uri, str(tmp_path / "out")]) == 0
    assert any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)
def test_rlio_validate_reads_a_run_and_reports_a_missing_one(cloud_uri: str) -> None:
    """`rlio validate URI` in a new process exits 0 on a clean run and 2 when nothing is there."""
    with RunWriter(cloud_uri) as run:
        run.write_config({"lr": 0.1})
        run.log_metrics({"progress/batch": 0}, step=0)
    _cli("validate", cloud_uri)
    missing = subprocess.run([sys.executable, "-m", "rlio", "validate", cloud_uri + "-nothing"],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2, missing.stdout + missing.stderr
