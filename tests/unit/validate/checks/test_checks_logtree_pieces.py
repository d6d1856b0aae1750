"""Unit tests of judging a large logtree root child by root child (its return value and cuts)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from rlio import layout
from rlio.schema import load_schema
from rlio.validate.checks import logtree_pieces as lp
from rlio.validate.scan import Sink

RP = layout.parse_path("train_iteration_000001_logtree.json")


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lp, "PIECE", 32)
    monkeypatch.setattr(lp, "_REACH", 64)


def node(text: str = "x", **extra: Any) -> dict[str, Any]:
    return {"tag": "p", "attrs": {}, "children": [text], **extra}


def data_of(children: list[Any], root_data: Any = None, **head: Any) -> bytes:
    root: dict[str, Any] = {"tag": "body", "attrs": {}}
    if root_data is not None:
        root["data"] = root_data
    root["children"] = children
    doc = {"title": "t", "started_at": "2025-03-01T12:00:00Z", "path": None, **head,
           "root": root}
    return orjson.dumps(doc)


def judge(data: bytes) -> tuple[bool, list[str]]:
    sink = Sink("t", 100)
    return lp.judge_in_pieces(data, sink, RP), [f.code for f in sink.items]


def pieces(data: bytes) -> list[bytes]:
    found = lp._split(data)
    assert found is not None
    _, lo, hi = found
    return list(lp._pieces(data, lo, hi))


KIDS = [node(f"child {i}") for i in range(8)]


def test_valid_document_in_several_pieces_is_judged_here() -> None:
    """A valid document is judged in several pieces that reassemble to its children."""
    data = data_of(KIDS)
    parts = pieces(data)
    assert len(parts) > 2
    assert orjson.loads(b"[" + b",".join(parts) + b"]") == KIDS
    assert all(orjson.loads(b"[" + p + b"]") for p in parts)
    assert judge(data) == (True, [])


def test_head_findings_are_added() -> None:
    """A document judged here gets its head's findings (naive started_at, wrong path)."""
    ok, found = judge(data_of(KIDS, started_at="2025-03-01T12:00:00", path="/x/other.html"))
    assert ok and sorted(found) == ["RL204", "RL410"]


def test_empty_children_are_judged_here() -> None:
    """A valid document with no root children is judged here, and an empty array has no piece."""
    data = data_of([])
    assert pieces(data) == []
    assert pieces(data.replace(b"[]", b"[ \n ]")) == []
    assert judge(data) == (True, [])
    spaces = data.replace(b"[]", b"[" + b" " * lp.PIECE + b"]")  # as long as a piece: still empty
    assert pieces(spaces) == []
    assert judge(spaces) == (True, [])


def test_small_array_is_one_piece() -> None:
    """Children shorter than a piece are one piece."""
    data = data_of([node()])
    assert pieces(data) == [orjson.dumps(node())]


def test_whitespace_only_array_longer_than_a_piece_is_refused() -> None:
    """A run of whitespace longer than a piece is one empty piece, refused to the whole path."""
    data = data_of([]).replace(b"[]", b"[" + b" " * 100 + b"]")
    assert pieces(data) == [b" " * 100]
    assert judge(data) == (False, [])


def test_head_that_breaks_the_schema_is_refused() -> None:
    """A head the schema refuses sends the document to the whole path, children or none."""
    assert judge(data_of([], title=5)) == (False, [])
    assert judge(data_of(KIDS, title=5)) == (False, [])
    assert judge(data_of([], root_data={"type": "conversation"})) == (False, [])


def test_unknown_data_type_in_the_head_is_refused() -> None:
    """An unknown data type on the root sends the document to the whole path (for RL203)."""
    assert judge(data_of([], root_data={"type": "chart"})) == (False, [])
    assert judge(data_of(KIDS, root_data={"type": "chart"})) == (False, [])


def test_unknown_data_type_in_a_child_is_refused() -> None:
    """An unknown data type in any child, however deep, sends the document to the whole path."""
    for at in (0, 7):
        kids = list(KIDS)
        kids[at] = {"tag": "div", "attrs": {}, "children": [node(data={"type": "chart"})]}
        assert judge(data_of(kids)) == (False, [])


def test_child_that_breaks_the_schema_is_refused() -> None:
    """A child the schema refuses, in the first or the last piece, is refused."""
    for at in (0, 7):
        kids = list(KIDS)
        kids[at] = {"tag": "1p", "attrs": {}, "children": []}
        assert judge(data_of(kids)) == (False, [])


def test_piece_that_does_not_parse_is_refused() -> None:
    """A string child holding brackets and ``},`` misleads the cut; the piece does not parse."""
    tricky = node("a" * 40 + "]},")
    data = data_of([tricky, *KIDS])
    assert lp._valid(orjson.loads(data))  # valid when parsed whole
    assert any(p.endswith(b']}') for p in pieces(data))
    assert judge(data) == (False, [])


