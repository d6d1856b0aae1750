"""What the writer refuses and writes, judged against the schema and byte for byte.

``log_metrics`` writes a line exactly when its strict-JSON image is valid (python-jsonschema) and
encodable; a refused record names its pointer; short writes are completed; a refused rollout
record leaves the file as it was, however late in the batch.
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile
from typing import Any

import jsonschema
import orjson
import pytest
from factories import ordered_record, strict_json, writer_agrees_with_validator
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import RecordError, RunWriter
from rlio.schema import error_schema
from rlio.storage import TEMP_INFIX

METRICS = error_schema("metrics-line")  # the rules the writer refuses (ranges are warnings)
EXAMPLES = settings(max_examples=150, deadline=None)


def is_valid(schema: dict[str, Any], instance: Any) -> bool:
    return bool(jsonschema.validators.validator_for(schema)(schema).is_valid(instance))


KEYS = st.sampled_from(["progress/batch", "progress/done_frac", "optim/lr", "optim/entropy",
                        "time/total", "time/train:count", "env/all/reward", "loss", "name",
                        "training_client/step", "time/x:count", "env/", "x"])
SCALARS = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
           | st.integers(-3, 3) | st.floats() | st.sampled_from([0.0, -0.0, 1.0, 0.5, 1.5, -1.0])
           | st.text(max_size=4))
VALUES = SCALARS | st.lists(SCALARS, max_size=2) | st.dictionaries(st.text(max_size=2), SCALARS,
                                                                     max_size=2)
STEPS = (st.integers(-2, 10**6) | st.sampled_from([2**63, 2**64 - 1, 2**64, 2**70, -(2**63) - 1])
         | st.booleans() | st.floats() | st.none() | st.text(max_size=2))



@EXAMPLES
@given(st.dictionaries(KEYS, VALUES, max_size=6), STEPS)
def test_log_metrics_accepts_exactly_what_the_schema_accepts(metrics: dict[str, Any],
                                                             step: Any) -> None:
    """log_metrics writes a line iff its strict-JSON image is valid and encodable; the bytes
    are orjson's encoding of that image with step first (step None: no step)."""
    record = metrics if step is None else {"step": step, **metrics}
    encodable = all(-(2**63) <= v <= 2**64 - 1 for v in record.values()
                    if type(v) is int) and not any(isinstance(v, (list, dict))
                                                   for v in record.values())
    expected = encodable and is_valid(METRICS, strict_json(record))
    with tempfile.TemporaryDirectory() as d:
        with RunWriter(d) as run:
            try:
                run.log_metrics(metrics, step=step)
                written = True
            except RecordError:
                written = False
        data = pathlib.Path(d, "metrics.jsonl").read_bytes()
    assert written == expected
    assert data == (orjson.dumps(strict_json(record)) + b"\n" if expected else b"")


def test_a_line_repeated_many_times_is_checked_each_time(tmp_path: pathlib.Path) -> None:
    """The same keys logged again and again: a bad value is still refused, naming it."""
    with RunWriter(tmp_path) as run:
        for i in range(20):
            run.log_metrics({"optim/lr": 1e-4, "time/total": 1.0, "loss": 0.5}, step=i)
        with pytest.raises(RecordError) as info:
            run.log_metrics({"optim/lr": "high", "time/total": 1.0, "loss": 0.5}, step=20)
    assert info.value.pointer == "/optim~1lr" and info.value.index == 20
    assert len((tmp_path / "metrics.jsonl").read_bytes().splitlines()) == 20


@pytest.mark.parametrize("step", [2**64, 2**70, -(2**63) - 1])
def test_step_beyond_64_bits_is_an_error(tmp_path: pathlib.Path, step: int) -> None:
    """A step orjson cannot write is refused naming /step; nothing is written."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.log_metrics({"x": 1}, step=step)
    assert info.value.pointer == "/step"
    assert (tmp_path / "metrics.jsonl").read_bytes() == b""


def test_short_write_is_completed_not_duplicated(tmp_path: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """When the OS takes only part of a line (a signal, a full disk), the rest follows it."""
    real = os.write
    calls: list[int] = []

    def half_once(fd: int, data: Any) -> int:
        calls.append(len(data))
        return real(fd, bytes(data)[: len(data) // 2] if len(calls) == 1 else data)

    with RunWriter(tmp_path) as run:
        monkeypatch.setattr(os, "write", half_once)
        run.log_metrics({"x": 1, "pad": "p" * 100}, step=0)
        monkeypatch.setattr(os, "write", real)
        run.log_metrics({"x": 2}, step=1)
    lines = (tmp_path / "metrics.jsonl").read_bytes().splitlines()
    assert [json.loads(x) for x in lines] == [{"step": 0, "x": 1, "pad": "p" * 100},
                                              {"step": 1, "x": 2}]
    assert len(calls) == 2



# -- rollout summaries: a late refusal --------------------------------------------------------

def test_late_bad_record_after_megabytes_leaves_the_file_unchanged(
        tmp_path: pathlib.Path) -> None:
    """A bad record after megabytes of good ones: the old file is kept, no temp file left."""
    path = tmp_path / "train_iteration_000004_rollout_summaries.jsonl"
    recs = [ordered_record(g, t, tags=["x" * 500]) for g in range(400) for t in range(8)]
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(4, recs[:2])
        before = path.read_bytes()
        recs[-1] = ordered_record(0, 0)  # a duplicate id, found last
        with pytest.raises(RecordError) as info:
            run.write_rollout_summaries(4, recs)
    assert info.value.index == len(recs) - 1 and info.value.pointer == "/traj_idx"
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if TEMP_INFIX in p.name]


def test_large_batch_is_written_whole_and_exact(tmp_path: pathlib.Path) -> None:
    """A batch of megabytes: the file is the records' lines in order, nothing else."""
    recs = [ordered_record(g, t, tags=[f"t{g}-{t}" * 40]) for g in range(300) for t in range(8)]
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(4, recs)
    data = (tmp_path / "train_iteration_000004_rollout_summaries.jsonl").read_bytes()
    assert len(data) > 1 << 20
    assert data == b"".join(orjson.dumps(r) + b"\n" for r in recs)


@pytest.mark.parametrize(("key", "value"), [
    ("schema_version", "bool_"),  # == 1 as a Python value, but written as true
    ("iteration", "float64"),  # an integral float: written 4.0, an integer to the schema
    ("group_idx", "int64"),
])
def test_numpy_values_are_judged_as_written(key: str, value: str) -> None:
    """A numpy value is judged as the JSON it is written as, so the writer refuses exactly what
    the validator calls an error (numpy's True equals 1, but ``true`` is not the const 1)."""
    import numpy as np

    made = {"bool_": np.True_, "float64": np.float64(4.0), "int64": np.int64(2)}[value]
    record = ordered_record(0, 0, **{key: made})
    assert writer_agrees_with_validator(
        lambda run: run.write_rollout_summaries(4, [record]),
        ("train_iteration_000004_rollout_summaries.jsonl",)) is (key != "schema_version")
