"""The logtree builder: every verb, the docs/format.md §7 JSON document, and errors on bad input."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import enum
import json
import math
import re
import struct
import zlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest

import rlio
from rlio import schema
from rlio.errors import RecordError
from rlio.logtree import MAX_SECTION_DEPTH, LogTree, dumps_compact, dumps_indented


def _tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def _body(lt: LogTree) -> list[Any]:
    """Root children after the title and subtitle."""
    return lt.to_json()["root"]["children"][2:]


def _sections(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in node["children"] if isinstance(c, dict) and c["tag"] == "section"]


def _valid(doc: dict[str, Any]) -> None:
    assert schema.record_schema("logtree").passes(doc), schema.record_schema("logtree").explain(doc)


# --- document ---------------------------------------------------------------------------------


def test_empty_tree_is_a_valid_document_with_keys_in_spec_order() -> None:
    """A fresh tree renders {title, started_at, path, root} with a body root and validates."""
    doc = LogTree("RL Iteration 0").to_json()
    assert list(doc) == ["title", "started_at", "path", "root"]
    assert doc["title"] == "RL Iteration 0"
    assert doc["path"] is None
    assert doc["root"]["tag"] == "body"
    h1, subtitle = doc["root"]["children"]
    assert h1 == {"tag": "h1", "attrs": {"class": "lt-title"}, "children": ["RL Iteration 0"]}
    assert subtitle["children"][0].startswith("Started ")
    _valid(doc)


def test_started_at_defaults_to_now_in_utc_with_an_offset() -> None:
    """The default start time is timezone-aware UTC and serializes with an offset."""
    before = datetime.now(UTC)
    lt = LogTree("t")
    assert lt.started_at.utcoffset() == timedelta(0)
    assert before <= lt.started_at <= datetime.now(UTC)
    assert lt.to_json()["started_at"].endswith("+00:00")


def test_started_at_naive_gets_the_local_offset_and_aware_is_kept() -> None:
    """A naive start time is read as local time and given an offset; an aware one is kept."""
    naive = LogTree("t", started_at=datetime(2025, 1, 2, 3, 4, 5))
    assert naive.started_at.utcoffset() is not None
    assert re.search(r"[+-]\d\d:\d\d$", naive.to_json()["started_at"])
    tz = timezone(timedelta(hours=-5))
    aware = LogTree("t", started_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=tz))
    assert aware.to_json()["started_at"] == "2025-01-02T03:04:05-05:00"


def test_title_is_escaped_in_the_tree_and_kept_verbatim_in_the_document() -> None:
    """The title field is the raw title; its h1 child is escaped HTML."""
    doc = LogTree("<b>x</b> & y").to_json()
    assert doc["title"] == "<b>x</b> & y"
    assert doc["root"]["children"][0]["children"] == ["&lt;b&gt;x&lt;/b&gt; &amp; y"]


def test_title_must_be_a_string() -> None:
    """A non-string title is a TypeError naming what was expected."""
    with pytest.raises(TypeError, match="LogTree title must be a str, got int"):
        LogTree(3)  # type: ignore[arg-type]


def test_path_is_recorded_and_must_be_a_string() -> None:
    """to_json(path=...) records the HTML twin's path; a non-string path is rejected."""
    lt = LogTree("t")
    assert lt.to_json(path="iteration_000001/train.html")["path"] == "iteration_000001/train.html"
    with pytest.raises(TypeError, match="path must be a str"):
        lt.to_json(path=7)  # type: ignore[arg-type]


def test_to_json_is_a_copy_the_caller_may_mutate() -> None:
    """Mutating the dict from to_json() does not change the tree."""
    lt = LogTree("t")
    lt.text("a")
    doc = lt.to_json()
    doc["root"]["children"].clear()
    assert len(lt.to_json()["root"]["children"]) == 3


def test_to_json_bytes_is_orjson_indent_2_of_to_json() -> None:
    """to_json_bytes is the same document, pretty-printed like the cookbook (indent 2)."""
    lt = LogTree("t")
    with lt.section("s"):
        lt.text("x")
        lt.conversation([{"role": "user", "content": "hi"}])
    raw = lt.to_json_bytes(path="p.html")
    assert raw == orjson.dumps(lt.to_json(path="p.html"), option=orjson.OPT_INDENT_2)
    assert json.loads(raw) == lt.to_json(path="p.html")


