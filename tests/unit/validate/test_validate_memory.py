"""Validation streams: peak memory does not grow with the size of the files validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import run_python

CHILD = """
import resource, sys
from rlio.validate import validate_run
report = validate_run(sys.argv[1], jobs=1)
assert report.ok, [f for f in report.findings if f.severity.name == "ERROR"][:3]
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_run(root: Path, megabytes: float) -> Path:
    """A valid run whose metrics.jsonl and rollout summaries hold ``megabytes`` MB each."""
    root.mkdir()
    (root / "config.json").write_text("{}")
    step = {"step_idx": 0, "ob_len": 10, "ac_len": 3, "reward": 1.0, "episode_done": True,
            "metrics": {"m": 1.0}, "logs": {"text": "y" * 400}}
    with (root / "train_iteration_000000_rollout_summaries.jsonl").open("w") as f:
        n = 0
        while f.tell() < megabytes * 1e6:
            f.write(json.dumps({
                "schema_version": 1, "split": "train", "iteration": 0, "group_idx": n,
                "traj_idx": 0, "tags": [], "sampling_client_step": 0, "total_reward": 1.0,
                "final_reward": 0.0, "trajectory_metrics": {}, "steps": [step],
                "final_ob_len": 0}) + "\n")
            n += 1
    with (root / "metrics.jsonl").open("w") as f:
        n = 0
        while f.tell() < megabytes * 1e6:
            f.write(json.dumps({"step": n, "progress/batch": n, "note": "z" * 400}) + "\n")
            n += 1
    return root


def peak_rss_kb(run: Path) -> int:
    """Peak RSS (KiB) of a fresh interpreter validating ``run`` in one process."""
    proc = run_python(CHILD, str(run), timeout=600)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout.strip())


def test_memory_does_not_grow_with_file_size(tmp_path: Path) -> None:
    """Validating 2 x 25 MB of JSONL peaks within 16 MiB of validating 2 x 1 MB."""
    small = peak_rss_kb(make_run(tmp_path / "small", 1))
    large = peak_rss_kb(make_run(tmp_path / "large", 25))
    assert large - small < 16 * 1024, (small, large)


@pytest.mark.slow
def test_memory_flat_on_a_gigabyte(tmp_path: Path) -> None:
    """Validating 2 x 500 MB of JSONL peaks within 32 MiB of validating 2 x 1 MB."""
    small = peak_rss_kb(make_run(tmp_path / "small", 1))
    large = peak_rss_kb(make_run(tmp_path / "large", 500))
    assert large - small < 32 * 1024, (small, large)
