"""s3:// runs through the public API and the CLI: concurrent writers killed, resume, validate,
fleets equal to local disk, reading, reports, and the offline failure."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rlio.storage import open_storage
from rlio.storage.s3.storage import S3Storage

ATTACHED = r"""
import sys
from rlio import RunWriter

uri, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with RunWriter(uri, attach=True) as run:  # a helper beside the run's writer: no lease
    for i in range(n):
        run.record_checkpoint(f"{tag}-{i:05d}", writer=tag, seq=i)
        print(i, flush=True)  # acknowledged: record_checkpoint has returned
"""

OWNER = r"""
import sys
from rlio import RunWriter, read_resume_state

uri = sys.argv[1]
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


def _start(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _lines(uri: str, rel: str) -> list[dict[str, Any]]:
    data = open_storage(uri).read_bytes(rel)
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]  # raises on a torn line


def _kill_after(proc: subprocess.Popen[str], acks: int) -> int:
    """SIGKILL ``proc`` once it acknowledged ``acks`` records; the last one it acknowledged."""
    assert proc.stdout is not None and proc.stderr is not None
    last = -1
    for line in proc.stdout:
        last = int(line)
        if last >= acks:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    return last


def _acked(proc: subprocess.Popen[str]) -> int:
    """Wait for a writer to finish; the last record it acknowledged."""
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return int(out.split()[-1])


def _reopen_after_expiry(uri: str) -> Any:
    """``RunWriter(uri, resume=True)`` once the killed owner's 2 s lease has expired."""
    from rlio import RunInUseError, RunWriter

    deadline = time.monotonic() + 30
    while True:
        try:
            return RunWriter(uri, resume=True)
        except RunInUseError:
            assert time.monotonic() < deadline
            time.sleep(0.2)


def _uploads(uri: str) -> list[dict[str, Any]]:
    st = open_storage(uri)
    assert isinstance(st, S3Storage)
    return list(st.api.uploads(st.key("")))


@pytest.mark.slow
def test_an_owner_and_three_attached_writers_killed_lose_and_duplicate_nothing(
        s3_uri: str) -> None:
    """1 owner + 3 attached processes append at once; the owner and one helper are SIGKILLed:
    every acknowledged record is there once, nothing is duplicated or torn, and the run resumes
    at the last acknowledged checkpoint (or one landed after it)."""
    from rlio import RunWriter, read_resume_state, validate_run

    RunWriter(s3_uri).close()  # the run exists before the helpers attach to it
    owner = _start(OWNER, s3_uri, "100000")
    helpers = [_start(ATTACHED, s3_uri, f"h{k}", "60") for k in range(3)]
    killed_helper = _kill_after(helpers[0], 20)
    acked_owner = _kill_after(owner, 15)
    acked = {"h0": killed_helper, **{f"h{k}": _acked(helpers[k]) for k in (1, 2)}}

    records = _lines(s3_uri, "checkpoints.jsonl")
    counts = Counter(r["name"] for r in records)
    assert max(counts.values()) == 1  # nothing duplicated
    batches = [r["batch"] for r in records if "batch" in r]
    assert batches[:acked_owner] == list(range(1, acked_owner + 1))  # acknowledged, in order
    for tag, last in acked.items():
        seqs = [r["seq"] for r in records if r.get("writer") == tag]
        assert seqs[: last + 1] == list(range(last + 1)), tag  # every acknowledged one
    assert acked["h1"] == acked["h2"] == 59

    state = read_resume_state(s3_uri)
    assert state is not None and state.next_batch == batches[-1] >= acked_owner
    with _reopen_after_expiry(s3_uri) as run:  # takes the dead owner's lease over
        assert run.resume_state is not None and run.resume_state.next_batch == batches[-1]
        for i in range(state.next_batch, state.next_batch + 3):
            run.log_metrics({"progress/batch": i}, step=i)
            run.record_checkpoint(f"{i + 1:06d}", batch=i + 1,
                                  state_path=f"tinker://run/weights/{i + 1:06d}")
    after = read_resume_state(s3_uri)
    assert after is not None and after.next_batch == batches[-1] + 3
    assert validate_run(s3_uri).ok
    assert _uploads(s3_uri) == []


