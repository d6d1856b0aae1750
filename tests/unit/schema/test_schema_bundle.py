"""`rlio schema --bundle`: one self-contained document that plain jsonschema resolves alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
from factories import checkpoint_line, metrics_line, run_cli, trajectory

from rlio import schema
from rlio.demo import run_demo


def refs(node: Any) -> list[str]:
    """Every ``$ref`` value in ``node``."""
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def plain_validator(doc: dict[str, Any]) -> Any:
    """A python-jsonschema validator with an empty registry: any outside reference fails."""
    cls = jsonschema.validators.validator_for(doc)
    cls.check_schema(doc)
    return cls(doc, registry=referencing.Registry())


def test_bundle_holds_every_schema_and_only_local_references() -> None:
    """$defs has one entry per shipped schema; every $ref is a pointer inside the bundle."""
    bundle = schema.bundle_schema()
    assert list(bundle["$defs"]) == list(schema.SCHEMA_NAMES)
    assert "$ref" not in bundle and "docs/format.md" in bundle["description"]
    found = refs(bundle)
    assert found and all(r.startswith("#/$defs/") for r in found)
    for ref in found:  # each pointer lands on a schema object
        node: Any = bundle
        for token in ref[2:].split("/"):
            node = node[token]
        assert isinstance(node, dict), ref


@pytest.mark.parametrize("name", schema.SCHEMA_NAMES)
def test_bundle_root_variant_agrees_with_rlio(name: str) -> None:
    """With NAME at the root, plain jsonschema gives rlio's verdict on valid and invalid records."""
    samples: dict[str, list[Any]] = {
        "metrics-line": [metrics_line(0), {"step": 1, "x": {"nested": 1}}, {"step": -1}],
        "checkpoint-line": [checkpoint_line("000001", 1, state_path="tinker://r/1"), {"batch": 1}],
        "rollout-summary-line": [trajectory(1, 0, 0), {**trajectory(1, 0, 0), "steps": [{}]}],
        "config": [{"lr": 1e-5}, [1, 2]],
        "logtree": [{"title": "t", "started_at": "2026-01-01T00:00:00Z", "path": None,
                     "root": {"tag": "body", "attrs": {}, "children": ["x"]}}, {"title": 1}],
        "timing-spans-line": [{"step": 0, "spans": []}, {"spans": "no"}],
        "trace-event-line": [{"name": "n", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "args": {}},
                             {"ph": 3}],
        "capture-line": [{"kind": "reward", "scope": {"iteration": 0}, "created_at": 1.0},
                         {"kind": "reward", "scope": {"iteration": [0]}, "created_at": 1.0}],
        "capture-sample-line": [
            {"kind": "sample", "scope": {}, "created_at": 1.0, "num_samples": 1,
             "samples": [{"tokens": [1], "logprobs": [-0.5], "stop_reason": "stop"}],
             "status": "ok", "latency_sec": 0.1},
            {"kind": "sample", "scope": {}, "created_at": 1.0, "num_samples": 1,
             "status": "ok", "latency_sec": 0.1}],
        "capture-train-op-line": [
            {"kind": "train_op", "op": "optim_step", "scope": {}, "created_at": 1.0,
             "status": "ok", "latency_sec": 0.1},
            {"kind": "train_op", "scope": {}, "created_at": 1.0, "status": "ok",
             "latency_sec": 0.1}],
    }
    validator = plain_validator(schema.bundle_schema(name))
    verdicts = [(validator.is_valid(r), schema.record_schema(name).clean(r)) for r in samples[name]]
    assert all(a == b for a, b in verdicts), verdicts
    assert verdicts[0] == (True, True) and (False, False) in verdicts


def test_bundle_accepts_every_record_of_the_demo_run(tmp_path: Path) -> None:
    """Each line and document of a demo run is valid against the bundle's matching $defs entry."""
    run = tmp_path / "run"
    run_demo(run, iterations=3, layout="nested")
    bundle = schema.bundle_schema()
    by_kind = {"metrics.jsonl": "metrics-line", "checkpoints.jsonl": "checkpoint-line",
               "config.json": "config", "_rollout_summaries.jsonl": "rollout-summary-line",
               "_logtree.json": "logtree"}
    checked = 0
    for path in sorted(run.rglob("*")):
        name = next((n for end, n in by_kind.items() if path.name.endswith(end)), None)
        if name is None:
            continue
        validator = plain_validator({**bundle, "$ref": f"#/$defs/{name}"})
        text = path.read_text(encoding="utf-8")
        records = ([json.loads(text)] if path.suffix == ".json"
                   else [json.loads(line) for line in text.splitlines()])
        for record in records:
            assert not list(validator.iter_errors(record)), (path, record)
            checked += 1
    assert checked > 20


def test_cli_bundle_prints_the_document_and_refuses_unknown_names() -> None:
    """`rlio schema --bundle` prints the bundle as JSON; an unknown NAME exits 2 naming it."""
    out = run_cli("schema", "--bundle")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == schema.bundle_schema()
    rooted = run_cli("schema", "logtree", "--bundle")
    assert json.loads(rooted.stdout)["$ref"] == "#/$defs/logtree"
    bad = run_cli("schema", "nope", "--bundle")
    assert bad.returncode == 2 and "unknown schema 'nope'" in bad.stderr
