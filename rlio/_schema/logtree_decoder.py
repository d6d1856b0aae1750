"""Validate a large logtree document in bounded memory: msgspec types mirroring the logtree schema.

A logtree of tens of megabytes parsed into Python dicts takes 5-8 times its size (a dict, a list
and a few strings per node). Here the document is judged piece by piece instead: its top level and
any node larger than ``CHUNK`` are decoded as *frames* (every key with its value as a
``msgspec.Raw`` view into the document, duplicates kept), and the values are then decoded with
msgspec types written from the schema (``Node``, ``Conversation``...): subtrees of at most about
``CHUNK`` bytes at a time, each dropped once judged. Peak memory is the document's bytes, about
one chunk, and a small ``Raw`` per child of a split node.

Soundness is one-sided, as for ``rlio._schema.decoders``: a document ``decode_head`` accepts is
one ``orjson.loads`` parses and the logtree schema accepts, with no ``data`` of a type the schema
does not specify; anything else (undeclared keys, a duplicate key in a frame, unknown data
types, NaN tokens, nesting past msgspec's limit) returns None and takes the exact path. Every byte
of the document is decoded by a strict msgspec type (UTF-8, escapes and numbers checked as
orjson does), except the commas and whitespace between frame values, whose grammar msgspec's skip
checks. The types follow one version of the schema: when ``schemas/logtree.schema.json``
changes (its digest differs), ``decode_head`` returns None until they are updated.

Tags are first decoded as a ``Literal`` of the HTML elements (``HtmlNode``: a shared string, no
regex search per node); the first subtree with another tag switches the walk to ``Node``, whose
tag is checked against the schema's pattern.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sys
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

import msgspec
import orjson
from msgspec import UNSET, Meta, Raw, Struct, UnsetType

from rlio._schema.loader import load_schema

#: Subtrees up to this size are decoded whole (then dropped); larger nodes are split.
CHUNK: Final = 1 << 20
#: Children shorter than this are decoded in batches of about ``_BATCH`` bytes.
_TINY: Final = 256
_BATCH: Final = 64 << 10
#: orjson's nesting limit. msgspec's is the recursion limit: above this plus one, msgspec could
#: accept a document nested deeper than orjson (and so every reader) parses.
MAX_LEVELS: Final = 1024
#: sha256 of the sorted-key JSON of the logtree schema these types mirror.
SCHEMA_DIGEST: Final = "f57bb82ab1daf33c55b8a5c1c2148e6f623797f3eae49adf4f5d2adb597a9fbc"
_TAG_RE: Final = r"^[A-Za-z][A-Za-z0-9-]*$"
_STARTED_RE: Final = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]+)?)?"
                      r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$")
_TAG: Final = re.compile(_TAG_RE)
_STARTED: Final = re.compile(_STARTED_RE)

_HTML_WORDS: Final = """
a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption
cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset
figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins
kbd label legend li link main map mark menu meta meter nav noscript object ol optgroup option
output p param picture pre progress q rp rt ruby s samp script search section select slot small
source span strong style sub summary sup table tbody td template textarea tfoot th thead time
title tr track u ul var video wbr math svg
"""
#: The elements of HTML: a tag among them is decoded to a shared string, with no regex search.
HTML_TAGS: Final = tuple(sorted(set(_HTML_WORDS.split())))
_LITERAL: Any = Literal
Tag = Annotated[str, Meta(pattern=_TAG_RE)]
HtmlTag = _LITERAL[HTML_TAGS]


class Function(Struct, forbid_unknown_fields=True, gc=False):
    """``$defs/tool_call/properties/function``."""

    name: str
    arguments: str


class ToolCall(Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """``$defs/tool_call``."""

    type: Literal["function"]
    function: Function
    id: str | UnsetType | None = UNSET


class UnparsedToolCall(Struct, forbid_unknown_fields=True, gc=False):
    """An item of ``$defs/message/properties/unparsed_tool_calls``."""

    raw_text: str
    error: str


class Part(Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """``$defs/part``: one of three objects told apart by ``type`` (checked after decoding)."""

    type: Literal["text", "thinking", "image"]
    text: str | UnsetType = UNSET
    thinking: str | UnsetType = UNSET
    image: str | UnsetType = UNSET

    def __post_init__(self) -> None:
        """A text part needs its ``text``, a thinking part its ``thinking`` (the anyOf)."""
        if (self.type == "text" and self.text is UNSET) or (
                self.type == "thinking" and self.thinking is UNSET):
            raise ValueError(f"{self.type} part without its {self.type}")


class Message(Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """``$defs/message``."""

    role: str
    content: str | list[Part]
    tool_calls: list[ToolCall] | UnsetType = UNSET
    unparsed_tool_calls: list[UnparsedToolCall] | UnsetType = UNSET
    trainable: bool | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET


class Conversation(Struct, forbid_unknown_fields=True, gc=False):
    """``$defs/data`` of type ``conversation`` (``$defs/conversation``); other types: refused."""

    type: Literal["conversation"]
    messages: list[Message]


class Node(Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """``$defs/node``."""

    tag: Tag
    attrs: dict[str, str]
    children: list[str | Node]
    data: Conversation | UnsetType = UNSET


class HtmlNode(Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """``$defs/node`` where every tag in the subtree is an HTML element (tried first)."""

    tag: HtmlTag  # type: ignore[valid-type]  # a Literal built from HTML_TAGS
    attrs: dict[str, str]
    children: list[str | HtmlNode]
    data: Conversation | UnsetType = UNSET


class Key:
    """One key of a frame: a fresh object per occurrence, so duplicate keys are all kept."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _key_hook(typ: type, value: Any) -> Any:
    if typ is Key and type(value) is str:
        return Key(value)
    raise TypeError(f"unexpected {typ!r}")


