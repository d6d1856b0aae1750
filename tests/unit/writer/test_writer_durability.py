"""RunWriter durability: append handles, torn tails, atomic replace, concurrency, logtrees."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from factories import read_jsonl, run_python, trajectory

from rlio import RecordError, RunExistsError, RunWriter
from rlio.storage import TEMP_INFIX, open_storage
from rlio.storage.tail import repair_torn_tail


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- append handles ----------------------------------------------------------------------------


def test_metrics_line_is_visible_before_log_metrics_returns(tmp_path: pathlib.Path) -> None:
    """Each metrics line is handed to the OS at once: another reader sees it while open."""
    with RunWriter(tmp_path) as run:
        for i in range(3):
            run.log_metrics({"x": i}, step=i)
            assert read_jsonl(tmp_path / "metrics.jsonl")[-1] == {"step": i, "x": i}


def test_metrics_use_one_persistent_handle(tmp_path: pathlib.Path) -> None:
    """Logging many records opens one file descriptor (plus the lease's), not one per record."""
    before = open_fds()
    run = RunWriter(tmp_path)
    run.log_metrics({"x": 0}, step=0)
    during = open_fds()
    for i in range(1, 200):
        run.log_metrics({"x": i}, step=i)
    assert open_fds() == during == before + 2  # metrics.jsonl and the run's lease
    run.close()
    assert open_fds() == before
    assert len(read_jsonl(tmp_path / "metrics.jsonl")) == 200


def test_flush_makes_lines_durable_without_closing(tmp_path: pathlib.Path) -> None:
    """flush() fsyncs the open append handles and the writer stays usable."""
    with RunWriter(tmp_path) as run:
        run.log_metrics({"x": 1}, step=0)
        run.flush()
        run.log_metrics({"x": 2}, step=1)
    assert len(read_jsonl(tmp_path / "metrics.jsonl")) == 2


# -- torn tails --------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["metrics.jsonl", "checkpoints.jsonl"])
def test_torn_tail_is_moved_to_sidecar_on_reopen(tmp_path: pathlib.Path, rel: str) -> None:
    """An unterminated last line is moved to <file>.torn (kept, never deleted) before appending."""
    good = b'{"step":0,"name":"a"}\n'
    if rel == "metrics.jsonl":
        _far_checkpoint(tmp_path)
    (tmp_path / rel).write_bytes(good + b'{"step":1,"na')
    with RunWriter(tmp_path, resume=True) as run:
        if rel == "metrics.jsonl":
            run.log_metrics({"name": "b"}, step=1)
        else:
            run.record_checkpoint("b", batch=1)
    data = (tmp_path / rel).read_bytes()
    assert data.startswith(good)
    assert all(isinstance(r, dict) for r in read_jsonl(tmp_path / rel))
    assert len(data.splitlines()) == 2
    assert (tmp_path / (rel + ".torn")).read_bytes() == b'{"step":1,"na\n'


def test_unparseable_last_complete_line_is_moved_aside(tmp_path: pathlib.Path) -> None:
    """A terminated but unparseable last line (a crash's garbage) also goes to the sidecar."""
    (tmp_path / "metrics.jsonl").write_bytes(b'{"step":0}\n\x00\x00\x00\n')
    assert repair_torn_tail(open_storage(tmp_path), "metrics.jsonl") == 4
    assert (tmp_path / "metrics.jsonl").read_bytes() == b'{"step":0}\n'
    assert (tmp_path / "metrics.jsonl.torn").read_bytes() == b"\x00\x00\x00\n"


@pytest.mark.parametrize("content", [b'{"step":0}\n', b'{"step":0}\n\n', b"", b'{"a":NaN}\n'])
def test_clean_files_are_left_alone(tmp_path: pathlib.Path, content: bytes) -> None:
    """Complete lines, a blank last line, an empty file and NaN tokens are not torn."""
    (tmp_path / "metrics.jsonl").write_bytes(content)
    assert repair_torn_tail(open_storage(tmp_path), "metrics.jsonl") == 0
    assert (tmp_path / "metrics.jsonl").read_bytes() == content
    assert not (tmp_path / "metrics.jsonl.torn").exists()


def test_repair_handles_long_tails_and_files_without_newline(tmp_path: pathlib.Path) -> None:
    """Torn tails longer than the read chunk, and files with no newline at all, are moved whole."""
    st = open_storage(tmp_path)
    long_tail = b'{"x":"' + b"y" * 200_000
    (tmp_path / "metrics.jsonl").write_bytes(b'{"step":0}\n' + long_tail)
    assert repair_torn_tail(st, "metrics.jsonl") == len(long_tail)
    assert (tmp_path / "metrics.jsonl").read_bytes() == b'{"step":0}\n'
    (tmp_path / "checkpoints.jsonl").write_bytes(b'{"name":"a"')
    assert repair_torn_tail(st, "checkpoints.jsonl") == 11
    assert (tmp_path / "checkpoints.jsonl").read_bytes() == b""
    big_line = b'{"x":"' + b"z" * 100_000 + b'"}\n'
    (tmp_path / "timing_spans.jsonl").write_bytes(big_line + b"garbage\n")
    assert repair_torn_tail(st, "timing_spans.jsonl") == 8
    assert (tmp_path / "timing_spans.jsonl").read_bytes() == big_line


def test_repair_of_missing_file_creates_nothing(tmp_path: pathlib.Path) -> None:
    """repair_torn_tail on an absent file returns 0 and does not create it."""
    assert repair_torn_tail(open_storage(tmp_path), "checkpoints.jsonl") == 0
    assert list(tmp_path.iterdir()) == []


def test_opening_a_new_run_creates_an_empty_metrics_file(tmp_path: pathlib.Path) -> None:
    """A new run gets an empty metrics.jsonl (and its lease, gone on close), nothing else."""
    run = RunWriter(tmp_path / "run")
    assert (tmp_path / "run" / "metrics.jsonl").read_bytes() == b""
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".rlio-lease", "metrics.jsonl"]
    run.close()
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["metrics.jsonl"]


