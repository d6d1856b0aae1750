"""Random logtrees: JSON validates against the schema and reads back equal; the HTML is inert."""

from __future__ import annotations

import contextlib
import html
import json
from html.parser import HTMLParser
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import schema
from rlio.logtree import LogTree

MARKUP = "<>&\"'/=`!- \n\t"
HOSTILE = st.sampled_from([
    "<script>alert(1)</script>", "</script><script>x</script>", "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">x</a>', "]]>", "<!--", "&amp;", "\u2028", "\x00",
])
TEXT = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(MARKUP), max_size=40),
    st.lists(HOSTILE | st.text(max_size=5), max_size=4).map("".join),
)
SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False), TEXT,
)

PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": TEXT}),
    st.fixed_dictionaries({"type": st.just("image")}, optional={"image": TEXT}),
)
TOOL_CALL = st.fixed_dictionaries({
    "type": st.just("function"),
    "id": st.none() | TEXT,
    "function": st.fixed_dictionaries({
        "name": TEXT,
        "arguments": TEXT | st.dictionaries(TEXT, SCALAR, max_size=3).map(
            lambda d: json.dumps(d, ensure_ascii=False)),
    }),
})
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool"]) | TEXT,
     "content": TEXT | st.lists(PART, max_size=3)},
    optional={
        "tool_calls": st.lists(TOOL_CALL, max_size=2),
        "unparsed_tool_calls": st.lists(
            st.fixed_dictionaries({"raw_text": TEXT, "error": TEXT}), max_size=2),
        "trainable": st.booleans(),
        "tool_call_id": TEXT,
        "name": TEXT,
    },
)
ROW = st.dictionaries(TEXT, SCALAR, max_size=4)


LEAF_OP = st.one_of(
    st.tuples(st.just("text"), TEXT),
    st.tuples(st.just("details"), TEXT, TEXT),
    st.tuples(st.just("table"), ROW, st.none() | TEXT),
    st.tuples(st.just("records"), st.lists(ROW, max_size=3), st.none() | TEXT),
    st.tuples(st.just("rows"), st.lists(st.lists(SCALAR, min_size=2, max_size=2), max_size=3),
              st.lists(TEXT, min_size=2, max_size=2)),
    st.tuples(st.just("conversation"), st.lists(MESSAGE, max_size=4)),
)
#: A program: verbs to apply in order; ("section", title, program) nests.
PROGRAM: st.SearchStrategy[list[Any]] = st.deferred(
    lambda: st.lists(LEAF_OP | st.tuples(st.just("section"), TEXT, PROGRAM), max_size=4)
)


def _run(lt: LogTree, program: list[Any]) -> None:
    for op in program:
        kind = op[0]
        if kind == "text":
            lt.text(op[1])
        elif kind == "details":
            lt.details(op[1], summary=op[2])
        elif kind in ("table", "records"):
            lt.table(op[1], caption=op[2])
        elif kind == "rows":
            lt.table(op[1], header=op[2])
        elif kind == "conversation":
            lt.conversation(op[1])
        else:
            with lt.section(op[1]):
                _run(lt, op[2])


def _walk(program: list[Any]) -> list[Any]:
    flat = []
    for op in program:
        flat.append(op)
        if op[0] == "section":
            flat.extend(_walk(op[2]))
    return flat


class _Balance(HTMLParser):
    VOID = frozenset({"meta", "img", "br", "hr", "input", "link"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[str] = []
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.bad.extend(k for k, _ in attrs if k.startswith("on") or k in ("href", "src"))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.bad.append(f"</{tag}>")


@settings(max_examples=100)
@given(title=TEXT, program=PROGRAM)
def test_random_logtree_json_validates_and_reads_back_equal(title: str, program: list[Any]) -> None:
    """Any tree of verbs renders JSON that is schema-valid and parses back to the same document."""
    lt = LogTree(title)
    _run(lt, program)
    doc = lt.to_json(path="iteration_000000/train.html")
    assert schema.record_schema("logtree").passes(doc), schema.record_schema("logtree").explain(doc)
    raw = lt.to_json_bytes(path="iteration_000000/train.html")
    assert orjson.loads(raw) == doc
    assert json.loads(raw) == doc
    flat = _walk(program)
    messages = [m for op in flat if op[0] == "conversation" for m in op[1]]
    logged = []
    work = [doc["root"]]
    while work:
        node = work.pop(0)
        if "data" in node:
            logged.extend(node["data"]["messages"])
        work[:0] = [c for c in node["children"] if isinstance(c, dict)]
    assert logged == messages


@settings(max_examples=100)
@given(title=TEXT, program=PROGRAM)
def test_random_logtree_html_is_balanced_and_inert(title: str, program: list[Any]) -> None:
    """Any tree's page has balanced tags, no script or handler, and every text escaped."""
    lt = LogTree(title)
    _run(lt, program)
    page = lt.to_html()
    parser = _Balance()
    parser.feed(page)
    parser.close()
    assert parser.stack == [] and parser.bad == []
    assert "script" not in parser.tags and "a" not in parser.tags
    flat = _walk(program)
    assert parser.tags.count("section") == sum(op[0] == "section" for op in flat)
    for op in flat:
        if op[0] in ("text", "section"):
            assert html.escape(op[1]) in page


@settings(max_examples=25)
@given(titles=st.lists(TEXT, max_size=60), leaf=LEAF_OP)
def test_random_deep_chains_validate_and_read_back(titles: list[str], leaf: Any) -> None:
    """A chain of nested sections of any depth up to 60, ending in any verb, round-trips."""
    lt = LogTree("chain")
    with contextlib.ExitStack() as stack:
        for title in titles:
            stack.enter_context(lt.section(title))
            lt.text(title)
        _run(lt, [leaf])
    doc = lt.to_json()
    assert schema.record_schema("logtree").passes(doc), schema.record_schema("logtree").explain(doc)
    assert orjson.loads(lt.to_json_bytes()) == doc
    page = lt.to_html()
    assert page.count("<section") == page.count("</section>") == len(titles)
