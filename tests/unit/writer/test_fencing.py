"""Fenced local leases: a holder whose lease file was deleted, replaced or moved, or a forked
child of it, acknowledges nothing more (``LeaseLostError``); appends share the repair's lock."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import pytest

from rlio import LeaseLostError, RlioError, RunInUseError, RunWriter, read_resume_state
from rlio.storage import open_storage
from rlio.storage.lease import LEASE_NAME, RECHECK_SECONDS


def _lines(path: pathlib.Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_bytes().splitlines() if x.strip()]


def test_lease_lost_error_is_an_rlio_error_and_a_run_in_use_error() -> None:
    """LeaseLostError is an RlioError (and a RunInUseError, for code catching refusals)."""
    assert issubclass(LeaseLostError, RlioError) and issubclass(LeaseLostError, RunInUseError)


def test_epochs_grow_with_each_holder(tmp_path: pathlib.Path) -> None:
    """Each new lease holder of a run (after a release or a crash) has a larger epoch."""
    with RunWriter(tmp_path / "r") as run:
        first = run._lease.epoch  # type: ignore[union-attr]
    lease_file = tmp_path / "r" / LEASE_NAME
    lease_file.write_text(json.dumps({"pid": 1, "epoch": 41}))  # as a SIGKILLed holder left it
    with RunWriter(tmp_path / "r", resume=True) as run:
        assert run._lease is not None and run._lease.epoch == 42 > first


def test_deleting_the_lease_file_fences_the_old_holder(tmp_path: pathlib.Path) -> None:
    """Lease file deleted, a second writer takes the run: the first one's next durable verb
    raises LeaseLostError, every later verb too, and it writes nothing more."""
    path = tmp_path / "r"
    a = RunWriter(path)
    a.log_metrics({"x": 0}, step=0)
    (path / LEASE_NAME).unlink()
    b = RunWriter(path, resume=True)
    with pytest.raises(LeaseLostError, match="deleted"):
        a.record_checkpoint("000001", batch=1, state_path="tinker://a/1")
    for verb in (lambda: a.log_metrics({"x": 1}, step=1), a.flush,
                 lambda: a.write_config({"lr": 1}),
                 lambda: a.log_timing_spans(1, [])):
        with pytest.raises(LeaseLostError):
            verb()
    with pytest.raises(LeaseLostError):
        a.close()
    b.record_checkpoint("000001", batch=1, state_path="tinker://b/1")
    b.close()
    assert [r["state_path"] for r in _lines(path / "checkpoints.jsonl")] == ["tinker://b/1"]
    state = read_resume_state(path)
    assert state is not None and state.checkpoint["state_path"] == "tinker://b/1"
    assert not (path / "config.json").exists()


def test_the_hot_path_notices_a_deleted_lease_file_within_the_recheck(
        tmp_path: pathlib.Path) -> None:
    """log_metrics alone notices a deleted lease file within RECHECK_SECONDS."""
    path = tmp_path / "r"
    with pytest.raises(LeaseLostError), RunWriter(path) as run:
        (path / LEASE_NAME).unlink()
        deadline = time.monotonic() + RECHECK_SECONDS + 5
        i = 0
        while time.monotonic() < deadline:
            run.log_metrics({"x": i}, step=i)
            i += 1
        pytest.fail("log_metrics kept acknowledging with its lease file gone")


def test_a_replaced_lease_file_fences_the_holder(tmp_path: pathlib.Path) -> None:
    """A lease file replaced by another file (same name, new inode) fences its holder."""
    path = tmp_path / "r"
    run = RunWriter(path)
    other = tmp_path / "other"
    other.write_text("{}")
    os.replace(other, path / LEASE_NAME)
    with pytest.raises(LeaseLostError, match="replaced"):
        run.flush()
    with pytest.raises(LeaseLostError):
        run.close()
    assert (path / LEASE_NAME).read_text() == "{}"  # the release left the other file alone


def test_renaming_the_run_directory_fences_the_holder(tmp_path: pathlib.Path) -> None:
    """Run directory renamed and a new writer on the old path: the old holder is fenced."""
    path, moved = tmp_path / "r", tmp_path / "moved"
    a = RunWriter(path)
    a.log_metrics({"x": 0}, step=0)
    os.rename(path, moved)
    b = RunWriter(path)
    with pytest.raises(LeaseLostError, match="moved or renamed"):
        a.record_checkpoint("000001", batch=1, state_path="tinker://a/1")
    b.record_checkpoint("000001", batch=1, state_path="tinker://b/1")
    b.close()
    with pytest.raises(LeaseLostError):
        a.close()
    assert not (moved / "checkpoints.jsonl").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_cannot_write_as_owner(tmp_path: pathlib.Path) -> None:
    """A fork()ed child's verbs raise LeaseLostError; its exit leaves the parent's lease."""
    path = tmp_path / "r"
    with RunWriter(path) as run:
        run.log_metrics({"x": 0}, step=0)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report what each verb did, then leave without cleanup hooks
            out = []
            for verb in (lambda: run.log_metrics({"x": 1}, step=1), run.flush, run.close):
                try:
                    verb()
                    out.append("ok")
                except LeaseLostError:
                    out.append("lost")
                except BaseException as exc:
                    out.append(repr(exc))
            os.write(w, ",".join(out).encode())
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        with os.fdopen(r) as f:
            assert f.read() == "lost,lost,lost"
        assert (path / LEASE_NAME).exists()
        run.log_metrics({"x": 2}, step=2)
        with pytest.raises(RunInUseError):
            RunWriter(path)
    assert [r["step"] for r in _lines(path / "metrics.jsonl")] == [0, 2]


def test_an_attached_append_never_glues_onto_a_torn_tail(tmp_path: pathlib.Path) -> None:
    """An attached writer appending after a crash's fragment starts a new line: the fragment is
    crash damage (RL117) and the new record reads whole."""
    from rlio import Severity, validate_run

    path = tmp_path / "r"
    RunWriter(path).close()
    with open(path / "metrics.jsonl", "ab") as f:
        f.write(b'{"step": 0, "x": 1}\n{"step": 1, "x')
    with RunWriter(path, attach=True) as run:
        run.log_metrics({"eval/acc": 0.75}, step=0)
    assert (path / "metrics.jsonl").read_bytes().endswith(
        b'{"step": 1, "x\n{"step":0,"eval/acc":0.75}\n')
    report = validate_run(path)
    assert not [f for f in report.findings if f.severity == Severity.ERROR]
    assert "RL117" in {f.code for f in report.findings}


_ATTACHED = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with RunWriter(path, attach=True) as run:
        print("ready", flush=True)
        for i in range(n):
            run.log_metrics({"w": tag, "i": i}, step=i)
            run.log_timing_spans(i, [{"name": tag, "duration": 0.0, "wall_start": 0.0,
                                      "wall_end": 0.0}])
""")