def test_writer_killed_right_after_opening_leaves_a_not_started_run(
        tmp_path: pathlib.Path) -> None:
    """A process SIGKILLed right after RunWriter() leaves an empty metrics.jsonl (RL116)."""
    from rlio import validate_run

    code = ("import os, signal, sys\nfrom rlio import RunWriter\n"
            "w = RunWriter(sys.argv[1])\nw.write_config({'lr': 1e-4})\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = run_python(code, str(tmp_path))
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / "metrics.jsonl").read_bytes() == b""
    codes = {f.code for f in validate_run(tmp_path).findings}
    assert "RL116" in codes and "RL109" not in codes


def test_reopening_keeps_metrics_and_creates_nothing_else(tmp_path: pathlib.Path) -> None:
    """Reopening a run with records for a fresh start raises RunExistsError and changes nothing
    (no truncation, no other file); an empty run may be reopened."""
    RunWriter(tmp_path).close()
    RunWriter(tmp_path).close()  # an empty metrics.jsonl is no record
    with RunWriter(tmp_path) as run:
        run.log_metrics({"x": 1}, step=0)
    with pytest.raises(RunExistsError, match="resume=True"):
        RunWriter(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.jsonl"]
    assert read_jsonl(tmp_path / "metrics.jsonl") == [{"step": 0, "x": 1}]


def test_repeated_repairs_append_to_the_sidecar(tmp_path: pathlib.Path) -> None:
    """Two crashes' torn tails both stay in the sidecar, in order."""
    _far_checkpoint(tmp_path)
    (tmp_path / "metrics.jsonl").write_bytes(b'{"step":0}\n{"st')
    RunWriter(tmp_path, resume=True).close()  # reopening repairs, before anything is appended
    assert (tmp_path / "metrics.jsonl").read_bytes() == b'{"step":0}\n'
    with RunWriter(tmp_path, resume=True) as run:
        run.log_metrics({}, step=1)
    with (tmp_path / "metrics.jsonl").open("ab") as f:
        f.write(b'{"ste')
    with RunWriter(tmp_path, resume=True) as run:
        run.log_metrics({}, step=2)
    assert (tmp_path / "metrics.jsonl.torn").read_bytes() == b'{"st\n{"ste\n'
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [0, 1, 2]


def _far_checkpoint(root: pathlib.Path) -> None:
    """A ledger whose restart point is past every step: a resume supersedes no metrics line."""
    (root / "checkpoints.jsonl").write_bytes(b'{"name":"far","batch":1000000,"state_path":"s"}\n')


# -- atomic replace ----------------------------------------------------------------------------


def test_whole_file_writes_leave_no_temp_files(tmp_path: pathlib.Path) -> None:
    """config, code.diff, rollout summaries and logtrees go through temp files that vanish."""
    with RunWriter(tmp_path, layout="nested") as run:
        run.write_config({"a": 1})
        run.write_code_diff("d")
        run.write_rollout_summaries(0, [trajectory(0)])
        with run.logtree(0, title="t") as lt:
            lt.text("x")
        with pytest.raises(RecordError):
            run.write_rollout_summaries(0, [{"bad": 1}])
    names = [p.name for p in tmp_path.rglob("*")]
    assert not [n for n in names if TEMP_INFIX in n]
    assert sorted(names) == sorted(["config.json", "code.diff", "iteration_000000", "metrics.jsonl",
                                    "train_rollout_summaries.jsonl", "train.html",
                                    "train_logtree.json"])


def test_rollout_summaries_are_replaced_whole(tmp_path: pathlib.Path) -> None:
    """Writing an iteration again replaces its file (a shorter file leaves no old bytes)."""
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(0, [trajectory(0, 0, i) for i in range(5)])
        run.write_rollout_summaries(0, [trajectory(0, 0, 9)])
    got = read_jsonl(tmp_path / "train_iteration_000000_rollout_summaries.jsonl")
    assert [r["traj_idx"] for r in got] == [9]


# -- logtree -----------------------------------------------------------------------------------


def test_logtree_writes_json_and_html_on_exit(tmp_path: pathlib.Path) -> None:
    """The logtree block writes the JSON (path = its HTML twin) and a complete escaped HTML,
    both carrying one write id (the JSON's first key, a meta tag of the HTML)."""
    with RunWriter(tmp_path, layout="nested") as run, \
            run.logtree(4, title="RL Iteration 4", evaluator="my eval") as lt:
        with lt.section("Group Rollout"):
            lt.conversation([{"role": "assistant", "content": "<script>alert(1)</script>"}])
        assert not (tmp_path / "iteration_000004").exists()  # nothing before the block ends
    doc = json.loads((tmp_path / "iteration_000004" / "eval_my_eval_logtree.json").read_text())
    assert list(doc) == ["write_id", "title", "started_at", "path", "root"]
    assert doc["title"] == "RL Iteration 4"
    assert doc["path"].endswith("iteration_000004/eval_my_eval.html")
    assert pathlib.Path(doc["path"]).resolve() == \
        (tmp_path / "iteration_000004" / "eval_my_eval.html").resolve()
    html = (tmp_path / "iteration_000004" / "eval_my_eval.html").read_text()
    assert html.lower().startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert "<script>alert(1)</script>" not in html
    assert f'<meta name="rlio-write-id" content="{doc["write_id"]}">' in html


def test_logtree_is_written_when_the_block_raises(tmp_path: pathlib.Path) -> None:
    """An exception inside the block is recorded into the tree, both files written, re-raised."""
    with RunWriter(tmp_path) as run, pytest.raises(KeyError, match="boom"), \
            run.logtree(1, title="t") as lt:
        lt.text("before")
        raise KeyError("boom")
    doc = (tmp_path / "train_iteration_000001_logtree.json").read_text()
    assert "before" in doc and "KeyError" in doc and "boom" in doc
    assert "KeyError" in (tmp_path / "train_iteration_000001.html").read_text()


def test_logtree_write_failure_does_not_hide_the_block_error(tmp_path: pathlib.Path) -> None:
    """If the block raised and writing then fails, the block's exception still propagates."""
    run = RunWriter(tmp_path, layout="nested")
    with pytest.raises(RuntimeError, match="original") as info, run.logtree(0, title="t"):
        (tmp_path / "iteration_000000").write_text("a file where a directory belongs")
        raise RuntimeError("original")
    assert any("could not be written" in n for n in getattr(info.value, "__notes__", []))
    run.close()


# -- concurrency -------------------------------------------------------------------------------


def test_threads_sharing_a_writer_never_interleave(tmp_path: pathlib.Path) -> None:
    """Eight threads logging through one writer produce only whole, parseable lines."""
    n_threads, per_thread = 8, 150
    with RunWriter(tmp_path) as run:
        def work(t: int) -> None:
            for i in range(per_thread):
                run.log_metrics({"thread": t, "i": i, "pad": "x" * (t * 300)})
                if i % 50 == 0:
                    run.record_checkpoint(f"t{t}-{i}", batch=i)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    recs = read_jsonl(tmp_path / "metrics.jsonl")
    assert len(recs) == n_threads * per_thread
    for t in range(n_threads):
        assert [r["i"] for r in recs if r["thread"] == t] == list(range(per_thread))
    assert len(read_jsonl(tmp_path / "checkpoints.jsonl")) == n_threads * 3


_CHILD = textwrap.dedent("""
    import sys
    from rlio import RecordError
    from rlio import RunWriter
    run_dir, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with RunWriter(run_dir, attach=True) as run:  # three writers join one run
        for i in range(n):
            run.record_checkpoint(f"{who}-{i:04d}", batch=i, state_path=f"tinker://{who}/{i}",
                                  pad="p" * (4096 + i))
""")


def test_processes_recording_checkpoints_concurrently(tmp_path: pathlib.Path) -> None:
    """Three attached processes appending checkpoints at once leave whole lines, in order."""
    n = 40
    RunWriter(tmp_path).close()  # the run exists; the helpers attach to it
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), f"p{k}", str(n)])
             for k in range(3)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    recs = read_jsonl(tmp_path / "checkpoints.jsonl")
    assert len(recs) == 3 * n
    for k in range(3):
        assert [r["batch"] for r in recs if r["name"].startswith(f"p{k}-")] == list(range(n))


