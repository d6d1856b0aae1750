"""Round trips: records generated from the schemas are written by RunWriter, read back equal
(modulo the documented non-finite policy) and validate clean.

hypothesis-jsonschema 0.23 does not run against the installed hypothesis (its object strategy uses
a removed internal), so ``from_schema`` below generates from the subset of JSON Schema that
schemas/*.json use: ``$ref`` into ``$defs``, ``type``, ``const``, ``properties``, ``required``,
``patternProperties``, ``additionalProperties``, ``items``, ``minimum``/``maximum``,
``minLength`` and ``pattern``. Every generated instance is checked by python-jsonschema first, so
a generator bug cannot make the property vacuous.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import orjson
from factories import read_jsonl, strict_json
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rlio import RunWriter
from rlio.rules import resume_problem
from rlio.schema import load_schema

INT64 = (-(2**63), 2**63 - 1)
#: Documented key orders: the schemas' ``properties`` orders (docs/format.md §5, §6).
ROLLOUT_ORDER = list(load_schema("rollout-summary-line")["properties"])
STEP_ORDER = list(load_schema("rollout-summary-line")["$defs"]["step"]["properties"])
#: The checkpoint keys written first, in documented order (docs/format.md §5: every property of
#: the schema, the typed extra keys rolling and the token counts included, as the validator's
#: key-order check reads them); other keys follow in call order.
CHECKPOINT_NAMED = list(load_schema("checkpoint-line")["properties"])
#: Key prefixes that exercise the metrics schema's properties and patternProperties.
KEY_HINTS = ["time/", "env/", "optim/", "progress/", "eval/", "step", "name"]

_json_scalars = (st.none() | st.booleans() | st.integers(*INT64)
                 | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8,
)


def validator(schema: dict[str, Any]) -> Any:
    return jsonschema.Draft202012Validator(schema)


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        schema = root["$defs"][ref[len("#/$defs/"):]]
    return schema


def _typed(kind: str, schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(INT64[0] if lo is None else math.ceil(lo),
                           INT64[1] if hi is None else math.floor(hi))
    if kind == "number":
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False) | _typed(
            "integer", schema, root)
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=False).filter(
                lambda s: re.search(schema["pattern"], s) is not None)
        return st.text(min_size=schema.get("minLength", 0), max_size=12)
    if kind == "array":
        items = schema.get("items", True)
        return st.lists(from_schema(items, root), max_size=4)
    if kind == "object":
        return _object(schema, root)
    raise AssertionError(f"type {kind!r} not handled")


def _object(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    props: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    patterns: dict[str, Any] = schema.get("patternProperties", {})
    additional = schema.get("additionalProperties", True)

    def schemas_for(key: str) -> list[Any]:
        found = [props[key]] if key in props else []
        found += [s for rgx, s in patterns.items() if re.search(rgx, key)]
        if not found and additional is not False:
            found = [additional]
        return found

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        keys = list(required)
        keys += [k for k in props if k not in keys and draw(st.booleans())]
        if additional is not False:
            hint = st.sampled_from(KEY_HINTS).flatmap(
                lambda p: st.text(max_size=5).map(lambda t: p + t))
            tail = st.sampled_from(["", ":count"])
            extra = draw(st.lists(st.tuples(st.one_of(st.text(max_size=8), hint), tail)
                                  .map("".join), max_size=5, unique=True))
            keys += [k for k in extra if k not in keys and k not in props]
        order = draw(st.permutations(keys))
        out = {}
        for key in order:
            options = schemas_for(key)
            checks = [validator({**_resolve(s, root), "$defs": root.get("$defs", {})})
                      for s in options if s is not True]
            value = None
            for s in options:
                candidate = draw(from_schema(s, root))
                if all(c.is_valid(candidate) for c in checks):
                    value = candidate
                    break
            else:
                assume(False)
            out[key] = value
        return out

    return build()


def from_schema(schema: Any, root: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances of a schema in the subset described in the module docstring."""
    schema = _resolve(schema, root)
    if schema is True or schema == {}:
        return json_values
    if "const" in schema:
        return st.just(schema["const"])
    kinds = schema.get("type")
    if kinds is None:
        return json_values
    if isinstance(kinds, str):
        kinds = [kinds]
    return st.one_of([_typed(k, schema, root) for k in kinds])


