"""Runs that cannot be read are never "absent"; kills mid-replace and mid-rewind leave no debris."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Callable, Iterator

import pytest

from rlio import RunWriter, read_resume_state, validate_run
from rlio.storage import open_storage

NOBODY = 65534


def _as_nobody(fn: Callable[[], int]) -> tuple[int, str, str]:
    """Run ``fn`` in a forked child as uid/gid 65534 (root reads everything; the interpreter
    under /root cannot be exec'd by that uid, so the child runs what this process imported)."""
    import rlio.cli.main
    import rlio.cli.resume
    import rlio.resume  # noqa: F401  (loaded before the fork: the child cannot read them)

    outs = [os.pipe(), os.pipe()]
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        rc = 99
        try:
            os.dup2(outs[0][1], 1)
            os.dup2(outs[1][1], 2)
            sys.stdout = os.fdopen(1, "w")
            sys.stderr = os.fdopen(2, "w")
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            rc = fn()
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(rc)
    for _, w in outs:
        os.close(w)
    texts = []
    for r, _ in outs:
        with os.fdopen(r, "rb") as f:
            texts.append(f.read().decode())
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), texts[0], texts[1]


@pytest.fixture
def shared_dir() -> Iterator[pathlib.Path]:
    """A folder every uid can search (pytest's own tmp folders are root's 0700)."""
    import shutil
    import tempfile

    path = pathlib.Path(tempfile.mkdtemp(prefix="rlio-shared-", dir="/tmp"))
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        os.chmod(path, 0o755)
        for sub in path.iterdir():
            os.chmod(sub, 0o755)
        shutil.rmtree(path)


def _checkpointed_run(run: pathlib.Path) -> None:
    with RunWriter(run) as w:
        w.write_config({"lr": 1})
        for i in range(40):
            w.log_metrics({"x": i}, step=i)
        w.record_checkpoint("000040", batch=40, state_path="tinker://r/40")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the run to another uid")
def test_rlio_resume_on_another_users_run_exits_2_with_the_reason(
        shared_dir: pathlib.Path) -> None:
    """A 0700 run of another uid: `rlio resume` exits 2 naming permission, no traceback, and
    read_resume_state raises instead of answering "start from iteration 0"."""
    from rlio.cli.main import main
    from rlio.errors import ResumeError

    run = shared_dir / "run"
    _checkpointed_run(run)
    os.chmod(run, 0o700)  # root's, unsearchable for everyone else
    rc, out, err = _as_nobody(lambda: main(["resume", str(run)]))
    assert rc == 2, out + err
    assert "Permission denied" in err and "Traceback" not in err
    assert out == ""
    rc, out, err = _as_nobody(lambda: main(["resume", str(run), "--format", "json"]))
    assert (rc, out) == (2, ""), err

    def reader() -> int:
        try:
            read_resume_state(run)
        except ResumeError as exc:
            print("ResumeError", exc)
        return 0

    rc, out, err = _as_nobody(reader)
    assert rc == 0 and out.startswith("ResumeError") and "cannot be read" in out, err
    os.chmod(run, 0o000)  # mode 000
    rc, out, err = _as_nobody(lambda: main(["resume", str(run)]))
    assert rc == 2 and "Traceback" not in err, out + err
    state = read_resume_state(run)  # root bypasses permissions: the real answer
    assert state is not None and state.next_batch == 40


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the run to another uid")
def test_stat_and_listing_raise_on_permission_errors_instead_of_absent(
        shared_dir: pathlib.Path) -> None:
    """LocalStorage.stat and walk raise PermissionError (only ENOENT is absent), as nobody."""
    run = shared_dir / "run"
    _checkpointed_run(run)
    os.chmod(run, 0o700)

    def probe() -> int:
        st = open_storage(run)
        for call in (lambda: st.stat("checkpoints.jsonl"), lambda: list(st.walk())):
            try:
                call()
                print("absent")
            except PermissionError:
                print("raised")
        return 0

    rc, out, err = _as_nobody(probe)
    assert (rc, out.split()) == (0, ["raised", "raised"]), err
    assert open_storage(run).stat("nothing-here") is None


