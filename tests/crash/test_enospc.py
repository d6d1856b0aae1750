"""A full disk, then space coming back, with the same writer: nothing acknowledged is lost."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pathlib
from collections.abc import Iterator

import pytest
from factories import small_tmpfs

from rlio import RunWriter, read_resume_state, validate_run
from rlio.errors import AppendError


@pytest.fixture
def small_disk(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A real 4 MiB tmpfs mounted for the test (skipped only where mounting is impossible)."""
    with small_tmpfs(tmp_path, "4m") as mnt:
        yield mnt


def _fill(path: pathlib.Path, leave: int) -> None:
    """Fill the disk with ``path``, then give back about ``leave`` bytes (0: quite full)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        chunk = b"f" * 65536
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, chunk)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"f" * 512)
        size = os.fstat(fd).st_size
        os.ftruncate(fd, max(0, size - leave))
    finally:
        os.close(fd)


def test_enospc_cycles_with_one_writer_keep_every_acknowledged_record(
        small_disk: pathlib.Path) -> None:
    """Three full-disk cycles (short writes included): the acknowledged records are all there,
    whole and in order; failed appends raise AppendError naming the file; resume = last ack."""
    run_dir, filler = small_disk / "run", small_disk / "filler"
    acked_steps: list[int] = []
    acked_batches: list[int] = []
    failures: list[AppendError] = []
    with RunWriter(run_dir) as run:
        run.write_config({"lr": 1e-4})

        def attempt(n: int, pad: int) -> None:
            for _ in range(n):
                step = len(acked_steps)
                try:
                    run.log_metrics({"loss": 0.5, "pad": "m" * pad}, step=step)
                    acked_steps.append(step)
                except AppendError as exc:
                    failures.append(exc)
                batch = len(acked_batches) + 1
                try:
                    run.record_checkpoint(f"{batch:06d}", batch=batch,
                                          state_path=f"tinker://r/{batch}", pad="c" * pad)
                    acked_batches.append(batch)
                except AppendError as exc:
                    failures.append(exc)

        for cycle, leave in enumerate((0, 6000, 10000)):
            attempt(20, 700)
            _fill(filler, leave)
            attempt(20, 9000 + cycle * 3000)  # lines longer than what is left: short writes
            _fill(small_disk / "filler2", 0)  # cut-back appends gave pages back: fill them
            with pytest.raises(OSError):
                run.write_config({"lr": cycle, "pad": "x" * 9000})  # a replace fails...
            assert json.loads((run_dir / "config.json").read_bytes()) == {"lr": 1e-4}  # ...old
            filler.unlink()  # space comes back; the same writer goes on
            (small_disk / "filler2").unlink()
            attempt(20, 700)
    assert failures and all(f.errno in (errno.ENOSPC, errno.EDQUOT) for f in failures)
    assert all(str(run_dir) in str(f.filename) for f in failures)
    lines = (run_dir / "metrics.jsonl").read_bytes()
    assert lines.endswith(b"\n")
    assert [json.loads(x)["step"] for x in lines.splitlines()] == acked_steps
    ledger = (run_dir / "checkpoints.jsonl").read_bytes().splitlines()
    assert [json.loads(x)["batch"] for x in ledger] == acked_batches
    state = read_resume_state(run_dir)
    assert state is not None and state.next_batch == acked_batches[-1]
    assert not [p for p in run_dir.iterdir() if ".rlio-tmp-" in p.name]
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".torn")]
    report = validate_run(run_dir)
    assert report.ok, [f for f in report.findings if str(f.severity) == "error"]
    with RunWriter(run_dir, resume=True) as again:  # the next reopen moves nothing aside
        assert again.resume_state is not None
        assert again.resume_state.next_batch == acked_batches[-1]
    assert [json.loads(x)["batch"] for x in
            (run_dir / "checkpoints.jsonl").read_bytes().splitlines()] == acked_batches
