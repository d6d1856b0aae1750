"""The logtree's HTML page: self-contained, well-formed, and no model text ever becomes markup."""

from __future__ import annotations

import base64
import html
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from rlio.logtree import LogTree
from rlio.logtree.html import CSP, render_logtree_page

_VOID = {"area", "br", "col", "hr", "img", "input", "source", "track", "wbr", "meta", "link"}
PNG_URI = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()

HOSTILE = [
    "<script>alert(1)</script>",
    "</script><script>alert(2)</script>",
    "<img src=x onerror=alert(3)>",
    '<a href="javascript:alert(4)">click</a>',
    "\"'><svg onload=alert(5)>",
    "</div></div></section></body><h1>spoof</h1>",
    "<!-- comment --> <![CDATA[x]]> &amp; &lt;",
]


class Page(HTMLParser):
    """Collects start tags with attributes, text, and whether end tags balance."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def of(self, tag: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag]


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def assert_well_formed(page: str) -> Page:
    parsed = parse(page)
    assert parsed.errors == []
    assert parsed.stack == []
    return parsed


def assert_inert(parsed: Page, *, allowed_imgs: int = 0) -> None:
    """No script, no handlers, no links, no embedded comments: nothing hostile became markup."""
    tags = {t for t, _ in parsed.tags}
    assert not tags & {"script", "a", "svg", "iframe", "object", "embed"}
    for _, attrs in parsed.tags:
        assert not [k for k in attrs if k.startswith("on")]
        for key in ("href", "src"):
            assert attrs.get(key) is None or str(attrs[key]).startswith("data:image/png;base64,")
    assert len(parsed.of("img")) == allowed_imgs
    assert parsed.comments == []
    assert len(parsed.of("h1")) == 1


def _everything(hostile: str) -> LogTree:
    """A tree with ``hostile`` in every place model or user text can appear."""
    lt = LogTree(hostile)
    with lt.section(hostile):
        lt.text(hostile)
        lt.details(hostile, summary=hostile)
        lt.table({hostile: hostile}, caption=hostile)
        lt.table([{hostile: hostile}], caption=hostile)
        lt.table([[hostile]], header=[hostile])
        lt.conversation([
            {"role": hostile, "content": hostile, "name": hostile, "tool_call_id": hostile},
            {"role": "assistant",
             "content": [{"type": "thinking", "thinking": hostile},
                         {"type": "text", "text": hostile},
                         {"type": "image", "image": hostile}],
             "tool_calls": [{"type": "function", "id": hostile,
                             "function": {"name": hostile, "arguments": hostile}},
                            {"type": "function", "id": "c2",
                             "function": {"name": "f", "arguments": f'{{"q": "{hostile}"}}'
                                          if '"' not in hostile else "{}"}}],
             "unparsed_tool_calls": [{"raw_text": hostile, "error": hostile}]},
        ])
        try:
            raise ValueError(hostile)
        except ValueError as exc:
            lt.exception(exc)
    return lt


# --- the page ---------------------------------------------------------------------------------


def test_page_is_a_complete_self_contained_document() -> None:
    """The page starts with a doctype, ends with </html>, and declares UTF-8 and a strict CSP."""
    page = LogTree("t").to_html()
    assert page.startswith("<!doctype html>\n")
    assert page.endswith("</html>\n")
    parsed = assert_well_formed(page)
    metas = parsed.of("meta")
    assert {"charset": "utf-8"} in metas
    assert {"http-equiv": "Content-Security-Policy", "content": CSP} in metas
    assert "default-src 'none'" in CSP and "img-src data:" in CSP and "script" not in CSP
    assert [t for t, _ in parsed.tags][:2] == ["html", "head"]
    assert len(parsed.of("body")) == 1 and len(parsed.of("style")) == 1


def test_page_loads_nothing_and_runs_nothing() -> None:
    """No script, no stylesheet link, no URL anywhere in the page's CSS or attributes."""
    page = _everything("x").to_html()
    parsed = assert_well_formed(page)
    assert not parsed.of("script") and not parsed.of("link")
    assert "url(" not in page and "@import" not in page
    assert not re.search(r"(?i)\b(?:src|href)\s*=\s*[\"']?(?:https?:|//)", page)


def test_page_css_covers_dark_mode_and_print() -> None:
    """The stylesheet adapts to prefers-color-scheme: dark and has print rules."""
    page = LogTree("t").to_html()
    assert "@media (prefers-color-scheme:dark)" in page
    assert "@media print" in page
    assert '<meta name="color-scheme" content="light dark">' in page


def test_title_is_escaped_in_the_head_and_the_heading() -> None:
    """The document title appears escaped in <title> and <h1>."""
    page = LogTree("a </title><script>x</script>").to_html()
    assert "<title>a &lt;/title&gt;&lt;script&gt;x&lt;/script&gt;</title>" in page
    assert '<h1 class="lt-title">a &lt;/title&gt;' in page


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_text_is_inert_everywhere(hostile: str) -> None:
    """Hostile text in every field renders as text: no script, handler, link or image appears."""
    lt = _everything(hostile)
    parsed = assert_well_formed(lt.to_html())
    assert_inert(parsed)
    visible = "".join(parsed.text)
    assert visible.count(hostile) >= 15