def test_logtree_is_exported_from_the_package() -> None:
    """rlio.LogTree is the builder (lazy re-export)."""
    assert rlio.LogTree is LogTree


# --- sections ---------------------------------------------------------------------------------


def test_section_headings_go_h2_to_h6_and_deeper_stays_h6() -> None:
    """Nested sections get h2 at depth 1 through h6, and every deeper level stays h6."""
    lt = LogTree("t")
    with contextlib.ExitStack() as stack:
        for depth in range(8):
            stack.enter_context(lt.section(f"level {depth + 1}"))
    node = lt.to_json()["root"]
    tags = []
    while _sections(node):
        node = _sections(node)[0]
        tags.append(node["children"][0]["tag"])
    assert tags == ["h2", "h3", "h4", "h5", "h6", "h6", "h6", "h6"]


def test_section_holds_its_heading_then_what_was_logged_inside() -> None:
    """Content logged in a section follows its heading; after the block, content goes back up."""
    lt = LogTree("t")
    with lt.section("Group <Rollout>"):
        lt.text("inside")
    lt.text("after")
    section, after = _body(lt)
    assert section["tag"] == "section"
    assert section["children"][0] == {
        "tag": "h2", "attrs": {"class": "lt-h2"}, "children": ["Group &lt;Rollout&gt;"]}
    assert section["children"][1]["children"] == ["inside"]
    assert after["children"] == ["after"]


def test_section_exited_by_an_exception_restores_the_insertion_point() -> None:
    """An exception leaving a section closes it; later content goes to the parent."""
    lt = LogTree("t")
    with pytest.raises(KeyError), lt.section("boom"):
        raise KeyError("x")
    lt.text("after")
    assert [n["tag"] for n in _body(lt)] == ["section", "p"]


def test_two_trees_keep_separate_insertion_points() -> None:
    """A section open in one tree does not redirect logging into another tree."""
    a, b = LogTree("a"), LogTree("b")
    with a.section("only in a"):
        b.text("b root")
        a.text("a inner")
    assert [n["tag"] for n in _body(b)] == ["p"]
    assert _body(a)[0]["children"][1]["children"] == ["a inner"]


def test_sections_deeper_than_the_cap_become_siblings_at_the_cap() -> None:
    """Beyond MAX_SECTION_DEPTH sections stop nesting but keep their own content."""
    lt = LogTree("t")
    extra = 3
    with contextlib.ExitStack() as stack:
        for depth in range(MAX_SECTION_DEPTH + extra):
            stack.enter_context(lt.section(f"s{depth}"))
            lt.text(f"t{depth}")
    node = lt.to_json()["root"]
    for _ in range(MAX_SECTION_DEPTH - 1):
        (node,) = _sections(node)
    deepest = _sections(node)
    assert len(deepest) == 1 + extra
    for k, sec in enumerate(deepest):
        assert sec["children"][1]["children"] == [f"t{MAX_SECTION_DEPTH - 1 + k}"]


def test_section_title_must_be_a_string() -> None:
    """A non-string section title is a TypeError."""
    lt = LogTree("t")
    with pytest.raises(TypeError, match="section title must be a str"), lt.section(None):  # type: ignore[arg-type]
        pass


# --- text, details, html, exception -------------------------------------------------------------


def test_text_is_an_escaped_paragraph() -> None:
    """text() adds a p.lt-p whose child is the escaped text."""
    lt = LogTree("t")
    lt.text("a < b & c > \"d\" 'e'\n  indented")
    (p,) = _body(lt)
    assert p == {"tag": "p", "attrs": {"class": "lt-p"},
                 "children": ["a &lt; b &amp; c &gt; &quot;d&quot; &#x27;e&#x27;\n  indented"]}


def test_text_rejects_non_strings() -> None:
    """text() of a non-string is a TypeError naming the type."""
    with pytest.raises(TypeError, match="text must be a str, got float"):
        LogTree("t").text(1.5)  # type: ignore[arg-type]


def test_details_has_an_escaped_summary_and_preformatted_body() -> None:
    """details() adds details > summary + pre, both escaped, collapsed by default."""
    lt = LogTree("t")
    lt.details("<tok> 1\n2", summary="Raw <tokens>")
    (d,) = _body(lt)
    assert d["tag"] == "details" and "open" not in d["attrs"]
    summary, pre = d["children"]
    assert summary == {"tag": "summary", "attrs": {}, "children": ["Raw &lt;tokens&gt;"]}
    assert pre["tag"] == "pre" and pre["children"] == ["&lt;tok&gt; 1\n2"]