_KILLED = textwrap.dedent("""
    import sys
    from rlio import RecordError
    from rlio import RunWriter
    with RunWriter(sys.argv[1]) as run:
        i = 0
        while True:
            run.log_metrics({"x": i, "pad": "q" * 2000}, step=i)
            if i == 50:
                print("ready", flush=True)
            i += 1
""")


def test_sigkill_mid_logging_leaves_whole_lines_and_at_most_a_torn_tail(
        tmp_path: pathlib.Path) -> None:
    """A process SIGKILLed while logging leaves whole lines in step order and at most a torn
    prefix of the next one (Linux may cut a write that spans pages when the kill lands), which
    reopening the run moves to the sidecar."""
    proc = subprocess.Popen([sys.executable, "-c", _KILLED, str(tmp_path)],
                            stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    data = (tmp_path / "metrics.jsonl").read_bytes()
    whole, _, tail = data.rpartition(b"\n")
    steps = [json.loads(line)["step"] for line in whole.split(b"\n")]
    assert steps == list(range(len(steps))) and len(steps) > 50
    n = len(steps)
    assert (b'{"step":%d,"x":%d,"pad":"%s"}\n' % (n, n, b"q" * 2000)).startswith(tail)
    _far_checkpoint(tmp_path)
    RunWriter(tmp_path, resume=True).close()
    assert (tmp_path / "metrics.jsonl").read_bytes() == whole + b"\n"
    torn = tmp_path / "metrics.jsonl.torn"
    assert (torn.read_bytes() == tail + b"\n") if tail else not torn.exists()


# -- resume ------------------------------------------------------------------------------------


def test_resume_moves_superseded_metrics_aside(tmp_path: pathlib.Path) -> None:
    """resume=True exposes the restart point and moves metrics at/after it to the sidecar."""
    with RunWriter(tmp_path) as run:
        for i in range(6):
            run.log_metrics({"x": i}, step=i)
            if i == 2:
                run.record_checkpoint("000003", batch=3, state_path="tinker://r/3")
    with (tmp_path / "metrics.jsonl").open("ab") as f:
        f.write(b'{"step":6,"x"')  # the crash
    with pytest.raises(RunExistsError):  # a fresh start over it: refused, nothing changed
        RunWriter(tmp_path)
    assert (tmp_path / "metrics.jsonl").read_bytes().endswith(b'{"step":6,"x"')
    with RunWriter(tmp_path, resume=True) as run:
        assert run.resume_state is not None and run.resume_state.next_batch == 3
        run.log_metrics({"x": 3}, step=3)
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [0, 1, 2, 3]
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl.superseded")] == [3, 4, 5]
    assert (tmp_path / "metrics.jsonl.torn").read_bytes() == b'{"step":6,"x"\n'


def test_resume_on_a_fresh_run_is_none(tmp_path: pathlib.Path) -> None:
    """resume=True on a run with no checkpoint gives resume_state None and writes nothing."""
    with RunWriter(tmp_path / "new", resume=True) as run:
        assert run.resume_state is None


def test_writer_on_the_memory_backend() -> None:
    """The writer works through the storage interface alone: memory:// runs validate clean."""
    import uuid

    import fsspec

    from rlio import read_resume_state, validate_run
    from rlio.demo import run_demo

    root = f"memory://rlio-writer-{uuid.uuid4().hex}"
    run_demo(root, layout="nested", iterations=4)
    report = validate_run(root)
    assert report.ok and report.layout == "nested"
    state = read_resume_state(root)
    assert state is not None and state.checkpoint["name"] == "final"
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{root}/metrics.jsonl", fs.cat(f"{root}/metrics.jsonl") + b'{"step":4,"x')
    with pytest.warns(UserWarning, match="nested"), \
            RunWriter(root, layout="flat", resume=True) as run:
        assert run.layout == "nested"
        run.log_metrics({"x": 1}, step=4)
    assert fs.cat(f"{root}/metrics.jsonl.torn") == b'{"step":4,"x\n'
    assert fs.cat(f"{root}/metrics.jsonl").endswith(b'{"step":4,"x":1}\n')