def test_every_place_model_text_appears_is_escaped_in_the_page() -> None:
    """Each field's text appears escaped: content, thinking, tool names, args, cells, roles."""
    marker = "<m&'\">"
    # the templates escape quotes as numeric references (&#39; &#34;), the builder as html does
    page = _everything(marker).to_html().replace("&#39;", "&#x27;").replace("&#34;", "&quot;")
    assert page.count(html.escape(marker)) >= 20
    assert f'data-role="{html.escape(marker)}"' in page
    assert marker not in page


def test_raw_html_is_the_only_unescaped_path() -> None:
    """html() inserts its markup as is, while text() of the same string is escaped."""
    lt = LogTree("t")
    lt.html("<b>raw</b>")
    lt.text("<b>raw</b>")
    parsed = assert_well_formed(lt.to_html())
    assert len(parsed.of("b")) == 1
    assert "&lt;b&gt;raw&lt;/b&gt;" in lt.to_html()


# --- conversations ---------------------------------------------------------------------------


def _conversation_page(messages: list[dict[str, Any]]) -> Page:
    lt = LogTree("t")
    lt.conversation(messages)
    return assert_well_formed(lt.to_html())


def test_every_message_is_a_div_with_its_role_inside_a_conversation() -> None:
    """Each message renders as div.msg[data-role] in order inside div.conversation."""
    roles = ["system", "user", "assistant", "tool", "critic"]
    parsed = _conversation_page([{"role": r, "content": f"m{i}"} for i, r in enumerate(roles)])
    divs = parsed.of("div")
    assert sum(1 for a in divs if a.get("class") == "conversation") == 1
    msgs = [a for a in divs if a.get("class") == "msg"]
    assert [a["data-role"] for a in msgs] == roles
    assert [a["data-index"] for a in msgs] == ["0", "1", "2", "3", "4"]
    visible = "".join(parsed.text)
    assert all(f"m{i}" in visible for i in range(5))


def test_thinking_is_collapsed_by_default() -> None:
    """A thinking part is a details element without open, its summary naming its size."""
    parsed = _conversation_page([{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "secret plan"}, {"type": "text", "text": "answer"}]}])
    (thinking,) = [a for a in parsed.of("details") if a.get("class") == "msg-thinking"]
    assert "open" not in thinking
    assert "Thinking (11 chars)" in "".join(parsed.text)


def test_tool_call_arguments_are_pretty_printed_when_they_are_json() -> None:
    """JSON-encoded arguments show indented; anything else shows verbatim, escaped."""
    lt = LogTree("t")
    lt.conversation([{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "id": "c1",
         "function": {"name": "search", "arguments": '{"q": "<b>", "n": 2}'}},
        {"type": "function", "id": "c2", "function": {"name": "raw", "arguments": "not {json"}},
    ]}])
    page = lt.to_html()
    assert '{\n  &#34;q&#34;: &#34;&lt;b&gt;&#34;,\n  &#34;n&#34;: 2\n}' in page
    assert '<pre class="tool-call-args">not {json</pre>' in page
    assert '<code class="tool-call-name">search</code>' in page
    assert '<span class="tool-call-id">c1</span>' in page
    assert '<div class="msg-empty">' not in page  # a tool-only turn is not "(empty)"


def test_unparsed_tool_calls_show_raw_text_and_error() -> None:
    """An unparsed tool call shows its error and raw text."""
    raw = [{"raw_text": "<call>{", "error": "bad"}]
    parsed = _conversation_page([{"role": "assistant", "content": "x", "unparsed_tool_calls": raw}])
    visible = "".join(parsed.text)
    assert "<call>{" in visible and "bad" in visible


def test_message_badges_and_reply_reference() -> None:
    """trainable, name and tool_call_id appear in the message head."""
    page = _conversation_page([
        {"role": "assistant", "content": "a", "trainable": True},
        {"role": "assistant", "content": "b", "trainable": False},
        {"role": "tool", "content": "c", "tool_call_id": "call_9", "name": "calc"},
    ])
    visible = "".join(page.text)
    assert "trainable" in visible and "not trainable" in visible
    assert "reply to call_9" in visible and "calc" in visible


