"""Severity annotations: the schema splits into error- and warning-level rules, and the writer
refuses exactly the records the validator reports as errors (warnings are written)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from rlio import RecordError, RunWriter, validate_run
from rlio import layout as L
from rlio._schema.severity import SEVERITY_KEY, error_level, has_warnings
from rlio.findings import Severity
from rlio.schema import SCHEMA_NAMES, error_schema, load_schema, record_schema

NODE = {"type": ["number", "null"], "allOf": [{SEVERITY_KEY: "warning", "minimum": 0}]}


def test_error_level_drops_annotated_parts() -> None:
    """error_level removes warning subschemas; a schema without any is returned as it is."""
    assert error_level({"properties": {"a": NODE}}) == {"properties": {"a": {"type": [
        "number", "null"]}}}
    plain = {"type": "integer", "minimum": 0}
    assert error_level(plain) is plain and not has_warnings(plain)


def test_annotated_schemas_split_and_others_do_not() -> None:
    """Metrics, timing spans and checkpoints (token counts) carry warning-level ranges; the
    other schemas are all errors."""
    split = {n for n in SCHEMA_NAMES if error_schema(n) is not load_schema(n)}
    assert split == {"metrics-line", "timing-spans-line", "checkpoint-line"}
    for name in SCHEMA_NAMES:
        assert record_schema(name).has_warnings == (name in split)


#: (what, metrics record, expected verdict: "ok", "warning" or "error")
EDGES: list[tuple[str, dict[str, Any], str]] = [
    ("plain", {"step": 0, "loss": 0.5}, "ok"),
    ("done_frac 1", {"step": 0, "progress/done_frac": 1}, "ok"),
    ("done_frac above 1", {"step": 0, "progress/done_frac": 1.6}, "warning"),
    ("done_frac below 0", {"step": 0, "progress/done_frac": -0.01}, "warning"),
    ("done_frac null", {"step": 0, "progress/done_frac": None}, "ok"),
    ("done_frac string", {"step": 0, "progress/done_frac": "1"}, "error"),
    ("negative lr", {"step": 0, "optim/lr": -1e-4}, "warning"),
    ("lr bool", {"step": 0, "optim/lr": True}, "error"),
    ("negative time", {"step": 0, "time/sample": -2.0}, "warning"),
    ("negative count", {"step": 0, "time/sample:count": -1}, "warning"),
    ("fractional count", {"step": 0, "time/sample:count": 2.5}, "error"),
    ("time string", {"step": 0, "time/x": "slow"}, "error"),
    ("negative step", {"step": -1, "x": 1}, "error"),
    ("float step", {"step": 1.5, "x": 1}, "error"),
    ("negative batch", {"step": 0, "progress/batch": -1}, "error"),
    ("nested value", {"step": 0, "a": {"b": 1}}, "error"),
    ("array value", {"step": 0, "a": [1]}, "error"),
    ("env string", {"step": 0, "env/all/reward": "x"}, "error"),
    ("huge float", {"step": 0, "optim/lr": 1e308}, "ok"),
    ("many ranges", {"step": 0, "progress/done_frac": 2, "optim/lr": -1, "time/t": -1},
     "warning"),
]


@pytest.mark.parametrize(("what", "record", "verdict"), EDGES, ids=[e[0] for e in EDGES])
def test_writer_refusals_equal_validator_errors(tmp_path: pathlib.Path, what: str,
                                                record: dict[str, Any], verdict: str) -> None:
    """The writer refuses a record exactly when the validator reports an error for it; a
    warning-level record is written and reported as RL205."""
    with RunWriter(tmp_path / "w") as run:
        run.write_config({})
        try:
            run.log_metrics(dict(record))
            refused = False
        except RecordError:
            refused = True
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / L.CONFIG).write_text("{}")
    (tmp_path / "v" / L.METRICS).write_text(json.dumps(record) + "\n")
    found = [f for f in validate_run(tmp_path / "v").findings if f.file == L.METRICS]
    validator_error = any(f.severity is Severity.ERROR for f in found)
    warned = any(f.code == "RL205" for f in found)
    assert refused == validator_error == (verdict == "error"), what
    assert warned == (verdict == "warning"), (what, found)
    if not refused:
        assert validate_run(tmp_path / "w").ok
