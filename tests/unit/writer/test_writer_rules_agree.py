"""The writer refuses exactly the docs/format.md §9 records the validator reports as errors."""

from __future__ import annotations

import copy
import pathlib
from typing import Any

import orjson
import pytest

import rlio.writer.run_writer as writer_module
from rlio import RecordError, RunWriter, validate_run
from rlio.findings import Severity


def record(rewards: list[float], total: float, *, final: float = 0.0, traj: int = 0,
           step_idx: list[int] | None = None) -> dict[str, Any]:
    """A rollout-summary record with one step per reward."""
    idx = step_idx if step_idx is not None else list(range(len(rewards)))
    steps = [{"step_idx": i, "ob_len": 3, "ac_len": 2, "reward": r,
              "episode_done": n == len(rewards) - 1, "metrics": {}, "logs": {}}
             for n, (i, r) in enumerate(zip(idx, rewards, strict=True))]
    return {"schema_version": 1, "split": "train", "iteration": 0, "group_idx": 0,
            "traj_idx": traj, "tags": [], "sampling_client_step": None, "total_reward": total,
            "final_reward": final, "trajectory_metrics": {}, "steps": steps, "final_ob_len": 4}


CASES = {
    "relative tolerance, one step": ([record([1.0], 1.0000015)], True),
    "relative tolerance, cancelling steps": ([record([1e6, -1e6], 1.5)], True),
    "beyond tolerance": ([record([1.0], 1.00001)], False),
    "final reward missing from the total": ([record([1.0], 1.0, final=1.0)], False),
    "step_idx off by one": ([record([1.0, 0.0], 1.0, step_idx=[0, 2])], False),
    "pair repeated": ([record([1.0], 1.0), record([1.0], 1.0)], False),
    "two trajectories": ([record([1.0], 1.0), record([0.5], 0.5, traj=1)], True),
}


@pytest.mark.parametrize("scan", [True, False], ids=["compiled-scan", "general-path"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_writer_and_validator_agree(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                    case: str, scan: bool) -> None:
    """Accepted records validate without error; refused ones are errors when written by hand."""
    records, accepted = CASES[case]
    if not scan:
        monkeypatch.setattr(writer_module, "rollout_scan", lambda: None)
    run = tmp_path / "run"
    with RunWriter(run) as writer:
        writer.write_config({})
        writer.log_metrics({"progress/batch": 0}, step=0)
        try:
            writer.write_rollout_summaries(0, copy.deepcopy(records))
            written = True
        except RecordError:
            written = False
    assert written is accepted
    if not written:  # what the writer refused, written without it, is an error to the validator
        (run / "train_iteration_000000_rollout_summaries.jsonl").write_bytes(
            b"".join(orjson.dumps(r) + b"\n" for r in records))
    errors = [f for f in validate_run(run).findings if f.severity == Severity.ERROR]
    assert (errors == []) is accepted, errors
