"""The compiled schema check agrees with python-jsonschema's ``is_valid`` (differential tests).

Instances come from ``hypothesis_jsonschema.from_schema`` (valid), from mutating those (mostly
invalid: a key deleted, a value retyped, a negative int, a bool or ``1.0`` where an int belongs)
and from an arbitrary JSON-like strategy. Every verdict of ``compile_schema`` and of its iterative
fallback (``compile_iterative``) is compared with python-jsonschema's.

hypothesis-jsonschema 0.23 calls ``many.more()``, an internal the installed hypothesis removed; the
shim below maps it onto the current ``with many(...)`` / ``for _ in elements`` protocol.
"""

from __future__ import annotations

import collections
import copy
import decimal
import enum
import functools
import json
import math
import os
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from factories import run_python
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as conjecture_utils

from rlio._schema.compiler import compile_schema
from rlio._schema.loader import SCHEMA_NAMES, load_schema
from rlio._schema.model import Context, interpret

if not hasattr(conjecture_utils.many, "more"):
    _END = object()

    def _more(self: Any) -> bool:
        if self._depth is None:
            self.__enter__()
            self._rlio_iter = iter(self)
        if next(self._rlio_iter, _END) is _END:
            self.__exit__(None)
            return False
        return True

    conjecture_utils.many.more = _more  # type: ignore[attr-defined]

from hypothesis_jsonschema import from_schema