def test_attached_writers_lose_no_line_to_the_holders_repairs_and_rewinds(
        tmp_path: pathlib.Path) -> None:
    """Two attached processes log 4,000 lines each while the holder keeps reopening over torn
    tails (repair) with resume (rewind): every line is in the log or a sidecar exactly once."""
    path = tmp_path / "r"
    RunWriter(path).close()
    st = open_storage(path)
    n = 4000
    procs = [subprocess.Popen([sys.executable, "-c", _ATTACHED, str(path), tag, str(n)],
                              stdout=subprocess.PIPE) for tag in ("a", "b")]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    reopened = 0
    while reopened < 3 or any(p.poll() is None for p in procs):
        reopened += 1
        for rel in ("metrics.jsonl", "timing_spans.jsonl"):
            with st.lock(rel), open(path / rel, "ab") as f:  # a crash's cut-off line, left
                f.write(b'{"step": 9')  # under the lock as a writer killed mid-append does
        with RunWriter(path, resume=True) as run:
            run.log_timing_spans(0, [])  # opens (and repairs) timing_spans.jsonl
    for p in procs:
        assert p.wait(timeout=120) == 0
    for rel, key in (("metrics.jsonl", "w"), ("timing_spans.jsonl", None)):
        seen: list[tuple[object, object]] = []
        for name in (rel, rel + ".superseded", rel + ".torn"):
            if not (path / name).exists():
                continue
            for raw in (path / name).read_bytes().splitlines():
                try:
                    rec = json.loads(raw)
                except ValueError:
                    assert raw.startswith(b'{"step": 9'), raw  # only the crafted fragments
                    continue
                if key is not None and key in rec:
                    seen.append((rec["w"], rec["i"]))
                elif key is None and rec["spans"]:
                    seen.append((rec["spans"][0]["name"], rec["step"]))
        assert sorted(seen) == sorted((t, i) for t in ("a", "b") for i in range(n)), rel