_REPLACER = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1], resume=True)
    run.write_config({"lr": 1})
    print("ready", flush=True)
    i = 0
    while True:  # big whole-file replaces, killed somewhere inside one
        run.write_rollout_summaries(0, [])
        run.write_code_diff("d" * 3_000_000)
        i += 1
""")


def test_temp_files_of_killed_replaces_are_swept_by_the_next_lease_holder(
        tmp_path: pathlib.Path) -> None:
    """After SIGKILLs inside atomic replaces, reopening leaves no .rlio-tmp-* file behind."""
    import time

    for k in range(5):
        p = subprocess.Popen([sys.executable, "-c", _REPLACER, str(tmp_path)],
                             stdout=subprocess.PIPE)
        assert p.stdout is not None and p.stdout.readline() == b"ready\n"
        time.sleep(0.03 * k)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
        p.stdout.close()
        RunWriter(tmp_path, resume=True).close()  # the next lease holder sweeps
        assert not [x for x in tmp_path.iterdir() if ".rlio-tmp-" in x.name]
    diff = (tmp_path / "code.diff").read_bytes()
    assert diff in (b"", b"d" * 3_000_000)  # the old file or the new one, never a mix


_REWINDER = textwrap.dedent("""
    import sys, os
    from rlio import RunWriter
    import rlio.writer.run_writer  # imported before "ready": the kill lands in the rewind
    print("ready", flush=True)
    RunWriter(sys.argv[1], resume=True).close()
    print("done", flush=True)
""")


def _big_run(run: pathlib.Path, n: int) -> None:
    with RunWriter(run) as w:
        w.write_config({"lr": 1})
        w.record_checkpoint("000010", batch=10, state_path="tinker://r/10")
        for i in range(n):
            w.log_metrics({"x": i, "pad": "p" * 200}, step=i)


@pytest.mark.parametrize("delay_ms", [30, 120, 250, 400])
def test_a_rewind_killed_midway_is_undone_or_finished_never_in_both_files(
        tmp_path: pathlib.Path, delay_ms: int) -> None:
    """SIGKILL during a resume rewind; the reopen leaves every metrics line in exactly one of
    metrics.jsonl and metrics.jsonl.superseded."""
    import time

    n = 60_000
    _big_run(tmp_path, n)
    p = subprocess.Popen([sys.executable, "-c", _REWINDER, str(tmp_path)],
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    time.sleep(delay_ms / 1000)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    p.stdout.close()
    with RunWriter(tmp_path, resume=True) as w:  # finishes or undoes, then rewinds afresh
        assert w.resume_state is not None and w.resume_state.next_batch == 10
    kept = [json.loads(x)["x"] for x in (tmp_path / "metrics.jsonl").read_bytes().splitlines()]
    side = tmp_path / "metrics.jsonl.superseded"
    moved = [json.loads(x)["x"] for x in side.read_bytes().splitlines()] if side.exists() else []
    assert kept == list(range(10))
    assert sorted(kept + moved) == list(range(n))  # each line once: none lost, none in both
    assert not [x for x in tmp_path.iterdir() if x.name.startswith(".rlio-intent")]
    assert validate_run(tmp_path).ok


def test_an_interrupted_move_found_on_reopen_is_undone(tmp_path: pathlib.Path) -> None:
    """An intent record with the sidecar copy made but the file not yet cut: the copy goes."""
    from rlio.storage import intent

    _big_run(tmp_path, 100)
    metrics = tmp_path / "metrics.jsonl"
    data = metrics.read_bytes()
    offset = data.index(b'{"step":50,')
    intent.write(str(tmp_path), rel="metrics.jsonl", offset=offset, end=len(data),
                 sidecar="metrics.jsonl.superseded", sidecar_size=0)
    (tmp_path / "metrics.jsonl.superseded").write_bytes(data[offset:])  # killed before the cut
    assert intent.recover(str(tmp_path)) == 1
    assert metrics.read_bytes() == data
    assert (tmp_path / "metrics.jsonl.superseded").read_bytes() == b""
    assert not [x for x in tmp_path.iterdir() if x.name.startswith(".rlio-intent")]