def test_details_default_summary() -> None:
    """details() without a summary says 'Details'."""
    lt = LogTree("t")
    lt.details("x")
    assert _body(lt)[0]["children"][0]["children"] == ["Details"]


def test_html_inserts_raw_markup_verbatim() -> None:
    """html() is the explicit opt-in: its string is kept unescaped."""
    lt = LogTree("t")
    lt.html("<b>bold</b>")
    assert _body(lt)[0] == {
        "tag": "div", "attrs": {"class": "lt-html"}, "children": ["<b>bold</b>"]}


def test_exception_block_shows_type_message_and_traceback_escaped() -> None:
    """exception() adds an open details with the escaped summary and traceback in a pre."""
    lt = LogTree("t")
    try:
        raise ValueError("bad <input>")
    except ValueError as exc:
        lt.exception(exc)
    (block,) = _body(lt)
    assert block["tag"] == "details" and block["attrs"] == {"class": "lt-exc", "open": "open"}
    summary, pre = block["children"]
    assert summary["children"] == ["Exception: ValueError: bad &lt;input&gt;"]
    assert pre["tag"] == "pre"
    assert "Traceback (most recent call last)" in pre["children"][0]
    assert "ValueError: bad &lt;input&gt;" in pre["children"][0]


def test_exception_with_a_broken_str_is_still_logged() -> None:
    """An exception whose __str__ raises is logged as unprintable, not re-raised."""
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    lt = LogTree("t")
    lt.exception(Broken())
    assert _body(lt)[0]["children"][0]["children"] == ["Exception: Broken: &lt;unprintable&gt;"]


# --- tables -----------------------------------------------------------------------------------


def _table_cells(table: dict[str, Any]) -> tuple[list[str] | None, list[list[str]]]:
    parts = {c["tag"]: c for c in table["children"]}
    head = None
    if "thead" in parts:
        head = [th["children"][0] for th in parts["thead"]["children"][0]["children"]]
    rows = [[td["children"][0] for td in tr["children"]] for tr in parts["tbody"]["children"]]
    return head, rows


def test_table_from_dict_is_two_columns_key_value() -> None:
    """A dict becomes a key/value table in insertion order."""
    lt = LogTree("t")
    lt.table({"b": 1, "a": "x"})
    assert _table_cells(_body(lt)[0]) == (["key", "value"], [["b", "1"], ["a", "x"]])


def test_table_from_list_of_dicts_uses_the_union_of_keys_in_first_seen_order() -> None:
    """Columns are every key in first-seen order; a missing key is an empty cell."""
    lt = LogTree("t")
    lt.table([{"a": 1, "b": 2}, {"c": 3, "a": 4}])
    assert _table_cells(_body(lt)[0]) == (["a", "b", "c"], [["1", "2", ""], ["4", "", "3"]])


def test_table_header_picks_and_orders_columns_of_dicts() -> None:
    """header=... with a list of dicts selects those columns in that order."""
    lt = LogTree("t")
    lt.table([{"a": 1, "b": 2}], header=["b", "z"])
    assert _table_cells(_body(lt)[0]) == (["b", "z"], [["2", ""]])


def test_table_from_rows_and_header() -> None:
    """Rows plus header=... become a table with that head; rows alone have no thead."""
    lt = LogTree("t")
    lt.table([(1, "x"), [2, "y"]], header=["n", "s"])
    lt.table([[1, 2]])
    with_head, no_head = _body(lt)
    assert _table_cells(with_head) == (["n", "s"], [["1", "x"], ["2", "y"]])
    assert _table_cells(no_head) == (None, [["1", "2"]])


def test_table_caption_is_an_escaped_caption_element() -> None:
    """caption=... becomes the table's first child, a caption element, escaped."""
    lt = LogTree("t")
    lt.table({"a": 1}, caption="Reward <components>")
    assert _body(lt)[0]["children"][0] == {
        "tag": "caption", "attrs": {}, "children": ["Reward &lt;components&gt;"]}


def test_empty_table_is_an_empty_body() -> None:
    """An empty list gives a table with an empty tbody (and the header if given)."""
    lt = LogTree("t")
    lt.table([])
    lt.table([], header=["a"])
    assert _table_cells(_body(lt)[0]) == (None, [])
    assert _table_cells(_body(lt)[1]) == (["a"], [])


