"""Concurrency: processes recording checkpoints on one run, threads sharing one RunWriter."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from rlio import RunWriter, read_resume_state

_RECORDER = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with RunWriter(run, attach=True) as w:  # helpers beside the run's writer: no lease
        print("ready", flush=True)
        sys.stdin.readline()  # start together
        for i in range(n):
            w.record_checkpoint(f"{who}-{i:04d}", batch=i, state_path=f"tinker://{who}/w/{i}",
                                who=who, seq=i, pad="p" * (i % 7 * 1500))
""")


def test_four_processes_times_500_checkpoints(tmp_path: Path) -> None:
    """4 attached processes x 500 record_checkpoint calls: 2,000 records once each, whole."""
    n, who = 500, ["a", "b", "c", "d"]
    RunWriter(tmp_path).close()  # the run exists; the recorders attach to it
    procs = [subprocess.Popen([sys.executable, "-c", _RECORDER, str(tmp_path), w, str(n)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE) for w in who]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(b"go\n")
        p.stdin.close()
    for p in procs:
        assert p.wait(timeout=600) == 0
        assert p.stdout is not None
        p.stdout.close()
    data = (tmp_path / "checkpoints.jsonl").read_bytes()
    assert data.endswith(b"\n")
    recs = [json.loads(x) for x in data.splitlines()]  # an interleaved line would not parse
    assert len(recs) == len(who) * n
    for w in who:
        assert [r["seq"] for r in recs if r["who"] == w] == list(range(n))
    order = [r["who"] for r in recs]
    assert sum(a != b for a, b in itertools.pairwise(order)) > len(who)  # they overlapped
    state = read_resume_state(tmp_path)
    assert state is not None and state.checkpoint == recs[-1] and state.line == len(recs)


def test_threads_sharing_one_writer_never_interleave_metrics(tmp_path: Path) -> None:
    """Eight threads logging through one RunWriter (lines up to 60 KB) leave only whole lines."""
    n_threads, per_thread = 8, 250
    barrier = threading.Barrier(n_threads)
    with RunWriter(tmp_path) as run:

        def work(t: int) -> None:
            barrier.wait()
            for i in range(per_thread):
                pad = "x" * ((t * 7919 + i * 104729) % 60_000)
                run.log_metrics({"thread": t, "i": i, "pad": pad})

        threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    data = (tmp_path / "metrics.jsonl").read_bytes()
    recs = [json.loads(x) for x in data.splitlines()]
    assert data.endswith(b"\n") and len(recs) == n_threads * per_thread
    for t in range(n_threads):
        assert [r["i"] for r in recs if r["thread"] == t] == list(range(per_thread))
