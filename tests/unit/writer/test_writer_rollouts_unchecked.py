"""write_rollout_summaries with check=False: in-order batches are encoded straight by orjson."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import orjson
import pytest

from rlio import RecordError, RunWriter

FILE = "train_iteration_000003_rollout_summaries.jsonl"


def record(g: int, t: int, **over: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema_version": 1, "split": "train", "iteration": 3, "group_idx": g, "traj_idx": t,
        "tags": ["a"], "sampling_client_step": 3, "total_reward": 1.5, "final_reward": 1.0,
        "trajectory_metrics": {"turns": 1},
        "steps": [{"step_idx": 0, "ob_len": 5, "ac_len": 2, "reward": 0.5,
                   "episode_done": True, "metrics": {}, "logs": {}}],
        "final_ob_len": 4,
    }
    out.update(over)
    return out


def written(root: pathlib.Path, recs: list[Any]) -> bytes:
    with RunWriter(root, check=False) as run:
        run.write_rollout_summaries(3, recs)
    return (root / FILE).read_bytes()


def test_in_order_batch_is_each_record_as_orjson_writes_it(tmp_path: pathlib.Path) -> None:
    """Records in documented order are written as given, numpy scalars natively, in pieces."""
    recs = [record(g, t) for g in range(200) for t in range(4)]
    recs[7]["trajectory_metrics"] = {"x": np.float32(0.5), "n": np.int64(2)}
    data = written(tmp_path, recs)
    assert data == b"".join(orjson.dumps(r, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
                            for r in recs)


def test_out_of_order_or_incomplete_records_are_still_ordered_and_filled(
        tmp_path: pathlib.Path) -> None:
    """A record with keys out of order, or without split/iteration, takes the general path."""
    reordered = dict(reversed(list(record(0, 1).items())))
    bare = record(0, 2)
    for k in ("schema_version", "split", "iteration"):
        bare.pop(k)
    lines = written(tmp_path, [record(0, 0), reordered, bare]).splitlines()
    assert [list(orjson.loads(x)) for x in lines] == [list(record(0, 0))] * 3


def test_unencodable_value_is_named_and_nothing_replaced(tmp_path: pathlib.Path) -> None:
    """A value orjson refuses in an in-order batch raises RecordError naming the record."""
    recs = [record(0, t) for t in range(600)]
    recs[400]["trajectory_metrics"] = {"x": object()}
    with RunWriter(tmp_path, check=False) as run, pytest.raises(RecordError) as info:
        run.write_rollout_summaries(3, recs)
    assert info.value.index == 400 and info.value.pointer == "/trajectory_metrics/x"
    assert not (tmp_path / FILE).exists()
