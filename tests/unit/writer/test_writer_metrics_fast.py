"""The C ``log_metrics`` (``rlio/_accel.c``): built where a compiler is, used only where the
Python path would write the same line, and every failure or unusual call handed back to it.

Its verdicts are compared with the Python path's in ``test_writer_metrics_layouts.py``; here: that
it is built and used, its lock, closing, threads, the line index in errors, subclasses, spans, a
full disk (a real tmpfs) and a failed append leaving the writer on the Python path.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sysconfig
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from factories import pure_python, read_jsonl, small_tmpfs

from rlio import RecordError, RunWriter, _native
from rlio.errors import AppendError
from rlio.writer.support import metrics_layouts

accel = _native._module
needs_accel = pytest.mark.skipif(accel is None, reason="rlio._accel is not built here")
ROW = {"progress/batch": 3, "optim/lr": 1e-4, "env/all/reward": 0.5, "time/train:count": 2}


@pytest.fixture(autouse=True)
def fresh_layouts() -> Iterator[None]:
    """Each test starts from a process without compiled metrics layouts: their number is bounded
    per process, and earlier tests may have used up the bound (then nothing reaches C)."""
    metrics_layouts.cache_clear()
    yield
    metrics_layouts.cache_clear()


def compiler() -> str | None:
    """The C compiler Python was built with, when it is on this machine."""
    cc = (sysconfig.get_config_var("CC") or "").split()
    return shutil.which(cc[0]) if cc else None


def lines(root: pathlib.Path) -> list[Any]:
    return read_jsonl(root / "metrics.jsonl")


def test_the_extension_is_built_where_a_compiler_is() -> None:
    """An install on a machine with Python's C compiler has the extension (the build is optional
    only where there is none)."""
    if compiler() is None:
        pytest.skip("no C compiler here: the pure-Python build is the one expected")
    assert accel is not None, "rlio._accel was not built although a C compiler is present"


@needs_accel
def test_a_repeated_layout_is_written_by_the_c_path(tmp_path: pathlib.Path) -> None:
    """From a layout's third call on, lines are written by the C object (its count rises) and
    read back exactly as the Python path writes them."""
    with pure_python(False), RunWriter(tmp_path / "c") as run:
        for step in range(6):
            run.log_metrics({**ROW, "env/all/reward": step / 8}, step=step)
        assert isinstance(run.log_metrics, accel.MetricsLine)
        assert run.log_metrics.count == 4  # seen once, compiled, taught: then C
    with pure_python(True), RunWriter(tmp_path / "p") as run:
        assert not isinstance(run.log_metrics, accel.MetricsLine)
        for step in range(6):
            run.log_metrics({**ROW, "env/all/reward": step / 8}, step=step)
    c, p = (tmp_path / "c" / "metrics.jsonl").read_bytes(), (tmp_path / "p" / "metrics.jsonl")
    assert c == p.read_bytes()
    assert [r["step"] for r in lines(tmp_path / "c")] == list(range(6))


@needs_accel
def test_numpy_and_unchecked_lines_go_through_c(tmp_path: pathlib.Path) -> None:
    """numpy scalars (taught with their types) and a writer with check=False are written by C,
    as the Python path writes them."""
    row = {"progress/batch": np.int64(4), "env/a": np.float32(0.5), "flag": np.bool_(True)}
    for check in (True, False):
        out = []
        for pure in (False, True):
            root = tmp_path / f"{check}-{pure}"
            with pure_python(pure), RunWriter(root, check=check) as run:
                for step in range(5):
                    run.log_metrics(row, step=step)
                out.append((root / "metrics.jsonl").read_bytes())
                if not pure:
                    assert run.log_metrics.count >= 2
        assert out[0] == out[1]


@needs_accel
def test_record_index_in_errors_counts_lines_written_in_c(tmp_path: pathlib.Path) -> None:
    """A refused record after lines the C path wrote names its index among all lines."""
    with RunWriter(tmp_path) as run:
        for step in range(5):
            run.log_metrics(ROW, step=step)
        with pytest.raises(RecordError, match="metrics record 5 at /progress~1batch"):
            run.log_metrics({**ROW, "progress/batch": -1}, step=5)
        with pytest.raises(RecordError, match="metrics record 5 at /env~1all~1reward"):
            run.log_metrics({**ROW, "env/all/reward": "high"}, step=5)
    assert len(lines(tmp_path)) == 5


@needs_accel
def test_closed_writer_refuses_on_the_c_path(tmp_path: pathlib.Path) -> None:
    """After close, a call of a layout C knows raises the closed writer's ValueError."""
    run = RunWriter(tmp_path)
    for step in range(4):
        run.log_metrics(ROW, step=step)
    run.close()
    assert not run.log_metrics.armed
    with pytest.raises(ValueError, match="is closed"):
        run.log_metrics(ROW, step=4)
    assert len(lines(tmp_path)) == 4