def test_table_cells_format_floats_and_keep_the_exact_value_as_a_tooltip() -> None:
    """Floats show six significant digits with repr in title; integral floats keep '.0'."""
    lt = LogTree("t")
    lt.table([[0.1 + 0.2, 1.0, 1234567.891, 0.5, math.nan, -math.inf, 10**20 * 1.0]])
    row = _body(lt)[0]["children"][0]["children"][0]["children"]
    assert [td["children"][0] for td in row] == [
        "0.3", "1.0", "1.23457e+06", "0.5", "NaN", "-inf", "1e+20"]
    assert row[0]["attrs"] == {"class": "num", "title": "0.30000000000000004"}
    assert row[1]["attrs"] == {"class": "num"}
    assert row[4]["attrs"] == {"class": "num"}


def test_table_cells_show_scalars_and_nested_values() -> None:
    """None, bools, ints, enums, dataclasses and nested values get readable, escaped cells."""
    class Color(enum.Enum):
        RED = "red"

    @dataclasses.dataclass
    class P:
        x: int

    lt = LogTree("t")
    lt.table([[None, True, 3, Color.RED, P(1), {"k": [1, "<a>"]}, "<td>"]])
    row = _body(lt)[0]["children"][0]["children"][0]["children"]
    assert [td["children"][0] for td in row] == [
        "None", "True", "3", "red", "{&quot;x&quot;:1}",
        "{&quot;k&quot;:[1,&quot;&lt;a&gt;&quot;]}", "&lt;td&gt;"]


def test_table_keys_and_headers_are_escaped() -> None:
    """Dict keys and header names are escaped like cells."""
    lt = LogTree("t")
    lt.table({"<k>": 1})
    lt.table([[1]], header=["<h>"])
    assert _table_cells(_body(lt)[0])[1] == [["&lt;k&gt;", "1"]]
    assert _table_cells(_body(lt)[1])[0] == ["&lt;h&gt;"]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ("abc", "got str"),
        (5, "got int"),
        ([{"a": 1}, [1]], "table row 1 is a list"),
        ([[1], "ab"], "table row 1 is a str"),
        ([[1], 2], "table row 1 is a int"),
    ],
)
def test_table_rejects_shapes_it_cannot_draw(obj: Any, message: str) -> None:
    """A string, a scalar, or mixed rows is a TypeError naming the problem."""
    with pytest.raises(TypeError, match=re.escape(message)):
        LogTree("t").table(obj)


def test_table_accepts_an_iterator_of_rows() -> None:
    """Any iterable of rows works (a generator here)."""
    lt = LogTree("t")
    lt.table(([i, i * i] for i in range(3)), header=["i", "sq"])
    assert _table_cells(_body(lt)[0])[1] == [["0", "0"], ["1", "1"], ["2", "4"]]


# --- conversations ---------------------------------------------------------------------------


def test_conversation_is_a_typed_data_node_without_string_children() -> None:
    """conversation() adds {tag, attrs, children: [], data: {type, messages}} with data last."""
    lt = LogTree("t")
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}],
         "tool_calls": [{"type": "function", "id": None,
                         "function": {"name": "f", "arguments": "{}"}}],
         "unparsed_tool_calls": [{"raw_text": "<x", "error": "bad"}], "trainable": True},
        {"role": "tool", "content": "42", "tool_call_id": "c1", "name": "f"},
    ]
    lt.conversation(messages)
    doc = lt.to_json()
    (node,) = doc["root"]["children"][2:]
    assert list(node) == ["tag", "attrs", "children", "data"]
    assert node["children"] == []
    assert node["data"] == {"type": "conversation", "messages": messages}
    _valid(doc)


def test_conversation_copies_messages() -> None:
    """Changing the caller's messages after logging does not change the tree."""
    msgs = [{"role": "user", "content": "before"}]
    lt = LogTree("t")
    lt.conversation(msgs)
    msgs[0]["content"] = "after"
    msgs.append({"role": "user", "content": "more"})
    assert _body(lt)[0]["data"]["messages"] == [{"role": "user", "content": "before"}]


def test_conversation_normalizes_non_json_values() -> None:
    """Enums, tuples and dataclass messages are normalized to their JSON form."""
    class Role(enum.Enum):
        USER = "user"

    @dataclasses.dataclass
    class Msg:
        role: str
        content: str

    lt = LogTree("t")
    lt.conversation((
        {"role": Role.USER, "content": ({"type": "text", "text": "a"},), "extra": {"k": (1, 2)}},
        Msg("assistant", "b"),
    ))
    assert _body(lt)[0]["data"]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}], "extra": {"k": [1, 2]}},
        {"role": "assistant", "content": "b"},
    ]


