"""The run lease on local disk and memory://: one writer at a time, helpers attach beside it."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest

from rlio import RlioError, RunInUseError, RunWriter, read_resume_state, validate_run

_HOLDER = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1])
    run.write_config({"lr": 1})
    run.log_metrics({"x": 0}, step=0)
    print("ready", flush=True)
    sys.stdin.readline()  # hold the lease until told (or killed)
    run.close()
""")

_FAST = textwrap.dedent("""
    import os, sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1])
    fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    print("ready", flush=True)
    i = 0
    while not os.path.exists(sys.argv[3]):
        run.log_metrics({"i": i, "pad": "p" * (i % 9 * 1000)}, step=i)
        i += 1
        if i % 500 == 0:
            os.pwrite(fd, str(i).encode().ljust(20), 0)  # acknowledged so far
    run.close()
    os.pwrite(fd, str(i).encode().ljust(20), 0)
""")


def _start(code: str, *args: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen([sys.executable, "-c", code, *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    return p


def _snapshot(run: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}


def test_a_second_writer_is_refused_naming_the_holder_and_changes_nothing(
        tmp_path: pathlib.Path) -> None:
    """RunWriter on a run another process writes raises RunInUseError (host, pid, since)."""
    holder = _start(_HOLDER, str(tmp_path))
    try:
        before = _snapshot(tmp_path)
        with pytest.raises(RunInUseError) as err:
            RunWriter(tmp_path, resume=True)
        assert err.value.pid == holder.pid and err.value.host and err.value.since
        assert f"process {holder.pid}" in str(err.value) and "attach=True" in str(err.value)
        assert isinstance(err.value, RlioError)
        assert _snapshot(tmp_path) == before
    finally:
        assert holder.stdin is not None
        holder.stdin.write(b"go\n")
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    with RunWriter(tmp_path, resume=True) as run:  # free again once the holder closed
        run.log_metrics({"x": 1}, step=1)


def test_a_sigkilled_holder_never_blocks_the_restart(tmp_path: pathlib.Path) -> None:
    """The OS drops the lock of a SIGKILLed writer: the next RunWriter opens at once."""
    holder = _start(_HOLDER, str(tmp_path))
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=60)
    with RunWriter(tmp_path, resume=True) as run:
        run.log_metrics({"x": 1}, step=1)
    assert validate_run(tmp_path).ok


def test_attached_writers_append_beside_the_holder_but_never_replace_config(
        tmp_path: pathlib.Path) -> None:
    """attach=True takes no lease, appends and writes per-iteration files, refuses config."""
    with RunWriter(tmp_path) as run:
        run.write_config({"lr": 1})
        with RunWriter(tmp_path, attach=True) as helper, \
                RunWriter(tmp_path, attach=True) as other:
            helper.record_checkpoint("000001", batch=1, state_path="tinker://x/1")
            other.log_metrics({"eval/x": 1.0}, step=0)
            helper.write_rollout_summaries(0, [], evaluator="test")
            with pytest.raises(RlioError, match="attached writer"):
                helper.write_config({"lr": 2})
            with pytest.raises(RlioError, match="attached writer"):
                helper.write_code_diff("x")
        run.log_metrics({"x": 0}, step=0)
    assert json.loads((tmp_path / "config.json").read_bytes()) == {"lr": 1}
    state = read_resume_state(tmp_path)
    assert state is not None and state.next_batch == 1
    with pytest.raises(ValueError, match="lease holder"):
        RunWriter(tmp_path, attach=True, resume=True)


def test_attach_needs_an_existing_run(tmp_path: pathlib.Path) -> None:
    """An attached writer joins a live run: a missing one is RunNotFoundError, not created."""
    from rlio import RunNotFoundError

    with pytest.raises(RunNotFoundError):
        RunWriter(tmp_path / "nothing", attach=True)
    assert not (tmp_path / "nothing").exists()


def test_memory_runs_have_one_writer_too() -> None:
    """memory:// runs keep the lease in the process: a second writer is refused until close."""
    uri = "memory://lease-test-run"
    with RunWriter(uri) as run:
        with pytest.raises(RunInUseError):
            RunWriter(uri)
        run.log_metrics({"x": 0}, step=0)
    RunWriter(uri, resume=True).close()


def test_thirty_second_writers_against_a_full_speed_writer_lose_nothing(
        tmp_path: pathlib.Path) -> None:
    """30 RunWriter attempts on a run logging at full speed: 30 refusals, no line lost."""
    acks, stop = tmp_path / "acks", tmp_path / "stop"
    run_dir = tmp_path / "run"
    writer = _start(_FAST, str(run_dir), str(acks), str(stop))
    refused = 0
    for _ in range(30):
        try:
            RunWriter(run_dir, resume=True).close()
        except RunInUseError:
            refused += 1
    stop.touch()
    assert writer.wait(timeout=120) == 0
    acknowledged = int(acks.read_bytes().strip())
    assert refused == 30
    lines = (run_dir / "metrics.jsonl").read_bytes().splitlines()
    assert [json.loads(x)["i"] for x in lines] == list(range(acknowledged))
    assert not (run_dir / "metrics.jsonl.torn").exists()
    with RunWriter(run_dir, resume=True) as run:  # reopen works once the first closed
        run.log_metrics({"i": acknowledged}, step=acknowledged)


def test_import_and_local_writes_work_without_fcntl(tmp_path: pathlib.Path) -> None:
    """Where fcntl is missing, rlio imports, writes, refuses a second writer, via filelock."""
    code = textwrap.dedent("""
        import sys
        sys.modules["fcntl"] = None  # import fcntl now fails, as on a system without it
        import rlio
        from rlio import RunInUseError, RunWriter, read_resume_state
        from rlio.storage import locking
        assert not locking.HAVE_FLOCK
        with RunWriter(sys.argv[1]) as run:
            run.write_config({"lr": 1})
            run.log_metrics({"x": 0}, step=0)
            run.record_checkpoint("000001", batch=1, state_path="tinker://x/1")
            try:
                RunWriter(sys.argv[1])
            except RunInUseError:
                print("refused")
        with RunWriter(sys.argv[1], resume=True) as run:
            run.log_metrics({"x": 1}, step=1)
        print(read_resume_state(sys.argv[1]).next_batch)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["refused", "1"]
    assert validate_run(tmp_path / "run").ok