def test_split_finds_the_children_array() -> None:
    """The head has a marker at root.children and lo:hi spans the array's bytes."""
    data = data_of(KIDS)
    found = lp._split(data)
    assert found is not None
    head, lo, hi = found
    assert orjson.loads(b"[" + data[lo:hi] + b"]") == KIDS
    assert head["title"] == "t" and head["root"]["tag"] == "body"
    assert len(head["root"]["children"]) == 1 and isinstance(head["root"]["children"][0], str)
    assert lp._split(data + b" \n") is not None


@pytest.mark.parametrize("data", [
    b'{"title":"t","root":{"tag":"b","children":[1],"attrs":{}}}',  # children not last in root
    b'{"root":{"tag":"b","attrs":{},"children":[1]},"title":"t"}',  # root not last
    b'{"root":{"tag":"b","attrs":{},"children":[1]}}x',  # trailing bytes
    b'{"title":"t","root":{"tag":"b","attrs":{},"children":[1]}} [2]',  # a second value
    b'{"title":"t","node":{"tag":"b","attrs":{},"children":[1]}}',  # no root
    b'{"title":"t","root":{"tag":"b","attrs":{},"kids":[1]}}',  # no children
    b'{"title":"t","root":{"tag":"b","attrs":{},"children":"[1]"}}',  # children not an array
    b'{"title":"t","root":{"tag":"b","attrs":{},"children" 1 [2]}}',  # no colon
    b'{"title":"t","root":{"tag":"b","attrs":{}},"other":{"children":[1]}}',  # elsewhere
    b'[{"root":{"children":[1]}}]',  # not an object
    b'{"title":"t","root":["children",[1]]}',  # root not an object
    b'{"title":"t","root":{"tag":"b","attrs":{},"children":[1]}',  # unbalanced head
    b'{"title":"t","root":{"tag":"b","attrs":{},"children":]}}[',  # no array
    b"",
])
def test_split_refuses_unusual_shapes(data: bytes) -> None:
    """Bytes that do not end with root.children's array as the last value split to None."""
    assert lp._split(data) is None
    assert judge(data) == (False, [])


def test_cut_is_the_first_balanced_comma_past_a_piece() -> None:
    """The cut is the comma after the first ``}`` past PIECE where the brackets balance."""
    lp.PIECE, lp._REACH = 2, 100  # type: ignore[misc]  # restored by the fixture
    data = b'{"a":{},"b":[{}]},{"c":1},{}'
    assert lp._cut(data, 0, len(data)) == data.index(b"},{") + 1
    assert lp._cut(data, 0, data.index(b"},{")) == -1  # the cut lies past hi
    assert lp._cut(b"{},{}", 0, 5) == -1  # the only balanced comma is before start + PIECE
    lp.PIECE = 1  # type: ignore[misc]
    assert lp._cut(b"{},{}", 0, 5) == 2  # a ``},`` starting right at start + PIECE counts


def test_cut_looks_no_further_than_reach() -> None:
    """No cut within _REACH bytes past PIECE makes the rest one piece."""
    lp.PIECE, lp._REACH = 2, 4  # type: ignore[misc]
    data = b'{"aaaaaaaaaaaaa":1},{}'
    assert lp._cut(data, 0, len(data)) == -1
    lp._REACH = 100  # type: ignore[misc]
    assert lp._cut(data, 0, len(data)) == data.index(b"},") + 1


def test_per_item_reads_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """The split is on only while the schema judges root.children item by item."""
    assert lp._per_item()
    base = load_schema("logtree")

    def schema_with(change: Any) -> dict[str, Any]:
        s = orjson.loads(orjson.dumps(base))
        change(s)
        return s

    changes = [
        lambda s: s["$defs"]["node"]["properties"]["children"].update(minItems=1),
        lambda s: s["$defs"]["node"]["properties"]["children"].update(type="object"),
        lambda s: s["$defs"]["node"].update(allOf=[{}]),
        lambda s: s.update(anyOf=[{}]),
        lambda s: s["properties"].update(root={"type": "object"}),
    ]
    for change in changes:
        monkeypatch.setattr(lp, "load_schema", lambda _kind, c=change: schema_with(c))
        assert not lp._per_item()
        assert judge(data_of(KIDS)) == (False, [])
    described = {"description": "d", "title": "t"}  # annotations judge nothing
    monkeypatch.setattr(lp, "load_schema", lambda _kind: schema_with(
        lambda s: s["$defs"]["node"]["properties"]["children"].update(described)))
    assert lp._per_item()