def test_conversation_fixes_up_common_near_misses() -> None:
    """content None -> "", a tool call without type -> function, dict arguments -> JSON text."""
    lt = LogTree("t")
    call = {"id": "c", "function": {"name": "f", "arguments": {"x": 1}}}
    lt.conversation([{"role": "assistant", "content": None, "tool_calls": [call]}])
    (msg,) = _body(lt)[0]["data"]["messages"]
    assert msg == {"role": "assistant", "content": "",
                   "tool_calls": [{"type": "function", "id": "c",
                                   "function": {"name": "f", "arguments": '{"x":1}'}}]}
    _valid(lt.to_json())


def test_conversation_accepts_model_objects_as_tool_calls() -> None:
    """Tool calls given as model objects (pydantic-style model_dump) are dumped to dicts."""
    class ToolCall:
        def model_dump(self, mode: str = "python") -> dict[str, Any]:
            return {"function": {"name": "calc", "arguments": '{"x": 2}'}, "id": "c9",
                    "type": "function"}

    lt = LogTree("t")
    lt.conversation([{"role": "assistant", "content": "", "tool_calls": [ToolCall()]}])
    (msg,) = _body(lt)[0]["data"]["messages"]
    assert msg["tool_calls"] == [{"function": {"name": "calc", "arguments": '{"x": 2}'},
                                  "id": "c9", "type": "function"}]
    _valid(lt.to_json())


def test_conversation_turns_raw_image_bytes_into_a_data_uri() -> None:
    """PNG bytes in an image part become a data:image/png;base64 URI; a None image is dropped."""
    png = _tiny_png()
    lt = LogTree("t")
    lt.conversation([{"role": "user", "content": [{"type": "image", "image": png},
                                                  {"type": "image", "image": None}]}])
    parts = _body(lt)[0]["data"]["messages"][0]["content"]
    assert parts == [{"type": "image",
                      "image": "data:image/png;base64," + base64.b64encode(png).decode()},
                     {"type": "image"}]


@pytest.mark.parametrize(
    ("messages", "pointer", "fragment"),
    [
        ([{"content": "x"}], "/messages/0", '"role" is a required property'),
        ([{"role": "u", "content": 3}], "/messages/0/content", "3 is not valid under any"),
        ([{"role": "u"}], "/messages/0", '"content" is a required property'),
        ([{"role": "u", "content": "a"}, {"role": "u", "content": [{"type": "audio"}]}],
         "/messages/1/content/0", "is not valid under any of the options of 'anyOf'"),
        ([{"role": "u", "content": [{"type": "text", "text": 1}]}],
         "/messages/0/content/0/text", '1 is not of type "string"'),
        ([{"role": "u", "content": [{"type": "thinking"}]}],
         "/messages/0/content/0", '"thinking" is a required property'),
        ([{"role": "u", "content": [{"type": "image", "image": b"not an image"}]}],
         "/messages/0/content/0/image", "cannot be written as JSON"),
        ([{"role": "u", "content": "", "tool_calls": [{"type": "other", "function": {}}]}],
         "/messages/0/tool_calls/0/type", '"function" was expected'),
        ([{"role": "u", "content": "", "tool_calls": [{"function": {"name": "f"}}]}],
         "/messages/0/tool_calls/0/function", '"arguments" is a required property'),
        ([{"role": "u", "content": "", "tool_calls": [{"id": 5, "function": {}}]}],
         "/messages/0/tool_calls/0/id", '5 is not of types "null", "string"'),
        ([{"role": "u", "content": "", "unparsed_tool_calls": [{"raw_text": "x"}]}],
         "/messages/0/unparsed_tool_calls/0", '"error" is a required property'),
        ([{"role": "u", "content": "", "trainable": "yes"}], "/messages/0/trainable",
         'is not of type "boolean"'),
        ([{"role": "u", "content": "", "name": 3}], "/messages/0/name", 'is not of type "string"'),
        ([{"role": "u", "content": "", "meta": {"x": object()}}], "/messages/0/meta/x",
         "cannot be written as JSON"),
        ([{"role": "u", "content": "", "meta": {1: "x"}}], "/messages/0/meta",
         "keys must be strings"),
        (["just text"], "/messages/0", "expected a mapping"),
    ],
)
def test_conversation_rejects_bad_messages_naming_index_and_pointer(
    messages: list[Any], pointer: str, fragment: str
) -> None:
    """A message breaking the logtree schema's message shape (docs/format.md §7) is a RecordError
    naming the index and jsonschema's pointer and reason."""
    lt = LogTree("t")
    with pytest.raises(RecordError) as info:
        lt.conversation(messages)
    assert info.value.pointer == pointer
    assert info.value.index == int(pointer.split("/")[2])
    assert fragment in str(info.value)
    assert f"conversation message {info.value.index}" in str(info.value)
    assert _body(lt) == []  # nothing half-logged


