"""rollouts() and iter_metrics() stream: peak memory stays flat however large the file."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from factories import metrics_line, trajectory

from rlio import layout
from rlio.reader import open_run


def _big_rollouts(root: Path, target: int) -> int:
    """Write one iteration's rollout summaries of about ``target`` bytes; returns the lines."""
    path = root / layout.iteration_path("flat", 0, "rollout_summaries")
    path.parent.mkdir(parents=True, exist_ok=True)
    (root / layout.METRICS).write_text(json.dumps(metrics_line(0)) + "\n")
    record = trajectory(0, n_steps=20)
    record["trajectory_metrics"]["pad"] = "x" * 2000
    lines = 0
    with path.open("w") as f:
        written = 0
        while written < target:
            record["group_idx"], record["traj_idx"] = divmod(lines, 8)
            line = json.dumps(record) + "\n"
            f.write(line)
            written += len(line)
            lines += 1
    return lines


def _peak_while_iterating(root: Path) -> tuple[int, int]:
    """(records, peak traced bytes) of one pass of rollouts(0)."""
    run = open_run(root)
    tracemalloc.start()
    try:
        n = sum(1 for _ in run.rollouts(0))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return n, peak


def test_rollouts_stream_a_file_in_bounded_memory(tmp_path: Path) -> None:
    """A 24 MB rollout file is iterated with a peak under 2 MB: one line at a time."""
    lines = _big_rollouts(tmp_path, 24 << 20)
    n, peak = _peak_while_iterating(tmp_path)
    assert n == lines
    assert peak < 2 << 20, f"peak {peak:,} bytes"


@pytest.mark.slow
def test_rollouts_stream_a_large_file_in_bounded_memory(tmp_path: Path) -> None:
    """A 96 MB rollout file is iterated with the same small peak as a 24 MB one."""
    lines = _big_rollouts(tmp_path, 96 << 20)
    n, peak = _peak_while_iterating(tmp_path)
    assert n == lines
    assert peak < 2 << 20, f"peak {peak:,} bytes"


def test_metrics_iterate_lazily(tmp_path: Path) -> None:
    """iter_metrics over 100,000 lines holds one record at a time (peak under 2 MB, most of it
    the read buffer)."""
    with (tmp_path / layout.METRICS).open("w") as f:
        for s in range(100_000):
            f.write(json.dumps(metrics_line(s)) + "\n")
    run = open_run(tmp_path)
    tracemalloc.start()
    try:
        n = sum(1 for _ in run.iter_metrics())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 100_000
    assert peak < 2 << 20, f"peak {peak:,} bytes"