#: More examples for a long fuzzing session: RLIO_FASTCHECK_EXAMPLES=2000 pytest this file.
EXAMPLES = int(os.environ.get("RLIO_FASTCHECK_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
NON_RECURSIVE = [n for n in SCHEMA_NAMES if n != "logtree"]


def compile_iterative(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """The interpreter the compiled predicate falls back on (any depth; slow)."""
    return functools.partial(interpret, Context(schema), schema)


def oracle(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """python-jsonschema's verdict for ``schema`` (the draft its ``$schema`` names)."""
    return jsonschema.validators.validator_for(schema)(schema).is_valid  # type: ignore[no-any-return]


def agree(schema: dict[str, Any], instance: Any) -> bool:
    """Assert the compiled and iterative checks match jsonschema on ``instance``; return it."""
    expected = oracle(schema)(instance)
    assert compile_schema(schema)(instance) is expected, instance
    assert compile_iterative(schema)(instance) is expected, instance
    return expected


@pytest.fixture(scope="module")
def compiled() -> dict[str, tuple[Callable[[Any], bool], ...]]:
    """(compiled, iterative, jsonschema) predicates per shipped schema, built once."""
    return {n: (compile_schema(load_schema(n)), compile_iterative(load_schema(n)),
                oracle(load_schema(n))) for n in SCHEMA_NAMES}


def check_all(preds: tuple[Callable[[Any], bool], ...], instance: Any) -> bool:
    fast, iterative, expected = (p(instance) for p in preds)
    assert fast is expected, instance
    assert iterative is expected, instance
    return expected


# ------------------------------------------------------------------------------- strategies


def draft07(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as draft-07 with ``definitions``: the dialect hypothesis-jsonschema resolves."""
    text = json.dumps({k: v for k, v in schema.items() if k != "$schema"})
    text = text.replace('"#/$defs/', '"#/definitions/').replace('"$defs":', '"definitions":')
    return {"$schema": "http://json-schema.org/draft-07/schema#", **json.loads(text)}


def names_of(schema: Any) -> list[str]:
    """Property names and pattern-like keys mentioned by ``schema``: keys worth generating."""
    found: set[str] = {"time/x", "time/y:count", "env/z", "type", "conversation"}
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in ("properties", "$defs"):
                if isinstance(node.get(key), dict):
                    found.update(node[key])
            found.update(x for x in node.get("required", []) if isinstance(x, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return sorted(found)


SCALARS = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, 1, -1, 1.0, -1.0, 0.5, 2**70, "", "train"]),
    st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
)


def json_values(keys: list[str]) -> st.SearchStrategy[Any]:
    """Arbitrary JSON-like values whose object keys favour ``keys``."""
    key = st.one_of(st.sampled_from(keys), st.text(max_size=6))
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                st.dictionaries(key, inner, max_size=6)),
        max_leaves=25,
    )


#: Values an edit puts in place. The containers are copied on every draw (``replacement``):
#: shared, one edit could append into a list that an earlier edit placed, even into itself.
REPLACEMENTS = (None, True, False, 0, -1, -5, 1.0, 2.5, -0.5, float("nan"), float("inf"), 2**70,
                "", "x", "eval/ok", [], {}, ["x"], {"k": 1})


def replacement(draw: st.DrawFn) -> Any:
    """A fresh copy of one of ``REPLACEMENTS``: nothing is shared between edits or examples."""
    return copy.deepcopy(draw(st.sampled_from(REPLACEMENTS)))


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any], keys: list[str]) -> Any:
    """A valid instance with one to three edits at random places."""
    doc = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        containers = []
        stack = [doc]
        while stack:
            node = stack.pop()
            if isinstance(node, dict | list) and node:
                containers.append(node)
                stack.extend(node.values() if isinstance(node, dict) else node)
        if not containers:
            return replacement(draw)
        node = draw(st.sampled_from(containers))
        slot = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        action = draw(st.sampled_from(["delete", "replace", "replace", "add"]))
        if action == "delete":
            del node[slot]
        elif action == "replace":
            node[slot] = replacement(draw)
        elif isinstance(node, dict):
            node[draw(st.sampled_from(keys))] = replacement(draw)
        else:
            node.append(replacement(draw))
    return doc


def logtree_docs() -> st.SearchStrategy[Any]:
    """Valid-looking logtree documents (hypothesis-jsonschema cannot resolve the recursion)."""
    defs = draft07(load_schema("logtree"))["definitions"]
    data, conversation = (from_schema({"$schema": D7, "definitions": defs, **defs[name]})
                          for name in ("data", "conversation"))
    tag = st.sampled_from(["body", "div", "h2", "p", "pre", "section", "td"])
    attrs = st.dictionaries(st.sampled_from(["class", "id", "open"]), st.text(max_size=4),
                            max_size=2)

    def node(children: st.SearchStrategy[list[Any]]) -> st.SearchStrategy[dict[str, Any]]:
        base = st.fixed_dictionaries({"tag": tag, "attrs": attrs, "children": children})
        extra = st.fixed_dictionaries({}, optional={"data": st.one_of(data, conversation)})
        return st.builds(lambda b, e: {**b, **e}, base, extra)

    tree = st.recursive(node(st.lists(st.text(max_size=5), max_size=3)),
                        lambda inner: node(st.lists(st.one_of(st.text(max_size=5), inner),
                                                    max_size=3)), max_leaves=6)
    return st.fixed_dictionaries(
        {"title": st.text(max_size=5), "started_at": st.sampled_from(
            ["2025-01-02T03:04:05.123456+00:00", "2025-01-02 03:04", "2025-01-02T03:04:05Z"]),
         "root": tree}, optional={"path": st.one_of(st.none(), st.text(max_size=5))})


D7 = "http://json-schema.org/draft-07/schema#"


def valid_docs(name: str) -> st.SearchStrategy[Any]:
    return logtree_docs() if name == "logtree" else from_schema(draft07(load_schema(name)))


# ------------------------------------------------------------- shipped schemas (differential)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_generated_valid_instances_agree(name: str, compiled: Any) -> None:
    """Instances generated from each shipped schema get jsonschema's verdict (valid)."""
    verdicts = []

    @SETTINGS
    @given(valid_docs(name))
    def run(doc: Any) -> None:
        verdicts.append(check_all(compiled[name], doc))

    run()
    assert sum(verdicts) > len(verdicts) // 2  # the generator mostly produced valid documents


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_mutated_instances_agree(name: str, compiled: Any) -> None:
    """Valid instances with keys deleted or values retyped get jsonschema's verdict."""
    verdicts = []
    keys = names_of(load_schema(name))

    @SETTINGS
    @given(mutated(valid_docs(name), keys))
    def run(doc: Any) -> None:
        verdicts.append(check_all(compiled[name], doc))

    run()
    if name != "config":  # any object is a valid config
        assert not all(verdicts)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_arbitrary_values_agree(name: str, compiled: Any) -> None:
    """Arbitrary JSON-like values (NaN, inf, bools, 1.0, nesting) get jsonschema's verdict."""

    @SETTINGS
    @given(json_values(names_of(load_schema(name))))
    def run(doc: Any) -> None:
        check_all(compiled[name], doc)

    run()


def rollout_line(**overrides: Any) -> dict[str, Any]:
    step = {"step_idx": 0, "ob_len": 5, "ac_len": 3, "reward": 1.0, "episode_done": True,
            "metrics": {"ok": 1.0}, "logs": {"answer": "42"}}
    line = {"schema_version": 1, "split": "train", "iteration": 0, "group_idx": 0, "traj_idx": 0,
            "tags": ["a"], "sampling_client_step": None, "total_reward": 1.0,
            "final_reward": 0.0, "trajectory_metrics": {}, "steps": [step], "final_ob_len": 0}
    return {**line, **overrides}


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, True),
    ({"iteration": 3.0}, True),  # an integer-valued float is an integer
    ({"iteration": True}, False),  # a bool is not an integer
    ({"iteration": -1}, False),
    ({"iteration": 1.5}, False),
    ({"schema_version": 1.0}, True),  # const: 1 == 1.0
    ({"schema_version": True}, False),  # const: True != 1
    ({"total_reward": float("nan")}, True),  # NaN is a number
    ({"total_reward": float("-inf")}, True),
    ({"sampling_client_step": float("nan")}, False),  # NaN is not an integer
    ({"split": "eval/gsm8k"}, True),
    ({"split": "eval/"}, False),
    ({"split": "xtrain"}, False),
    ({"tags": ["a", 1]}, False),
    ({"trajectory_metrics": {"x": [1]}}, False),
    ({"trajectory_metrics": {"x": None, "y": "s", "z": False}}, True),
    ({"extra": 1}, False),
], ids=repr)
def test_rollout_line_pinned(overrides: dict[str, Any], expected: bool, compiled: Any) -> None:
    """Pinned rollout-summary verdicts: JSON integer/number/const semantics and closed objects."""
    assert check_all(compiled["rollout-summary-line"], rollout_line(**overrides)) is expected


def test_rollout_line_missing_key_and_bad_step(compiled: Any) -> None:
    """A missing key or a mistyped step key is invalid; newer cookbook step keys are not."""
    line = rollout_line()
    del line["tags"]
    assert check_all(compiled["rollout-summary-line"], line) is False
    line = rollout_line()
    line["steps"][0]["stop_reason"] = 1
    assert check_all(compiled["rollout-summary-line"], line) is False
    line = rollout_line()
    line["steps"][0].update(stop_reason="length", trace={"spans": [1]}, ob_text="User: hi")
    assert check_all(compiled["rollout-summary-line"], line) is True


def test_metrics_layouts_compiled_and_reused(compiled: Any) -> None:
    """A metrics key layout seen repeatedly still judges each record's values."""
    preds = compiled["metrics-line"]
    good = {"step": 3, "time/total": 1.5, "time/a:count": 2, "env/r": -1.0, "note": "x"}
    for _ in range(3):
        assert check_all(preds, dict(good)) is True
    for key, bad in [("step", -1), ("time/total", -0.1), ("time/a:count", 1.5), ("env/r", "x"),
                     ("note", [1]), ("step", True)]:
        assert check_all(preds, {**good, key: bad}) is False
    assert check_all(preds, {**good, "time/a:count": 2.0, "progress/done_frac": 1}) is True
    assert check_all(preds, {**good, "progress/done_frac": 1.5}) is False
    assert check_all(preds, dict(reversed(good.items()))) is True


# ---------------------------------------------------------------- depth and non-JSON types


def deep_tree(depth: int, leaf: Any = "text") -> dict[str, Any]:
    node: dict[str, Any] = {"tag": "div", "attrs": {}, "children": [leaf]}
    for _ in range(depth - 1):
        node = {"tag": "section", "attrs": {"class": "x"}, "children": ["t", node]}
    return {"title": "t", "started_at": "2025-01-02T03:04:05+00:00", "path": None, "root": node}


def test_deep_logtree_does_not_raise(compiled: Any) -> None:
    """A 1,000-deep (and a 5,000-deep) logtree gets a correct verdict, not a RecursionError."""
    fast = compiled["logtree"][0]
    for depth in (1000, 5000):
        assert fast(deep_tree(depth)) is True
        assert fast(deep_tree(depth, leaf=7)) is False  # the error is at the deepest node
        assert compile_iterative(load_schema("logtree"))(deep_tree(depth, leaf=7)) is False


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_deeply_nested_values_never_raise(name: str, compiled: Any) -> None:
    """Lists and dicts nested 3,000 deep get a bool from every schema's predicate."""
    nested_list: Any = "x"
    nested_dict: Any = "x"
    for _ in range(3000):
        nested_list, nested_dict = [nested_list], {"children": nested_dict}
    for doc in (nested_list, nested_dict, {"title": nested_dict, "root": nested_list}):
        assert compiled[name][0](doc) in (True, False)


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_non_json_python_types_agree(name: str, compiled: Any) -> None:
    """Subclasses, Decimal, tuples and OrderedDict get jsonschema's verdict via the slow path."""
    docs: list[Any] = [
        collections.OrderedDict(rollout_line()), rollout_line(iteration=Color.RED),
        rollout_line(split=Text("train")), rollout_line(total_reward=decimal.Decimal("1.5")),
        rollout_line(tags=("a",)), {"step": Color.RED, "x": decimal.Decimal(1)},
        {"name": Text("n"), "ph": "X", "pid": 1, "tid": Color.RED}, (1, 2), b"x", object(),
        {"step": 1, "spans": [collections.OrderedDict(name="a", duration=1, wall_start=None,
                                                      wall_end=2)]},
    ]
    for doc in docs:
        check_all(compiled[name], doc)


# ------------------------------------------------------------- per-keyword schemas (pinned)

D6 = "http://json-schema.org/draft-06/schema#"
D2019 = "https://json-schema.org/draft/2019-09/schema"
PINNED: list[tuple[dict[str, Any], Any, bool]] = [
    ({"type": "integer"}, 1.0, True), ({"type": "integer"}, True, False),
    ({"type": "integer"}, 2**80, True), ({"type": "integer"}, float("inf"), False),
    ({"type": "number"}, float("nan"), True), ({"type": "number"}, False, False),
    ({"type": ["string", "null"]}, None, True), ({"type": ["string", "null"]}, 0, False),
    ({"type": "boolean"}, 0, False), ({"type": "array"}, (1,), False),
    ({"type": "object"}, [], False), ({"type": []}, None, False),
    ({"const": 1}, 1.0, True), ({"const": 1}, True, False), ({"const": False}, 0, False),
    ({"const": [1, {"a": True}]}, [1.0, {"a": True}], True),
    ({"const": [1, {"a": True}]}, [1, {"a": 1}], False), ({"const": None}, None, True),
    ({"const": "a"}, "a", True), ({"const": "a"}, ["a"], False),
    ({"enum": ["a", "b"]}, "b", True), ({"enum": ["a", "b"]}, ["a"], False),
    ({"enum": [1, None, [True]]}, 1.0, True), ({"enum": [1, None, [True]]}, True, False),
    ({"enum": [1, None, [True]]}, [1], False), ({"enum": [1, None, [True]]}, [True], True),
    ({"minimum": 0}, -1, False), ({"minimum": 0}, float("nan"), True), ({"minimum": 0}, "x", True),
    ({"maximum": 1.5}, 1.5, True), ({"exclusiveMaximum": 1.5}, 1.5, False),
    ({"exclusiveMinimum": 0}, 0, False), ({"exclusiveMinimum": 0}, 1e-9, True),
    ({"multipleOf": 3}, 9.0, True), ({"multipleOf": 0.1}, 0.3, False),
    ({"multipleOf": 0.5}, 1e308, True), ({"multipleOf": 3}, 10, False),  # 0.3: float quotient
    ({"minLength": 2}, "\U0001f600\U0001f600", True), ({"maxLength": 1}, "\U0001f600", True),
    ({"maxLength": 1}, "ab", False), ({"pattern": "b"}, "abc", True),
    ({"pattern": "^b"}, "abc", False), ({"pattern": "^b"}, 5, True),
    ({"minItems": 1}, [], False), ({"maxItems": 1}, [1, 2], False),
    ({"uniqueItems": True}, [1, 1.0], False), ({"uniqueItems": True}, [1, True], True),
    ({"uniqueItems": True}, [{"a": 1}, {"a": 1}], False),
    ({"items": {"type": "string"}}, ["a", 1], False), ({"items": False}, [], True),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1], True),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], False),
    ({"prefixItems": [{"type": "integer"}]}, ["x"], False),
    ({"$schema": D7, "items": [{"type": "integer"}], "additionalItems": False}, [1, 2], False),
    ({"$schema": D7, "items": [{"type": "integer"}], "additionalItems": {"type": "string"}},
     [1, "a"], True),
    ({"contains": {"const": 2}}, [1, 3], False), ({"contains": {"const": 2}}, [1, 2], True),
    ({"contains": {"const": 2}, "minContains": 2}, [2, 2.0], True),
    ({"contains": {"const": 2}, "maxContains": 1}, [2, 2], False),
    ({"contains": {"const": 2}, "minContains": 0}, [], True),
    ({"required": ["a"]}, {"b": 1}, False), ({"required": ["a"]}, [], True),
    ({"properties": {"a": {"type": "integer"}}}, {"a": "x"}, False),
    ({"properties": {"a": {"type": "integer"}}}, {"b": "x"}, True),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2}, False),
    ({"additionalProperties": {"type": "integer"}}, {"a": 1, "b": "x"}, False),
    ({"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
     {"x1": 1, "ax": 1}, False),
    ({"patternProperties": {"x": {"type": "integer"}}}, {"ax": "s"}, False),  # search, not match
    ({"patternProperties": {"": {"type": "integer"}}, "additionalProperties": False},
     {"a": 1}, False),  # jsonschema: an empty joined pattern leaves every key additional
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, False),
    ({"minProperties": 1}, {}, False), ({"maxProperties": 1}, {"a": 1, "b": 2}, False),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, False),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1, "b": 2}, True),
    ({"$schema": D7, "dependencies": {"a": ["b"]}}, {"a": 1}, False),
    ({"$schema": D7, "dependencies": {"a": {"maxProperties": 1}}}, {"a": 1, "c": 1}, False),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, 2, False),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, 4, True),
    ({"oneOf": [{"type": "integer"}, {"minimum": 3}]}, 4, False),
    ({"oneOf": [{"type": "integer"}, {"minimum": 3}]}, 4.5, True),
    ({"allOf": [{"type": "integer"}, {"minimum": 3}]}, 2, False),
    ({"not": {"type": "null"}}, None, False), ({"not": {"type": "null"}}, 0, True),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, -1, False),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, 1.5, False),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, "s", True),
    ({"then": {"type": "string"}}, 1, True),  # then without if does nothing
    ({"if": {"type": "string"}, "then": False, "else": False}, 1, False),
    ({"$ref": "#/$defs/a", "$defs": {"a": {"type": "integer"}}, "minimum": 3}, 2, False),
    ({"$schema": D7, "$ref": "#/definitions/a", "definitions": {"a": {"type": "integer"}},
      "minimum": 3}, 2, True),  # draft-07 ignores the siblings of $ref
    ({"$defs": {"l": {"type": "array", "items": {"$ref": "#/$defs/l"}}}, "$ref": "#/$defs/l"},
     [[[]], []], True),
    ({"$defs": {"l": {"type": "array", "items": {"$ref": "#/$defs/l"}}}, "$ref": "#/$defs/l"},
     [[[1]]], False),
    ({"properties": {"n": {"$ref": "#"}}, "type": "object"}, {"n": {"n": {}}}, True),
    ({"properties": {"n": {"$ref": "#"}}, "type": "object"}, {"n": {"n": 1}}, False),
    ({"$defs": {"a/b": {"type": "null"}}, "$ref": "#/$defs/a~1b"}, None, True),
    ({"$schema": D6, "type": "integer"}, 1.0, True),
    ({"$schema": D2019, "items": [{"type": "string"}], "additionalItems": False}, ["a", 1], False),
    ({"type": "object", "title": "t", "description": "d", "default": 1, "examples": [],
      "$comment": "c", "format": "email", "x-unit": "s"}, {}, True),
    (True, 1, True), (False, 1, False),
    ({"items": True, "properties": {"a": False}}, {"a": 1}, False),
]


