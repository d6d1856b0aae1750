"""The engine (``rlio.schema.record_schema``: jsonschema-rs) agrees with python-jsonschema's
``is_valid`` on JSON values (differential tests; python-jsonschema is the tests' oracle).

Instances come from ``hypothesis_jsonschema.from_schema`` (valid), from mutating those (mostly
invalid: a key deleted, a value retyped, a negative int, a bool or ``1.0`` where an int belongs)
and from an arbitrary JSON-like strategy. Every verdict, for the full schema and for its error
level, is compared with python-jsonschema's. One known, documented difference: a ``pattern``
ending in ``$`` follows ECMA-262 in the engine (``"td\n"`` does not match ``^[a-z]+$``) but
Python's ``re`` in python-jsonschema (it does).

hypothesis-jsonschema 0.23 calls ``many.more()``, an internal the installed hypothesis removed; the
shim below maps it onto the current ``with many(...)`` / ``for _ in elements`` protocol.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as conjecture_utils

from rlio.schema import SCHEMA_NAMES, error_schema, load_schema, record_schema

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
EXAMPLES = int(os.environ.get("RLIO_FASTCHECK_EXAMPLES", "30"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
NON_RECURSIVE = [n for n in SCHEMA_NAMES if n != "logtree"]


def oracle(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """python-jsonschema's verdict for ``schema``."""
    return jsonschema.validators.validator_for(schema)(schema).is_valid  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def compiled() -> dict[str, tuple[Callable[[Any], bool], ...]]:
    """(checker, jsonschema) at the full and the error level, per shipped schema, built once."""
    return {n: (record_schema(n).clean, oracle(load_schema(n)), record_schema(n).passes,
                oracle(error_schema(n))) for n in SCHEMA_NAMES}


def _newline_ended(value: Any) -> bool:
    """Whether a string of ``value`` (keys included) ends in a newline: the one known case
    where ECMA-262's ``$`` (the engine) and Python's (the oracle) differ."""
    if isinstance(value, str):
        return value.endswith("\n")
    if isinstance(value, dict):
        return any(_newline_ended(k) or _newline_ended(v) for k, v in value.items())
    if isinstance(value, list):
        return any(map(_newline_ended, value))
    return False


def check_all(preds: tuple[Callable[[Any], bool], ...], instance: Any) -> bool:
    """Assert both levels' verdicts match jsonschema's; return the full level's."""
    full, expected, error, expected_error = (p(instance) for p in preds)
    if (full, error) != (expected, expected_error):
        assert _newline_ended(instance), instance
        return full
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
    st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8),
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
REPLACEMENTS = (None, True, False, 0, -1, -5, 1.0, 2.5, -0.5, 1e300, 2**70,
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
    """Arbitrary JSON values (bools, 1.0, big ints, nesting) get jsonschema's verdict (NaN is
    no JSON value: readers and the writer judge it as the null it is written as)."""

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
    ({"total_reward": None}, True),  # a non-finite number as written
    ({"iteration": 2**70}, True),  # beyond int64: still an integer
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


def test_warning_level_rules_split() -> None:
    """A warning-level range fails ``clean`` but not ``passes``; a type error fails both."""
    rs = record_schema("metrics-line")
    good = {"step": 3, "time/total": 1.5, "time/a:count": 2, "env/r": -1.0, "note": "x"}
    assert rs.passes(good) and rs.clean(good)
    assert not rs.passes({**good, "time/a:count": 1.5})
    assert not rs.passes({**good, "note": [1]})
    assert rs.passes({**good, "time/total": -1.0}) and not rs.clean({**good, "time/total": -1.0})


@pytest.mark.parametrize(("instance", "expected"), [
    ({"step": 1.0}, True), ({"step": True}, False), ({"step": 2**64}, True),
    ({"time/x:count": 2.5}, False), ({"": 1}, False), ({"loss": "x"}, True),
], ids=repr)
def test_metrics_corner_cases(instance: dict[str, Any], expected: bool) -> None:
    """Integral floats are integers, bools are not, int64 overflow is an integer."""
    assert record_schema("metrics-line").passes(instance) is expected


def test_pattern_dollar_is_ecma_262() -> None:
    """``$`` ends the string (ECMA-262): a split with a trailing newline is refused, where
    Python's ``re`` (python-jsonschema) would accept it."""
    assert not record_schema("rollout-summary-line").passes(rollout_line(split="train\n"))
    assert oracle(load_schema("rollout-summary-line"))(rollout_line(split="train\n"))


def test_explain_walks_any_of_to_the_failing_value() -> None:
    """A bad attribute deep in a logtree is explained at its own pointer, in a short message."""
    leaf: Any = {"tag": "p", "attrs": {"class": 5}, "children": ["x" * 5000]}
    for _ in range(30):
        leaf = {"tag": "div", "attrs": {}, "children": ["y" * 1000, leaf]}
    doc = {"title": "t", "started_at": "2025-01-01T00:00:00Z", "root": leaf}
    pointer, message = record_schema("logtree").explain(doc) or ("", "")
    assert pointer == "/root" + "/children/1" * 30 + "/attrs/class"
    assert message.endswith('5 is not of type "string"') and len(message) < 400


def test_explain_empty_key_pointer() -> None:
    """An empty metric key is explained at ``/`` (the engine's own path leaves it out)."""
    assert record_schema("metrics-line").explain({"step": 1, "": 2})[0] == "/"  # type: ignore[index]
    assert record_schema("metrics-line").explain({"step": 1, "loss/": 2}, "full") == (
        "/loss~1", "loss/: a metric key ending in '/': a name part is missing (a key built from "
        "an empty name?)")


def test_explain_none_when_valid() -> None:
    """``explain`` of a valid record is None at both levels."""
    assert record_schema("checkpoint-line").explain({"name": "x", "batch": 1}) is None
    assert record_schema("checkpoint-line").explain({"name": "x", "batch": 1}, "full") is None


def test_explaining_a_very_deep_logtree_keeps_the_verdict() -> None:
    """A failure under 300 nested nodes exceeds what the engine explains: the verdict stands,
    with a message saying why there is no pointer (never an exception)."""
    leaf: Any = {"tag": "p", "attrs": {}, "children": [5]}
    for _ in range(300):
        leaf = {"tag": "div", "attrs": {}, "children": [leaf]}
    doc = {"title": "t", "started_at": "2025-01-01T00:00:00Z", "root": leaf}
    rs = record_schema("logtree")
    assert not rs.passes(doc)
    assert rs.refusal(doc) == ("", "record is nested too deeply to explain")