def schema_strategy(name: str) -> st.SearchStrategy[Any]:
    root = load_schema(name)
    check = validator(root)
    return from_schema(root, root).filter(check.is_valid)


def assert_lines_valid(name: str, records: list[Any]) -> None:
    check = validator(load_schema(name))
    for rec in records:
        errors = list(check.iter_errors(rec))
        assert not errors, errors[0].message


SETTINGS = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow,
                                                            HealthCheck.filter_too_much])


@SETTINGS
@given(st.lists(schema_strategy("metrics-line"), min_size=1, max_size=4))
def test_metrics_round_trip(records: list[dict[str, Any]]) -> None:
    """Generated metrics lines come back equal, step first, and valid."""
    with tempfile.TemporaryDirectory() as d:
        with RunWriter(d) as run:
            for rec in records:
                run.log_metrics(rec)
        back = read_jsonl(Path(d) / "metrics.jsonl")
    assert back == records
    for rec, got in zip(records, back, strict=True):
        if "step" in rec:
            assert next(iter(got)) == "step"
        assert [k for k in got if k != "step"] == [k for k in rec if k != "step"]
    assert_lines_valid("metrics-line", back)


nonfinite = st.sampled_from([math.nan, math.inf, -math.inf])


@SETTINGS
@given(schema_strategy("metrics-line"), st.dictionaries(
    st.sampled_from(["env/all/x", "optim/entropy", "loss", "time/t"]),
    st.floats(allow_nan=True, allow_infinity=True) | nonfinite, min_size=1),
    st.sampled_from(["null", "token"]))
def test_metrics_nonfinite_policy(base: dict[str, Any], floats: dict[str, float],
                                  policy: str) -> None:
    """Non-finite metrics read back as null (default) or as NaN/Infinity tokens (option)."""
    rec = {**{k: v for k, v in base.items() if k != "step"}, **floats}
    assume(not any(k.startswith("time/") and v < 0 for k, v in rec.items()
                   if isinstance(v, float) and math.isfinite(v)))
    with tempfile.TemporaryDirectory() as d:
        with RunWriter(d, nonfinite=policy) as run:  # type: ignore[arg-type]
            run.log_metrics(rec, step=0)
        raw = (Path(d) / "metrics.jsonl").read_text()
    back = json.loads(raw)
    if policy == "null":
        assert orjson.loads(raw) == back == strict_json({"step": 0, **rec})  # strict JSON
        assert_lines_valid("metrics-line", [back])
    else:
        assert json.dumps(back) == json.dumps({"step": 0, **rec})


@SETTINGS
@given(st.lists(schema_strategy("checkpoint-line").filter(lambda r: resume_problem(r) is None),
                min_size=1, max_size=3))
def test_checkpoint_round_trip(records: list[dict[str, Any]]) -> None:
    """Generated checkpoint records that resume can restart from come back equal, named keys
    first in documented order."""
    with tempfile.TemporaryDirectory() as d:
        with RunWriter(d) as run:
            for rec in records:
                run.record_checkpoint(**rec)
        back = read_jsonl(Path(d) / "checkpoints.jsonl")
    assert back == records
    for rec, got in zip(records, back, strict=True):
        named = [k for k in CHECKPOINT_NAMED if k in rec]
        assert list(got) == named + [k for k in rec if k not in CHECKPOINT_NAMED]
    assert_lines_valid("checkpoint-line", back)


