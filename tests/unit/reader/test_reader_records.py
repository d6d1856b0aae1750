"""The reader's TypedDicts cannot drift from the schemas: every property a schema lists is a key
of its TypedDict, required exactly where the schema requires it."""

from __future__ import annotations

from typing import Any, NotRequired, Required, get_origin, get_type_hints

import pytest

from rlio.reader import records
from rlio.schema import load_schema

#: (TypedDict, schema name, path to the object subschema inside that schema)
SHAPES: list[tuple[Any, str, tuple[str, ...]]] = [
    (records.MetricsRecord, "metrics-line", ()),
    (records.CheckpointRecord, "checkpoint-line", ()),
    (records.TokenCounts, "checkpoint-line", ("$defs", "tokens")),
    (records.RolloutSummary, "rollout-summary-line", ()),
    (records.RolloutStep, "rollout-summary-line", ("$defs", "step")),
    (records.LogtreeDocument, "logtree", ()),
    (records.LogtreeNode, "logtree", ("$defs", "node")),
    (records.ConversationMessage, "logtree", ("$defs", "message")),
    (records.TimingSpansRecord, "timing-spans-line", ()),
    (records.CaptureRecord, "capture-line", ()),
]


def required_keys(typed: Any) -> set[str]:
    """The keys a TypedDict requires, read from its hints (``from __future__ import annotations``
    hides ``Required``/``NotRequired`` from ``__required_keys__`` before Python 3.14)."""
    hints = get_type_hints(typed, include_extras=True)
    return {k for k, hint in hints.items()
            if get_origin(hint) is Required or (typed.__total__ and get_origin(hint)
                                                is not NotRequired)}


@pytest.mark.parametrize(("typed", "name", "path"), SHAPES,
                         ids=[t.__name__ for t, _, _ in SHAPES])
def test_typed_dict_lists_every_schema_property(typed: Any, name: str,
                                                path: tuple[str, ...]) -> None:
    """A property the schema has and the TypedDict lacks (or requires differently) fails here;
    a closed schema (additionalProperties false) allows no key beyond its properties."""
    node: Any = load_schema(name)
    for part in path:
        node = node[part]
    properties = set(node.get("properties", {}))
    keys = set(get_type_hints(typed))
    assert properties - keys == set(), f"{typed.__name__} lacks schema properties"
    assert required_keys(typed) == set(node.get("required", ())), typed.__name__
    if node.get("additionalProperties") is False:
        assert keys - properties == set(), f"{typed.__name__} has keys the schema refuses"


@pytest.mark.parametrize("name", ["capture-sample-line", "capture-train-op-line"])
def test_capture_record_lists_every_property_of_each_known_kind(name: str) -> None:
    """CaptureRecord holds the keys of every capture kind with a schema (one TypedDict for the
    lines of any kind)."""
    properties = set(load_schema(name).get("properties", {}))
    assert properties - set(get_type_hints(records.CaptureRecord)) == set()


def test_every_record_typed_dict_is_checked() -> None:
    """Each TypedDict the module exports is compared with a schema above."""
    checked = {t.__name__ for t, _, _ in SHAPES}
    assert set(records.__all__) == checked