@pytest.mark.parametrize(("schema", "instance", "expected"), PINNED, ids=repr)
def test_keyword_pinned(schema: Any, instance: Any, expected: bool) -> None:
    """Each keyword's verdict on a pinned instance matches jsonschema and the pinned value."""
    assert agree(schema, instance) is expected


KEYWORD_SCHEMAS = [s for s, _, _ in PINNED if not (isinstance(s, dict) and "multipleOf" in s)] + [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}, "b": {"const": "x"}},
     "required": ["a"], "additionalProperties": {"type": ["string", "null"]}},
    {"patternProperties": {"^time/": {"minimum": 0}, ":count$": {"type": "integer"}},
     "properties": {"time/x": {"type": "null"}}, "additionalProperties": {"type": "array"}},
    {"type": "array", "items": {"anyOf": [{"type": "string"}, {"$ref": "#"}]}, "maxItems": 3},
    {"oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"type": "array"}]},
    {"type": ["integer", "string"], "minimum": 2, "maxLength": 2, "not": {"const": 3}},
]


@pytest.mark.parametrize("schema", KEYWORD_SCHEMAS, ids=repr)
def test_keyword_schemas_agree_on_arbitrary_values(schema: Any) -> None:
    """Arbitrary JSON-like values get jsonschema's verdict under small per-keyword schemas."""
    fast, iterative, expected = compile_schema(schema), compile_iterative(schema), oracle(schema)
    keys = [*names_of(schema), "a", "b", "x1", "time/x"]

    @settings(max_examples=max(15, EXAMPLES // 3), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(json_values(keys))
    def run(doc: Any) -> None:
        try:
            verdict = expected(doc)
        except RecursionError:  # pragma: no cover - jsonschema recursion on odd input
            assume(False)
        assert fast(doc) is verdict
        assert iterative(doc) is verdict

    run()


# -------------------------------------------------------------------- loud compile failures


@pytest.mark.parametrize(("schema", "word"), [
    ({"type": "object", "unevaluatedProperties": False}, "unevaluatedProperties"),
    ({"$dynamicRef": "#x"}, "$dynamicRef"),
    ({"properties": {"a": {"maxlength": 3}}}, "maxlength"),
    ({"$schema": D7, "prefixItems": []}, "prefixItems"),  # not part of draft-07
    ({"dependencies": {"a": ["b"]}}, "dependencies"),  # not part of 2020-12
    ({"$schema": D6, "if": {}}, "if"),
    ({"$schema": "http://json-schema.org/draft-04/schema#"}, "draft-04"),
    ({"$ref": "other.json#/a"}, "other.json"),
    ({"$ref": "#anchor"}, "#anchor"),
    ({"items": {"$id": "urn:x", "type": "string"}}, "$id"),
])
def test_unsupported_schema_fails_loudly(schema: dict[str, Any], word: str) -> None:
    """A keyword or reference the compiler does not implement raises, naming it."""
    with pytest.raises(NotImplementedError, match=r"unsupported|not supported") as info:
        compile_schema(schema)
    assert word in str(info.value)


@pytest.mark.parametrize("schema", [
    {"type": "integr"}, {"pattern": "("}, {"$ref": "#/$defs/missing"}, {"minimum": "0"},
    {"multipleOf": 0}, {"required": [1]}, {"properties": {"a": 3}}, {"items": [{}]},
])
def test_malformed_schema_raises_value_error(schema: dict[str, Any]) -> None:
    """A malformed schema is rejected at compile time with ValueError."""
    with pytest.raises(ValueError):
        compile_schema(schema)


def test_module_does_not_import_jsonschema() -> None:
    """Compiling and running a check never imports jsonschema (the writer's hot path)."""
    code = ("import sys; from rlio._schema.compiler import compile_schema; "
            "from rlio.schema import load_schema; "
            "assert compile_schema(load_schema('metrics-line'))({'step': 1}); "
            "assert 'jsonschema' not in sys.modules")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr


def test_nan_schema_values_do_not_break_literals() -> None:
    """Non-finite bounds and constants in a Python-built schema compile and judge correctly."""
    schema = {"maximum": math.inf, "properties": {"a": {"const": -math.inf}}}
    assert agree(schema, {"a": -math.inf}) is True
    assert agree(schema, {"a": 1}) is False


# ------------------------------------------------------------- random schemas (differential)

SMALL = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                  st.sampled_from([0.5, 1.0, "a", ""]))


def random_schemas() -> st.SearchStrategy[Any]:
    """Small schemas mixing every implemented keyword (draft 2020-12)."""
    types = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null"])
    leaf = st.one_of(
        st.booleans(),
        st.fixed_dictionaries({}, optional={
            "type": st.one_of(types, st.lists(types, min_size=1, max_size=3, unique=True)),
            "minimum": st.integers(-2, 2), "exclusiveMaximum": st.sampled_from([0, 1.5, 3]),
            "multipleOf": st.sampled_from([1, 2]), "minLength": st.integers(0, 2),
            "maxLength": st.integers(0, 3), "pattern": st.sampled_from(["^a", "b", "^$"]),
            "const": SMALL, "enum": st.lists(SMALL, min_size=1, max_size=3),
            "minItems": st.integers(0, 2), "maxItems": st.integers(0, 3),
            "uniqueItems": st.booleans(), "required": st.lists(st.sampled_from("abc"), max_size=2),
            "minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 3),
            "dependentRequired": st.dictionaries(st.sampled_from("ab"),
                                                 st.lists(st.sampled_from("bc"), max_size=2),
                                                 max_size=1),
        }),
    )

    def nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.fixed_dictionaries({}, optional={
            "type": types,
            "properties": st.dictionaries(st.sampled_from("abc"), inner, max_size=2),
            "patternProperties": st.dictionaries(st.sampled_from(["^a", "c$", "x"]), inner,
                                                 max_size=2),
            "additionalProperties": inner, "propertyNames": inner, "items": inner,
            "prefixItems": st.lists(inner, max_size=2), "contains": inner,
            "minContains": st.integers(0, 2), "maxContains": st.integers(0, 2),
            "allOf": st.lists(inner, min_size=1, max_size=2),
            "anyOf": st.lists(inner, min_size=1, max_size=2),
            "oneOf": st.lists(inner, min_size=1, max_size=3), "not": inner,
            "if": inner, "then": inner, "else": inner,
            "dependentSchemas": st.dictionaries(st.sampled_from("ab"), inner, max_size=1),
            "$ref": st.just("#/$defs/d"),
        })

    body = st.recursive(leaf, nest, max_leaves=6)
    return st.builds(lambda s, d: {**s, "$defs": {"d": d}} if isinstance(s, dict) else s,
                     body, st.one_of(leaf, st.just({"type": "array", "items": {"$ref": "#"}})))


@settings(max_examples=max(40, EXAMPLES), deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(random_schemas(), st.lists(json_values(["a", "b", "c", "ab", "xc"]), min_size=4,
                                  max_size=8))
def test_random_schemas_agree(schema: Any, docs: list[Any]) -> None:
    """Random combinations of keywords give jsonschema's verdict, compiled and interpreted."""
    fast, iterative, expected = compile_schema(schema), compile_iterative(schema), oracle(schema)
    for doc in docs:
        try:
            verdict = expected(doc)
        except (RecursionError, TypeError):  # jsonschema itself fails on some odd inputs
            continue
        assert fast(doc) is verdict, doc
        assert iterative(doc) is verdict, doc
