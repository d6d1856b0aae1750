"""A large logtree judged root child by root child, so its parsed form never exists whole.

Parsed whole, a logtree takes over ten times its size in memory (a node is a dict). Here the
document's bytes are cut into the document without the root's children (its head) and pieces of
``root.children``, each parsed and judged on its own, by the schema's one engine
(``rlio.schema.record_schema("logtree")``, and ``logtree_known_types()`` for the data types it
specifies) on the head holding that piece's children. The verdict is the whole document's
because:

- the pieces are the bytes between the root's ``[`` and ``]`` cut at commas, and each one
  parses as ``[piece]`` to a non-empty list: then the array is exactly those lists end to end
  (a JSON array's body is its values joined by commas);
- the head is parsed with a random marker where the array was and must show it at
  ``root.children``: the array cut out is the one the document's value holds there;
- the schema judges ``root.children`` item by item only (``items``, no rule over the array as a
  whole; ``_per_item`` reads this from the schema and otherwise turns the split off), so the
  document is valid exactly when the head with each piece of children is.

Anything else (a piece that does not parse, NaN tokens, a failed check, an unknown data type,
an unusual shape) returns False and the caller takes the whole-document path, which gives the
findings and their explanations; a document judged here gets its head's findings (RL204,
RL410) only, which is all a valid document with known data types can get.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Final

import orjson

from rlio.layout import RunPath
from rlio.schema import load_schema, logtree_known_types, record_schema
from rlio.validate.checks.logtree import head_checks
from rlio.validate.scan import Sink, verdict

#: Bytes of children parsed at once (a piece ends at the first root-level comma past this).
PIECE: Final = 256 << 10
#: How far past ``PIECE`` a root-level comma is looked for before the rest is one piece.
_REACH: Final = 2 * PIECE
_WHITESPACE: Final = b" \t\r\n"


def judge_in_pieces(data: bytes, sink: Sink, rp: RunPath) -> bool:
    """Judge a logtree document's bytes in pieces; True when it is valid with known data types
    only (its head's findings added), False when the whole-document path must judge it."""
    if not _per_item():
        return False
    found = _split(data)
    if found is None:
        return False
    head, lo, hi = found
    children: list[Any] = []
    head["root"]["children"] = children
    if not _valid(head):
        return False
    for piece in _pieces(data, lo, hi):
        try:
            children[:] = orjson.loads(b"[" + piece + b"]")
        except orjson.JSONDecodeError:
            return False
        if not children or not _valid(head):
            return False
    head_checks(head.get("started_at"), head.get("path"), sink, rp)
    return True


def _valid(doc: Any) -> bool:
    """Whether ``doc`` is valid and holds only data types the schema specifies (False too when
    even a deep thread cannot judge it)."""
    try:
        return verdict(record_schema("logtree").clean, doc) and verdict(
            logtree_known_types().clean, doc)
    except RecursionError:
        return False


def _per_item() -> bool:
    """Whether the schema judges ``root.children`` item by item only (see the module's
    docstring): the root is a ``node``, and neither the document, the node nor its children
    carry a rule over more than one item."""
    schema = load_schema("logtree")
    logic = {"allOf", "anyOf", "oneOf", "not", "if", "$ref"}
    node = schema.get("$defs", {}).get("node", {})
    children = node.get("properties", {}).get("children", {})
    return (schema.get("properties", {}).get("root") == {"$ref": "#/$defs/node"}
            and not logic & (schema.keys() | node.keys())
            and children.get("type") == "array"
            and set(children) <= {"type", "items", "description", "title"})


def _split(data: bytes) -> tuple[dict[str, Any], int, int] | None:
    """``(head, lo, hi)``: the document parsed with ``root.children`` empty, and where the bytes
    of that array lie between its brackets (``data[lo:hi]``); None when the bytes do not have
    that shape."""
    at = data.find(b'"children"', data.find(b'"root"') + 1)
    start = data.find(b"[", at)
    end = data.rfind(b"]")
    if at < 0 or start < 0 or end < start or data[at + 10:start].strip(_WHITESPACE) != b":":
        return None
    if data[end + 1:].translate(None, _WHITESPACE + b"}"):
        return None  # the array must be the last value of the root and the root the document's
    marker = os.urandom(16).hex()
    try:
        head = orjson.loads(data[:start] + b'["' + marker.encode() + b'"]' + data[end + 1:])
    except orjson.JSONDecodeError:
        return None
    root = head.get("root") if type(head) is dict else None
    if type(root) is not dict or root.get("children") != [marker]:
        return None
    return head, start + 1, end


def _pieces(data: bytes, lo: int, hi: int) -> Iterator[bytes]:
    """``data[lo:hi]`` cut at commas between root-level items, about ``PIECE`` bytes a piece.

    A cut is the comma of a ``},`` after which as many brackets opened as closed since the
    piece began (strings holding brackets can mislead the count: the parse then fails and the
    caller judges the document whole). When no cut is found within ``_REACH`` bytes past
    ``PIECE`` (one root child holds most of the document), the rest is one piece.
    """
    if hi - lo <= PIECE and not data[lo:hi].strip(_WHITESPACE):
        return  # an empty array (a larger run of whitespace parses to an empty piece: refused)
    start = lo
    while hi - start > PIECE:
        cut = _cut(data, start, hi)
        if cut < 0:
            break
        yield data[start:cut]
        start = cut + 1
    yield data[start:hi]


def _cut(data: bytes, start: int, hi: int) -> int:
    """The first comma in ``data[start + PIECE:hi]`` that ends a root-level item, else -1."""
    balance, counted = 0, start
    limit = min(hi, start + PIECE + _REACH)
    at = data.find(b"},", start + PIECE, limit)
    while at >= 0:
        end = at + 1
        balance += (data.count(b"{", counted, end) + data.count(b"[", counted, end)
                    - data.count(b"}", counted, end) - data.count(b"]", counted, end))
        counted = end
        if balance == 0:
            return end
        at = data.find(b"},", end, limit)
    return -1
