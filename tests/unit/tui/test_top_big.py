"""``rlio top`` on a run of 1,000,000 metrics lines: the first screen comes from the tail."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from rlio.tui.feeds import CAP, RunFeed

pytestmark = pytest.mark.slow


def test_a_million_line_run_shows_its_last_values_within_a_second(tmp_path: Path) -> None:
    """The last step, the reward's last value and a chart are in within 1 s of starting,
    whatever the file's length; the history scan then finds the exact best (at step 500,000)
    and keeps at most CAP points per key."""
    run = tmp_path / "big"
    run.mkdir()
    with open(run / "metrics.jsonl", "wb") as f:
        for start in range(0, 1_000_000, 50_000):
            f.write(b"".join(orjson.dumps(
                {"step": i, "progress/batch": i, "env/all/reward/total": 2.0 if i == 500_000
                 else i / 1e6, "optim/entropy": 1.0, "optim/lr": 1e-5}) + b"\n"
                for i in range(start, start + 50_000)))
    feed = RunFeed(str(run), "big", chosen=["env/all/reward/total"], poll=0.2)
    t0 = time.monotonic()
    feed.start()
    try:
        while not feed.loaded and time.monotonic() - t0 < 30:
            time.sleep(0.005)
        first = time.monotonic() - t0
        with feed.lock:
            assert feed.metrics.last_step == 999_999
            assert feed.metrics.value("env/all/reward/total") == pytest.approx(0.999999)
        assert first < 1.0, f"first screen after {first:.2f} s"
        while feed.history != "done" and time.monotonic() - t0 < 120:
            time.sleep(0.05)
        with feed.lock:
            assert feed.metrics.best["env/all/reward/total"] == 2.0
            assert all(len(s.xs) <= CAP for s in feed.metrics.series.values())
    finally:
        feed.stop()