@pytest.mark.slow
def test_a_killed_owner_keeps_its_acknowledged_checkpoints_and_the_cli_reads_the_run(
        s3_uri: str, tmp_path: Path) -> None:
    """SIGKILL an s3:// owner beside an attached helper; resume, validate, report, show, diff
    and export work from the URI."""
    from rlio import RunWriter, read_resume_state

    RunWriter(s3_uri).close()
    owner = _start(OWNER, s3_uri, "100000")
    helper = _start(ATTACHED, s3_uri, "side", "10")
    acked = _kill_after(owner, 4)
    assert _acked(helper) == 9
    records = _lines(s3_uri, "checkpoints.jsonl")
    batches = [r["batch"] for r in records if "batch" in r]
    assert batches[:acked] == list(range(1, acked + 1)) and len(batches) == len(set(batches))
    assert sorted(r["seq"] for r in records if r.get("writer") == "side") == list(range(10))
    state = read_resume_state(s3_uri)
    assert state is not None and state.next_batch == batches[-1]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        out = subprocess.run([sys.executable, "-m", "rlio", *args], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, (args, out.stderr)
        return out

    assert json.loads(cli("validate", s3_uri, "--format", "json").stdout)["ok"] is True
    assert json.loads(cli("resume", s3_uri, "--format", "json").stdout)["next_batch"] == (
        batches[-1])
    cli("report", s3_uri)
    page = open_storage(s3_uri).read_bytes("report.html")
    assert page.lstrip().lower().startswith(b"<!doctype html")
    assert s3_uri in cli("show", s3_uri, "--no-validate").stdout
    assert s3_uri in cli("diff", s3_uri, s3_uri).stdout
    cli("export", s3_uri, str(tmp_path / "out"))
    assert json.loads((tmp_path / "out" / "checkpoints_keys.json").read_text())


def _copy_to(local: Path, uri: str) -> None:
    """Upload every file of a local run to ``uri``, byte for byte."""
    st = open_storage(uri, create=True)
    for path in sorted(local.rglob("*")):
        if path.is_file() and not path.name.startswith(".rlio"):
            st.replace(path.relative_to(local).as_posix(), path.read_bytes())


@pytest.mark.slow  # the fleet reads every cloud through Storage: gs:// and az:// cover it
def test_a_fleet_under_a_prefix_validates_and_reads_as_on_local_disk(
        s3_uri: str, tmp_path: Path) -> None:
    """Runs copied to s3:// byte for byte get the verdicts and records they get on local disk,
    and `rlio report` writes its pages into the run."""
    from rlio import open_run, validate_runs
    from rlio.demo import run_demo

    fleet = tmp_path / "fleet"
    run_demo(fleet / "good", layout="nested", iterations=3)
    run_demo(fleet / "bad", iterations=2, seed=1)
    with (fleet / "bad" / "metrics.jsonl").open("ab") as f:
        f.write(b'{"step": "three"}\n{"torn')
    for name in ("good", "bad"):
        _copy_to(fleet / name, f"{s3_uri}/{name}")

    def verdicts(root: str) -> dict[str, Any]:
        report = validate_runs([root], jobs=1)
        return {r.run.rsplit("/", 1)[1]: sorted(
            (f.code, f.severity.value, f.file, f.line or 0, f.pointer) for f in r.findings)
            for r in report.runs}

    local, remote = verdicts(str(fleet)), verdicts(s3_uri + "/")
    assert set(remote) == {"good", "bad"} and remote == local
    assert local["bad"] != local["good"] and len(local["bad"]) >= 2, local  # found something
    for name in ("good", "bad"):
        a, b = open_run(fleet / name), open_run(f"{s3_uri}/{name}")
        assert list(a.metrics()) == list(b.metrics())
        assert list(a.checkpoints()) == list(b.checkpoints())
    out = subprocess.run([sys.executable, "-m", "rlio", "report", f"{s3_uri}/good"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    page = open_storage(f"{s3_uri}/good").read_bytes("report.html")
    assert page.lstrip().lower().startswith(b"<!doctype html")


def _offline_envs(tmp_path: Path) -> list[tuple[dict[str, str], str]]:
    """(environment, what the error line says): an endpoint refusing connections, and the same
    with no credentials anywhere."""
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
            "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}
    if "PYTHONPATH" in os.environ:
        base["PYTHONPATH"] = os.environ["PYTHONPATH"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once it closes
    offline = {**base, "AWS_ENDPOINT_URL": closed, "AWS_ACCESS_KEY_ID": "k",
               "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "us-east-1"}
    no_keys = {**base, "AWS_ENDPOINT_URL": closed, "AWS_DEFAULT_REGION": "us-east-1"}
    return [(offline, "cannot reach"), (no_keys, "no AWS credentials")]


def _fails_fast(env: dict[str, str], why: str, args: list[str]) -> None:
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "rlio", *args], env=env, capture_output=True,
                         text=True, timeout=60)
    assert time.monotonic() - start < 10, args
    assert out.returncode == 2, (args, out.stdout, out.stderr)
    assert out.stderr.count("\n") == 1 and why in out.stderr, (args, out.stderr)
    assert "Traceback" not in out.stderr


def test_without_credentials_the_api_and_validate_fail_fast(tmp_path: Path) -> None:
    """With no AWS credentials anywhere, RunWriter raises StorageUnavailableError and
    `rlio validate` exits 2 within 10 s with one line naming them (an unreachable endpoint:
    test_offline.py)."""
    code = ("from rlio import RunWriter\nfrom rlio.errors import StorageUnavailableError\n"
            "try:\n    RunWriter('s3://bucket/run')\n"
            "except StorageUnavailableError as exc:\n    print('refused', exc)\n")
    for env, why in _offline_envs(tmp_path)[1:]:
        _fails_fast(env, why, ["validate", "s3://bucket/run"])
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.stdout.startswith("refused") and why in out.stdout, out.stdout + out.stderr


@pytest.mark.slow
def test_without_a_reachable_store_every_command_fails_fast_in_one_line(tmp_path: Path) -> None:
    """Offline or without credentials, each command exits 2 within 10 s with one line."""
    uri = "s3://bucket/run"
    for env, why in _offline_envs(tmp_path):
        for args in (["validate", uri], ["resume", uri], ["show", uri], ["report", uri],
                     ["export", uri, str(tmp_path / "x")], ["diff", uri, uri]):
            _fails_fast(env, why, args)