#: A node frame: tag (str), children (their raw values), attrs/data (their keys' raw values).
NodeFrame = dict[Key, str | list[Raw] | dict[Key, Raw]]
#: The document frame: the top-level strings and null, and the root node's frame.
DocFrame = dict[Key, str | NodeFrame | None]

_NODE_KEYS: Final = frozenset({"tag", "attrs", "children", "data"})
_NODE_REQUIRED: Final = frozenset({"tag", "attrs", "children"})
#: Top-level keys judged here (the schema allows any other; they take the exact path).
_DOC_KEYS: Final = frozenset({"title", "started_at", "path", "root", "write_id"})
_DOC_REQUIRED: Final = frozenset({"title", "started_at", "root"})


class SmallDoc(Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """A whole small document whose every tag is an HTML element, decoded in one call."""

    title: str
    started_at: Annotated[str, Meta(pattern=_STARTED_RE)]
    root: HtmlNode
    path: str | UnsetType | None = UNSET
    write_id: str | UnsetType = UNSET


class SmallDocAny(Struct, forbid_unknown_fields=True, gc=False, kw_only=True):
    """A whole small document with any tag the schema's pattern allows."""

    title: str
    started_at: Annotated[str, Meta(pattern=_STARTED_RE)]
    root: Node
    path: str | UnsetType | None = UNSET
    write_id: str | UnsetType = UNSET


@dataclass(frozen=True, slots=True)
class Head:
    """The top-level values of a document ``decode_head`` found valid."""

    title: str
    started_at: str
    path: str | None


class _Refused(Exception):
    """The document is not judged here: the exact path decides."""


@dataclass(frozen=True, slots=True)
class _Decoders:
    """The msgspec decoders of one walk."""

    doc_frame: Any
    node_frame: Any
    string: Any
    #: ``str | HtmlNode``, then ``str | Node`` (any tag the pattern allows); and their lists
    html_item: Any
    item: Any
    html_items: Any
    items: Any


@functools.cache
def _decoders() -> _Decoders | None:
    """The msgspec decoders, or None when the schema is not the one the types mirror."""
    if schema_digest() != SCHEMA_DIGEST or not all(_TAG.search(t) for t in HTML_TAGS):
        return None
    json = msgspec.json
    return _Decoders(
        json.Decoder(DocFrame, dec_hook=_key_hook).decode,
        json.Decoder(NodeFrame, dec_hook=_key_hook).decode,
        json.Decoder(str).decode,
        json.Decoder(str | HtmlNode).decode,
        json.Decoder(str | Node).decode,
        json.Decoder(list[str | HtmlNode]).decode,
        json.Decoder(list[str | Node]).decode)


def schema_digest() -> str:
    """sha256 of the shipped logtree schema as sorted-key JSON (what ``SCHEMA_DIGEST`` holds)."""
    canonical = orjson.dumps(load_schema("logtree"), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


def enabled() -> bool:
    """Whether the shipped logtree schema is the one these types mirror."""
    return _decoders() is not None


def decode_head(data: bytes) -> Head | None:
    """The document's top-level values when it is a valid logtree judged here, else None.

    None means only "not judged here" (the document may well be valid): the caller parses it on
    the exact path. Memory beyond ``data`` stays near ``CHUNK`` plus a small object per child
    of each split node.
    """
    decs = _decoders()
    if decs is None or sys.getrecursionlimit() > MAX_LEVELS + 1:
        return None
    try:
        return _Walk(decs).document(data)
    except Exception:  # refused, or beyond msgspec's reach (depth...): the exact path decides
        return None


@functools.cache
def _small_decoders() -> tuple[Any, Any] | None:
    """The whole-document decoders (HTML tags first, then any tag), or None as ``_decoders``."""
    if _decoders() is None:
        return None
    return msgspec.json.Decoder(SmallDoc).decode, msgspec.json.Decoder(SmallDocAny).decode


def decode_small(data: bytes) -> Head | None:
    """``decode_head`` for a small document: the same verdict from one msgspec decode of the
    whole document (its memory is the decoded tree, a few times the document's size).

    msgspec validates every occurrence of a duplicate key and keeps the last, as orjson does.
    """
    decs = _small_decoders()
    if decs is None or sys.getrecursionlimit() > MAX_LEVELS + 1:
        return None
    try:
        try:
            doc = decs[0](data)
        except msgspec.ValidationError:  # maybe a tag beyond HTML's
            doc = decs[1](data)
    except Exception:  # refused, or beyond msgspec's reach (depth...): the exact path decides
        return None
    return Head(doc.title, doc.started_at, None if doc.path is UNSET else doc.path)


def _unique(frame: dict[Key, Any], allowed: frozenset[str],
            required: frozenset[str]) -> dict[str, Any]:
    """A frame's values by key name; refuses duplicate, undeclared or missing keys."""
    out = {k.name: v for k, v in frame.items()}
    if len(out) != len(frame) or not out.keys() <= allowed or not required <= out.keys():
        raise _Refused
    return out


class _Walk:
    """One document's walk: frames split, children decoded one by one (tiny ones in batches).

    One child at a time, each dropped once judged, keeps memory flat and reuses the same few
    blocks (faster than building the whole tree). Children are first decoded with HTML tags
    as literals; the first that has another tag switches the rest of the walk to the pattern.
    """

    def __init__(self, decs: _Decoders) -> None:
        self.decs = decs
        self.item, self.items = decs.html_item, decs.html_items

    def document(self, data: bytes) -> Head:
        top = _unique(self.decs.doc_frame(data), _DOC_KEYS, _DOC_REQUIRED)
        title, started, path, root = top["title"], top["started_at"], top.get("path"), top["root"]
        if type(title) is not str or type(started) is not str or not _STARTED.search(started):
            raise _Refused
        if not (path is None or type(path) is str) or type(root) is not dict:
            raise _Refused
        if type(top.get("write_id", "")) is not str:
            raise _Refused
        if any(k.name == "data" for k in root):
            raise _Refused  # a root carrying data: rare, judged on the exact path
        self._frame(root)
        return Head(title, started, path)

    def _frame(self, frame: dict[Key, Any]) -> None:
        """Judge a split node (its frame has no ``data``): tag, attrs, then its children."""
        node = _unique(frame, _NODE_KEYS - {"data"}, _NODE_REQUIRED)
        tag, attrs, children = node["tag"], node["attrs"], node["children"]
        if type(tag) is not str or not _TAG.search(tag) or type(children) is not list:
            raise _Refused
        if type(attrs) is not dict:
            raise _Refused
        for value in attrs.values():
            self.decs.string(value)  # every attribute value is a string
        self._children(children)

    def _children(self, children: list[Raw]) -> None:
        tiny: list[Raw] = []
        size = 0
        for raw in children:
            n = len(raw)
            if n < _TINY:  # a call per child would cost more than its parse: batched
                tiny.append(raw)
                size += n + 1
                if size >= _BATCH:
                    self._batch(tiny)
                    tiny, size = [], 0
            elif n <= CHUNK:
                self._one(raw)
            else:
                self._large(raw)
        self._batch(tiny)

    def _one(self, raw: Raw) -> None:
        try:
            self.item(raw)
        except msgspec.ValidationError:
            if self.item is self.decs.item:
                raise
            self.item, self.items = self.decs.item, self.decs.items  # a tag beyond HTML's
            self.item(raw)

    def _batch(self, tiny: list[Raw]) -> None:
        """Decode tiny children in one call: a JSON array of their raw bytes."""
        if not tiny:
            return
        array = b"[" + b",".join(tiny) + b"]"
        try:
            self.items(array)
        except msgspec.ValidationError:
            if self.items is self.decs.items:
                raise
            self.item, self.items = self.decs.item, self.decs.items
            self.items(array)

    def _large(self, raw: Raw) -> None:
        """A child larger than ``CHUNK``: a string, a node carrying data (decoded whole), or a
        node split into its frame."""
        if bytes(memoryview(raw)[:1]) == b'"':
            self.decs.string(raw)
            return
        frame = self.decs.node_frame(raw)
        if any(k.name == "data" for k in frame):
            del frame
            self._one(raw)
            return
        self._frame(frame)