@needs_accel
def test_threads_sharing_a_writer_never_interleave_lines(tmp_path: pathlib.Path) -> None:
    """Four threads logging 2,000 lines each through C and (every tenth call, a read-only
    mapping) the Python path: every line whole, each thread's steps all there."""
    import types

    def work(k: int) -> None:
        for i in range(2000):
            row = {**ROW, "env/thread": k, "env/all/reward": i / 7}
            run.log_metrics(types.MappingProxyType(row) if i % 10 == 0 else row,
                            step=k * 10000 + i)

    with RunWriter(tmp_path) as run:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert run.log_metrics.count > 4000
    steps = sorted(r["step"] for r in lines(tmp_path))
    assert steps == sorted(k * 10000 + i for k in range(4) for i in range(2000))


def test_a_subclass_overriding_log_metrics_keeps_its_override(tmp_path: pathlib.Path) -> None:
    """A RunWriter subclass with its own log_metrics is never replaced by the C object."""
    seen: list[int] = []

    class Counting(RunWriter):
        def log_metrics(self, metrics: Any, step: int | None = None) -> None:
            seen.append(step or 0)
            super().log_metrics(metrics, step)

    with Counting(tmp_path) as run:
        for step in range(5):
            run.log_metrics(ROW, step=step)
    assert seen == list(range(5)) and len(lines(tmp_path)) == 5


@needs_accel
def test_timer_spans_go_through_the_python_path(tmp_path: pathlib.Path) -> None:
    """With spans pending, a call C knows still gets its time/ metrics and its spans line."""
    with RunWriter(tmp_path) as run:
        for step in range(4):
            run.log_metrics(ROW, step=step)
        with run.timer("sample"):
            pass
        run.log_metrics(ROW, step=4)
        run.log_metrics(ROW, step=5)
    rows = lines(tmp_path)
    assert "time/sample" in rows[4] and "time/sample" not in rows[5]
    spans = read_jsonl(tmp_path / "timing_spans.jsonl")
    assert [s["step"] for s in spans] == [4]


@needs_accel
def test_lock_semantics() -> None:
    """The extension's lock: with-block, non-blocking acquire refused while held, release of an
    unheld lock a RuntimeError, and a waiting thread let in once it is released."""
    lock = accel.Lock()
    with lock:
        assert lock.locked() and lock.acquire(False) is False
    assert not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()
    lock.acquire()
    got: list[bool] = []
    t = threading.Thread(target=lambda: got.append(lock.acquire()))
    t.start()
    t.join(0.05)
    assert got == []
    lock.release()
    t.join()
    assert got == [True]


@pytest.fixture
def small_disk(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A real 1 MiB tmpfs mounted for the test (skipped only where mounting is impossible)."""
    with small_tmpfs(tmp_path, "1m") as mnt:
        yield mnt


@needs_accel
def test_full_disk_on_the_c_path_loses_nothing_acknowledged(small_disk: pathlib.Path) -> None:
    """Lines written by C until the tmpfs is full (short writes included): the failed call raises
    AppendError, the file holds exactly the acknowledged lines, and the writer then stays on
    the Python path, which writes again once space is back."""
    filler = small_disk / "filler"
    acked: list[int] = []
    pad = "p" * 3000  # lines larger than a page: the last write is cut short
    with RunWriter(small_disk / "run") as run:
        for step in range(3):
            run.log_metrics({**ROW, "name": pad}, step=step)
            acked.append(step)
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        with pytest.raises(OSError):
            while True:
                os.write(fd, b"f" * 4096)
        os.close(fd)
        with pytest.raises(AppendError):
            for step in range(3, 10000):
                run.log_metrics({**ROW, "name": pad}, step=step)
                acked.append(step)
        assert not run.log_metrics.armed
        written = run.log_metrics.count
        filler.unlink()
        run.log_metrics({**ROW, "name": pad}, step=len(acked))
        acked.append(len(acked))
        assert run.log_metrics.count == written  # the Python path wrote it
    raw = (small_disk / "run" / "metrics.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    assert [json.loads(x)["step"] for x in raw.splitlines()] == acked