@pytest.mark.parametrize("bad", [{"role": "user", "content": "x"}, "text", 3])
def test_conversation_needs_a_sequence_of_messages(bad: Any) -> None:
    """A single message, a string or a scalar instead of a list is a TypeError."""
    with pytest.raises(TypeError, match="sequence of messages"):
        LogTree("t").conversation(bad)


# --- the whole document -------------------------------------------------------------------------


def _full_tree() -> LogTree:
    lt = LogTree("RL Iteration 7")
    with lt.section("Group Rollout"):
        lt.text("two trajectories")
        with lt.section("Trajectory 0 Episode"):
            lt.conversation([{"role": "user", "content": "q"},
                             {"role": "assistant", "content": "a"}])
            lt.table({"reward": 1.0, "ok": True}, caption="Step stats")
            lt.table([{"turn": 0, "reward": math.nan}])
        lt.details("raw", summary="tokens")
        lt.html("<em>raw</em>")
        try:
            raise RuntimeError("x")
        except RuntimeError as exc:
            lt.exception(exc)
    return lt


def test_full_document_validates_and_reads_back_equal() -> None:
    """A tree using every verb validates against the schema and round-trips through JSON bytes."""
    lt = _full_tree()
    doc = lt.to_json(path="train_iteration_000007.html")
    _valid(doc)
    assert orjson.loads(lt.to_json_bytes(path="train_iteration_000007.html")) == doc


def test_every_node_has_string_attrs_and_data_only_without_string_children() -> None:
    """Every node has string attribute values; a node with data has no string children."""
    work = [_full_tree().to_json()["root"]]
    while work:
        node = work.pop()
        assert all(isinstance(v, str) for v in node["attrs"].values())
        if "data" in node:
            assert not any(isinstance(c, str) for c in node["children"])
        work.extend(c for c in node["children"] if isinstance(c, dict))


def test_deep_tree_renders_and_reads_back_without_recursion_errors() -> None:
    """A 300-deep tree renders to HTML and to JSON that orjson and json both read back."""
    lt = LogTree("deep")
    with contextlib.ExitStack() as stack:
        for depth in range(300):
            stack.enter_context(lt.section(f"s{depth}"))
            lt.text(f"t{depth}")
    page = lt.to_html()
    assert page.count("<section") == page.count("</section>") == 300
    raw = lt.to_json_bytes()
    assert orjson.loads(raw) == json.loads(raw) == lt.to_json()


def test_very_deep_tree_stays_readable() -> None:
    """2,000 nested sections still give JSON that Python's json reads (depth is capped)."""
    lt = LogTree("deeper")
    with contextlib.ExitStack() as stack:
        for depth in range(2000):
            stack.enter_context(lt.section(f"s{depth}"))
    assert lt.to_html().count("</section>") == 2000
    assert json.loads(lt.to_json_bytes()) == lt.to_json()


@pytest.mark.parametrize(
    "value",
    [[], {}, [[]], {"a": [1, {}, {"b": None}], "c": "x\u2028<"}, [1, [2.5, [True, []]], "é"],
     "s", 3],
)
def test_dumps_compact_matches_orjson(value: Any) -> None:
    """The depth-safe encoder writes exactly what orjson writes for shallow values."""
    assert dumps_compact(value) == orjson.dumps(value)


def test_dumps_indented_falls_back_to_compact_beyond_orjson_depth() -> None:
    """A value deeper than orjson serializes is still written, compactly, and reads back."""
    deep: Any = "leaf"
    for _ in range(400):
        deep = {"k": [deep]}
    raw = dumps_indented(deep)
    assert b"\n" not in raw
    assert orjson.loads(raw) == deep