@pytest.mark.parametrize(
    ("image", "is_img"),
    [
        (PNG_URI, True),
        ("data:image/jpeg;base64,/9j/4AAQ", True),
        ("DATA:IMAGE/GIF;BASE64,R0lGOD==", True),
        ("data:image/svg+xml;base64,PHN2Zz4=", False),
        ("data:image/svg+xml,<svg onload=alert(1)>", False),
        ("data:text/html;base64,PHNjcmlwdD4=", False),
        ("data:image/png;base64,AAAA\" onerror=\"alert(1)", False),
        ("https://example.invalid/cat.png", False),
        ("//example.invalid/cat.png", False),
        ("javascript:alert(1)", False),
        (" javascript:alert(1)", False),
        ("file:///etc/passwd", False),
    ],
)
def test_only_base64_raster_data_uris_become_images(image: str, is_img: bool) -> None:
    """Only data:image/<raster>;base64 URIs render as <img>; every other URI is shown as text."""
    parsed = _conversation_page([{"role": "user", "content": [{"type": "image", "image": image}]}])
    imgs = parsed.of("img")
    if is_img:
        assert [i["src"] for i in imgs] == [image]
    else:
        assert imgs == []
        assert image in "".join(parsed.text)
    assert not parsed.of("script")


def test_image_part_without_an_image_says_so() -> None:
    """An image part with no image renders a placeholder, not a broken <img>."""
    parsed = _conversation_page([{"role": "user", "content": [{"type": "image"}]}])
    assert parsed.of("img") == []
    assert "(image not recorded)" in "".join(parsed.text)


def test_empty_content_is_marked() -> None:
    """A message with empty content shows a placeholder so it is visibly present."""
    parsed = _conversation_page([{"role": "user", "content": ""}, {"role": "user", "content": []}])
    visible = "".join(parsed.text)
    assert "(empty)" in visible and "(no content)" in visible


# --- rendering foreign documents ---------------------------------------------------------------


def test_foreign_document_tags_and_attributes_are_defused() -> None:
    """A foreign tree's script tags become divs; handlers and script or remote URLs are dropped."""
    doc = {"title": "cookbook", "started_at": "2025-01-01T00:00:00", "path": None, "root": {
        "tag": "body", "attrs": {"class": "lt-root", "onload": "x()"}, "children": [
            {"tag": "script", "attrs": {}, "children": ["alert(1)"]},
            {"tag": "a", "attrs": {"href": "javascript:alert(1)", "title": "t"}, "children": ["x"]},
            {"tag": "a", "attrs": {"href": " JaVa\tScript:alert(1)"}, "children": ["y"]},
            {"tag": "a", "attrs": {"href": "#anchor"}, "children": ["z"]},
            {"tag": "img", "attrs": {"src": "https://tracker.invalid/p.gif"}, "children": []},
            {"tag": "img", "attrs": {"src": PNG_URI}, "children": []},
            {"tag": "bad tag!", "attrs": {"bad name": "v", "ok": 3}, "children": ["w"]},
            {"tag": "iframe", "attrs": {"srcdoc": "<script>"}, "children": []},
        ]}}
    parsed = assert_well_formed(render_logtree_page("cookbook", doc["root"]))
    assert not parsed.of("script") and not parsed.of("iframe")
    assert parsed.of("body") == [{"class": "lt-root"}]
    assert parsed.of("a") == [{"title": "t"}, {}, {"href": "#anchor"}]
    assert parsed.of("img") == [{}, {"src": PNG_URI}]
    assert {"ok": "3"} in parsed.of("div")


def test_foreign_document_with_malformed_nodes_still_renders() -> None:
    """Missing keys, wrong types and non-node children render as text instead of crashing."""
    doc = {"title": 5, "root": {"tag": "body", "children": [
        {"attrs": "nope", "children": "nope"}, 42, None, "<i>raw</i>",
        {"tag": "div", "attrs": {}, "children": [], "data": {"type": "conversation",
                                                           "messages": [7, {"content": ["x"]}]}},
        {"tag": "div", "attrs": {}, "children": [], "data": {"type": "table", "rows": [[1]]}},
    ]}}
    parsed = assert_well_formed(render_logtree_page("malformed", doc["root"]))
    assert "42" in "".join(parsed.text)
    assert len(parsed.of("i")) == 1
    assert [a.get("data-role") for a in parsed.of("div") if a.get("class") == "msg"] == [
        "unknown", "null"]
    assert "data: table" in "".join(parsed.text)


def test_foreign_root_that_is_not_body_is_wrapped() -> None:
    """A root that is not a body is rendered inside one body."""
    page = render_logtree_page("x", {"tag": "div", "attrs": {}, "children": ["hi"]})
    parsed = assert_well_formed(page)
    assert len(parsed.of("body")) == 1


def test_rendering_a_very_deep_foreign_tree_does_not_recurse() -> None:
    """A 5,000-level tree renders iteratively with every level closed."""
    node: dict[str, Any] = {"tag": "div", "attrs": {}, "children": ["leaf"]}
    for _ in range(5000):
        node = {"tag": "div", "attrs": {}, "children": [node]}
    root = {"tag": "body", "attrs": {}, "children": [node]}
    page = render_logtree_page("deep", root)
    assert page.count("<div>") == page.count("</div>") == 5001