def _consistent(records: list[dict[str, Any]], iteration: int,
                split: str) -> list[dict[str, Any]]:
    """Make generated summaries satisfy docs/format.md §9 (unique ids, step order, reward sum)."""
    out = []
    for i, rec in enumerate(records):
        rec = {**rec, "iteration": iteration, "split": split, "group_idx": i // 3,
               "traj_idx": i % 3}
        rec["steps"] = [{**s, "step_idx": j} for j, s in enumerate(rec["steps"])]
        parts = [rec["final_reward"], *(s["reward"] for s in rec["steps"])]
        if all(p is not None for p in parts):
            try:
                rec["total_reward"] = math.fsum(parts)
            except OverflowError:
                rec["total_reward"] = None
        out.append(rec)
    return out


@SETTINGS
@given(st.lists(schema_strategy("rollout-summary-line"), max_size=5),
       st.integers(0, 10**7), st.sampled_from([None, "test", "gsm8k/main (v2)"]),
       st.sampled_from(["flat", "nested"]), st.randoms(use_true_random=False))
def test_rollout_summaries_round_trip(records: list[dict[str, Any]], iteration: int,
                                      evaluator: str | None, layout: str, rnd: Any) -> None:
    """Generated summaries, keys shuffled, come back equal in the documented order, valid."""
    from rlio.layout import iteration_path, sanitize_label, split_name

    label = None if evaluator is None else sanitize_label(evaluator)
    records = _consistent(records, iteration, split_name(label))
    shuffled = []
    for rec in records:
        keys = list(rec)
        rnd.shuffle(keys)
        shuffled.append({k: rec[k] for k in keys})
    for rec in shuffled:  # steps' keys shuffled too
        steps = []
        for step in rec["steps"]:
            keys = list(step)
            rnd.shuffle(keys)
            steps.append({k: step[k] for k in keys})
        rec["steps"] = steps
    with tempfile.TemporaryDirectory() as d:
        with RunWriter(d, layout=layout) as run:  # type: ignore[arg-type]
            run.write_rollout_summaries(iteration, shuffled, evaluator=evaluator)
        path = Path(d) / iteration_path(layout, iteration, "rollout_summaries",  # type: ignore[arg-type]
                                        label=label)
        back = read_jsonl(path)
    assert back == strict_json(records)
    assert all(list(r) == ROLLOUT_ORDER for r in back)
    for got, sent in zip(back, shuffled, strict=True):
        for s_got, s_sent in zip(got["steps"], sent["steps"], strict=True):
            documented = [k for k in STEP_ORDER if k in s_got]
            assert list(s_got) == documented + [k for k in s_sent if k not in STEP_ORDER]
    assert_lines_valid("rollout-summary-line", back)


@settings(max_examples=15, suppress_health_check=[HealthCheck.too_slow,
                                                  HealthCheck.filter_too_much])
@given(st.lists(schema_strategy("rollout-summary-line"), max_size=3),
       st.lists(schema_strategy("metrics-line"), max_size=2),
       st.lists(schema_strategy("checkpoint-line"), max_size=2))
def test_written_runs_validate_clean(rollouts: list[dict[str, Any]],
                                     metrics: list[dict[str, Any]],
                                     checkpoints: list[dict[str, Any]]) -> None:
    """A run written from generated records has no error-level finding (validate_run)."""
    from rlio import validate_run

    with tempfile.TemporaryDirectory() as d:
        with RunWriter(d) as run:
            run.write_config({"generated": True})
            for step, rec in enumerate(metrics):
                run.log_metrics({k: v for k, v in rec.items() if k != "step"}, step=step)
            for rec in checkpoints:
                rec = {k: v for k, v in rec.items() if k != "batch"}
                run.record_checkpoint(**rec, batch=0)
            run.write_rollout_summaries(0, _consistent(rollouts, 0, "train"))
            if not metrics:
                run.log_metrics({}, step=0)
        report = validate_run(d)
    assert [f for f in report.findings if str(f.severity) == "error"] == []
