"""Unit tests of the logtree document checks: RL204, RL410, RL203."""

from __future__ import annotations

from typing import Any

from rlio import layout
from rlio.validate.checks.logtree import known_data_types, logtree_checks
from rlio.validate.scan import Sink

FLAT = layout.parse_path("train_iteration_000001_logtree.json")
NESTED = layout.parse_path("iteration_000001/train_logtree.json")


def check(doc: Any, rp: layout.RunPath = FLAT) -> list[tuple[str, str]]:
    s = Sink("t", 100)
    logtree_checks(doc, s, rp)
    return [(f.code, f.pointer) for f in s.items]


def doc(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"started_at": "2025-03-01T12:00:00Z", "path": None,
                            "root": {"tag": "body", "children": []}}
    base.update(fields)
    return base


def test_started_at_needs_an_offset() -> None:
    """A time without Z or an offset is RL204; dates alone and offset forms are fine."""
    assert check(doc(started_at="2025-03-01T12:00:00")) == [("RL204", "/started_at")]
    assert check(doc(started_at="2025-03-01 12:00")) == [("RL204", "/started_at")]
    for ok in ("2025-03-01T12:00:00Z", "2025-03-01T12:00:00z", "2025-03-01T12:00:00+01:00",
               "2025-03-01T12:00:00-0130", "2025-03-01T12:00:00+01", "2025-03-01", 5):
        assert check(doc(started_at=ok)) == [], ok


def test_path_must_name_the_twin() -> None:
    """path naming another file is RL410; the twin's name, or its nested path, is fine."""
    assert check(doc(path="/x/other.html")) == [("RL410", "/path")]
    assert check(doc(path="/x/train_iteration_000001.html")) == []
    assert check(doc(path="C:\\x\\train_iteration_000001.html")) == []
    assert check(doc(path="/r/iteration_000001/train.html"), NESTED) == []
    assert check(doc(path="/r/iteration_000002/train.html"), NESTED) == [("RL410", "/path")]
    assert check(doc(path="train.html"), NESTED) == []
    assert check(doc(path=""), NESTED) == [("RL410", "/path")]
    assert check(doc(path=None)) == []


def test_unknown_data_types_once_each() -> None:
    """Each unknown data type is one RL203 at its first node; known ones are silent."""
    known = sorted(known_data_types())[0]
    leaf = {"tag": "div", "data": {"type": "hist"}, "children": []}
    root = {"tag": "body", "children": [
        {"tag": "div", "data": {"type": known}, "children": [leaf, "text", leaf]},
        {"tag": "div", "data": {"type": 3}, "children": None}]}
    assert check(doc(root=root)) == [("RL203", "/root/children/0/children/2/data")]


def test_known_data_types_come_from_the_schema() -> None:
    """The known types are the types the schema's if/then clauses name."""
    assert known_data_types() == frozenset({"conversation"})


def test_non_object_document_is_skipped() -> None:
    """A document that is not an object yields nothing."""
    assert check([1]) == []
    assert check(doc(root=[1])) == []


def test_flat_path_is_judged_by_its_file_name_only() -> None:
    """A flat twin is named by its last component, whatever directories a writer's path holds."""
    assert check(doc(path="/runs/exp1/train_iteration_000001.html")) == []
    assert check(doc(path="gs://bucket/exp1/train_iteration_000001.html")) == []
    assert check(doc(path="/runs/exp1/train_iteration_000002.html")) == [("RL410", "/path")]
    assert check(doc(path="/")) == [("RL410", "/path")]  # names no file at all
