"""The HTML twin of a logtree: one self-contained page (inline CSS, no script, no network).

``tree_events`` turns the tree of any logtree JSON (docs/format.md §7), rlio's or the cookbook's,
into drawing steps the templates (``rlio/templates``) draw, and ``render_logtree_page`` renders
the page. The walk is iterative (a tree thousands of levels deep
renders without recursion) and defensive: tag and attribute names are checked, event handlers and
script URLs are dropped, markup strings go through an allow-list sanitizer (nh3), and a strict
Content-Security-Policy forbids script and every network request, so even raw HTML a producer
opted into cannot phone home. Model text is escaped by the
builder (tree strings) and by the templates (conversation payloads).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from rlio import layout
from rlio.logtree.conversation import conversation_view, is_safe_image_uri
from rlio.logtree.sanitize import sanitize_fragment
from rlio.templating import render

#: The page needs no script and loads nothing: only inline styles and data: images are allowed.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)

_SAFE_TAG = re.compile(r"[A-Za-z][A-Za-z0-9-]*\Z")
_SAFE_ATTR = re.compile(r"[A-Za-z_:][-A-Za-z0-9_:.]*\Z")
#: Elements a tree node may not become: they run code, load things or change the page's rules.
_BLOCKED_TAGS = frozenset({
    "applet", "base", "embed", "form", "frame", "frameset", "iframe", "link", "meta", "noscript",
    "object", "portal", "script", "style", "template", "html", "head", "body",
})
_VOID_TAGS = frozenset({"area", "br", "col", "hr", "img", "input", "source", "track", "wbr"})
_URL_ATTRS = frozenset({
    "href", "src", "srcset", "action", "formaction", "xlink:href", "poster", "background", "data",
    "ping", "cite", "longdesc", "manifest", "codebase",
})
#: Newline after these closing tags keeps the source readable without touching text layout.
_BLOCK_TAGS = frozenset({
    "section", "div", "p", "table", "thead", "tbody", "tr", "details", "pre", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "summary", "caption", "figure", "header", "footer",
})
_CONTROL = re.compile(r"[\x00-\x20]+")


def _safe_tag(tag: Any, *, root: bool = False) -> str:
    if not isinstance(tag, str) or not _SAFE_TAG.match(tag):
        return "div"
    tag = tag.lower()
    if root and tag == "body":
        return "body"
    return "div" if tag in _BLOCKED_TAGS else tag


def _attrs(attrs: Any, tag: str) -> list[tuple[str, str]]:
    """The attributes a node keeps: checked names, no handlers, no URL with a scheme (but a
    safe ``data:image`` source); values stay plain (the template escapes them)."""
    if not isinstance(attrs, Mapping) or not attrs:
        return []
    out = []
    for name, value in attrs.items():
        if not isinstance(name, str) or not _SAFE_ATTR.match(name):
            continue
        lname = name.lower()
        if lname.startswith("on") or lname in ("srcdoc", "http-equiv"):
            continue
        text = value if isinstance(value, str) else str(value)
        if lname in _URL_ATTRS:
            probe = _CONTROL.sub("", text).lower()
            if ":" in probe.split("/", 1)[0] and not (
                tag == "img" and lname == "src" and is_safe_image_uri(text)
            ):
                continue  # javascript:, data:, http: ... anything with a scheme
        out.append((name, text))
    return out


def _data_event(data: Mapping[str, Any]) -> Event:
    if data.get("type") == "conversation":
        return ("conversation", conversation_view(data))
    try:
        dumped = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        dumped = repr(data)
    return ("data", str(data.get("type")), dumped)


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """A collapsed group's summary line: its size, mean and spread of total rewards, whether
    they are all equal, and how many trajectories fail (``size`` None: no rollout rows)."""

    group: int
    size: int | None = None
    mean: float | None = None
    spread: float | None = None
    all_equal: bool = False
    failing: int = 0


@dataclass(frozen=True, slots=True)
class Mark:
    """How to draw one node differently: give it an ``id`` (a link target), and/or draw a section
    as a collapsible ``<details>`` whose summary is its heading plus ``summary``."""

    id: str | None = None
    collapsible: bool = False
    summary: GroupSummary | None = None
    open: bool = False


#: One drawing step of a tree: ("open", tag, id, attrs), ("close", tag, newline), ("markup",
#: sanitized html), ("text", plain), ("prelude",), ("group", id, open), ("summary", stats),
#: ("conversation", view), ("data", type, json text).
Event = tuple[Any, ...]


def tree_events(root: Any, *, marks: Mapping[int, Mark] | None = None) -> list[Event]:
    """The drawing steps of one tree (iterative, any depth), ``<body>`` first.

    The root draws as ``<body>`` (it is one in every producer's tree); strings among children
    are HTML already (escaped text or raw markup) and pass through the sanitizer: escaped text
    comes out unchanged, raw markup keeps only what ``rlio.logtree.sanitize`` allows. A
    ``("prelude",)`` step right after ``<body>`` is where a page puts its header; ``marks``
    maps ``id(node)`` to how that node is drawn.
    """
    out: list[Event] = []
    if not isinstance(root, Mapping) or root.get("tag") != "body":
        out += [("open", "body", None, [("class", "lt-root")]), ("markup", "\n"), ("prelude",)]
        _events_into(root, out, root_is_body=False, marks=marks or {})
        out.append(("close", "body", True))
    else:
        _events_into(root, out, root_is_body=True, marks=marks or {})
    return out


def _child(c: Any) -> Any:
    return ("markup", sanitize_fragment(c)) if isinstance(c, str) else c


def _events_into(root: Any, out: list[Event], *, root_is_body: bool,
                 marks: Mapping[int, Mark]) -> None:
    # Work items: a node to open, or an event to emit as is (a closing tag, an HTML child).
    stack: list[Any] = [root]
    first = root_is_body
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            out.append(item)
            continue
        if not isinstance(item, Mapping):
            out.append(("text", str(item)))
            continue
        is_root = first
        tag = _safe_tag(item.get("tag"), root=first)
        first = False
        mark = marks.get(id(item))
        attrs = item.get("attrs")
        children = item.get("children")
        kids = children if isinstance(children, list) else []
        if mark is not None and mark.collapsible and kids and isinstance(kids[0], Mapping):
            out.append(("group", mark.id, mark.open))
            stack.append(("close", "details", True))
            stack.extend(_child(c) for c in reversed(kids[1:]))
            stack.append(("summary", mark.summary))
            stack.append(kids[0])
            continue
        if mark is not None and mark.id and isinstance(attrs, Mapping):
            attrs = {k: v for k, v in attrs.items() if str(k).lower() != "id"}
        out.append(("open", tag, mark.id if mark is not None else None, _attrs(attrs, tag)))
        if is_root:
            out.append(("prelude",))
        if tag in _VOID_TAGS:
            continue
        data = item.get("data")
        if isinstance(data, Mapping):
            out.append(_data_event(data))
        stack.append(("close", tag, tag in _BLOCK_TAGS or tag == "body"))
        if kids:
            stack.extend(_child(c) for c in reversed(kids))


def page_context(title: str, *, write_id: str | None = None) -> dict[str, Any]:
    """What every logtree and iteration page's head needs (``_base.html.j2``)."""
    return {"title": title, "csp": CSP, "css": PAGE_CSS, "generator": "rlio",
            "write_id": write_id, "write_id_meta": layout.WRITE_ID_META}


def render_logtree_page(title: str, root: Any, *, write_id: str | None = None) -> str:
    """The complete self-contained page of a tree (no header)."""
    return render("logtree.html.j2", events=tree_events(root), **page_context(
        title, write_id=write_id))


PAGE_CSS = """
:root{--bg:#f5f6f8;--card:#fff;--fg:#1f2328;--muted:#5b6470;--border:#d5dbe2;--accent:#0b5cad;
--code:#f3f5f7;--th:#e9eef5;--zebra:#f8fafc;
--user:#0969da;--user-bg:#eef6ff;--assistant:#1a7f37;--assistant-bg:#effaf1;
--system:#9a6700;--system-bg:#fff8e1;--tool:#8250df;--tool-bg:#f7f1ff;--other:#57606a;
--other-bg:#f4f5f7;--exc:#cf222e;--exc-bg:#fff0ef;--think-bg:#f6f7f9}
@media (prefers-color-scheme:dark){:root{--bg:#0f1115;--card:#171a21;--fg:#e6e9ee;
--muted:#9aa4b1;--border:#333a45;--accent:#6cb6ff;--code:#1f242d;--th:#222934;--zebra:#1b2029;
--user:#58a6ff;--user-bg:#132235;--assistant:#56d364;--assistant-bg:#14261a;--system:#e3b341;
--system-bg:#2a2312;--tool:#bc8cff;--tool-bg:#221a33;--other:#9aa4b1;--other-bg:#1d222a;
--exc:#ff7b72;--exc-bg:#2d1517;--think-bg:#1b1f27}}
*{box-sizing:border-box}
html{background:var(--bg);color:var(--fg)}
body{font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
max-width:1100px;margin:0 auto;padding:24px;background:var(--bg);color:var(--fg)}
body.lt-root>*{max-width:100%}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
font-size:13px}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.4em 0}
h1,h2,h3,h4,h5,h6{line-height:1.25;margin:.6em 0 .4em}
h2{font-size:1.4em}h3{font-size:1.2em}h4{font-size:1.08em}h5{font-size:1em}h6{font-size:.95em}
.lt-title{font-size:1.7em;margin:0 0 .2em;color:var(--accent)}
.lt-subtitle{color:var(--muted);font-size:.85em;margin-bottom:1.2em}
.lt-section{margin:1em 0;padding:.2em 0 .2em 1em;border-left:3px solid var(--border)}
.lt-section>h2,.lt-section>h3,.lt-section>h4,.lt-section>h5,.lt-section>h6{color:var(--accent)}
body.lt-root>.lt-section{background:var(--card);border:1px solid var(--border);
border-radius:10px;padding:.6em 1.2em;border-left:4px solid var(--accent)}
.lt-p{margin:.4em 0;white-space:pre-wrap;overflow-wrap:anywhere}
.lt-details,.lt-data{margin:.5em 0;border:1px solid var(--border);border-radius:6px;
padding:.3em .7em;background:var(--card)}
.lt-details>summary,.lt-data>summary{cursor:pointer;font-weight:600}
.lt-details-body{background:var(--code);padding:.5em;border-radius:4px}
.lt-html{margin:.4em 0}
.lt-table{border-collapse:collapse;margin:.6em 0;font-size:.9em;background:var(--card);
display:block;overflow-x:auto;max-width:100%}
.lt-table caption{text-align:left;font-weight:600;padding:.2em 0;color:var(--fg)}
.lt-table th,.lt-table td{border:1px solid var(--border);padding:.25em .6em;text-align:left;
vertical-align:top;overflow-wrap:break-word}.lt-table th{white-space:nowrap}
.lt-table th{background:var(--th)}
.lt-table tbody tr:nth-child(even){background:var(--zebra)}
.lt-table td.num{text-align:right;font-variant-numeric:tabular-nums}
.lt-exc{border:1px solid var(--exc);background:var(--exc-bg);border-radius:6px;
padding:.4em .8em;margin:.6em 0}
.lt-exc>summary{color:var(--exc);font-weight:700;cursor:pointer}
.conversation{display:flex;flex-direction:column;gap:.5em;margin:.6em 0}
.msg{--c:var(--other);--cb:var(--other-bg);border:1px solid var(--border);
border-left:4px solid var(--c);background:var(--cb);border-radius:8px;padding:.4em .8em}
.msg[data-role="user"]{--c:var(--user);--cb:var(--user-bg)}
.msg[data-role="assistant"]{--c:var(--assistant);--cb:var(--assistant-bg)}
.msg[data-role="system"],.msg[data-role="developer"]{--c:var(--system);--cb:var(--system-bg)}
.msg[data-role="tool"],.msg[data-role="ipython"]{--c:var(--tool);--cb:var(--tool-bg)}
.msg-head{display:flex;flex-wrap:wrap;gap:.5em;align-items:baseline;font-size:.82em;
margin-bottom:.2em}
.msg-role{font-weight:700;color:var(--c);text-transform:uppercase;letter-spacing:.04em}
.msg-name,.msg-tool-call-id{color:var(--muted)}
.msg-badge{border:1px solid var(--c);color:var(--c);border-radius:999px;padding:0 .5em;
font-size:.9em}
.msg-badge.off{border-color:var(--border);color:var(--muted)}
.msg-text{white-space:pre-wrap;overflow-wrap:anywhere}
.msg-empty,.msg-image-ref{color:var(--muted);font-style:italic}
.msg-thinking{margin:.3em 0;background:var(--think-bg);border:1px dashed var(--border);
border-radius:6px;padding:.2em .6em}
.msg-thinking>summary{cursor:pointer;color:var(--muted);font-size:.85em}
.msg-thinking-body{white-space:pre-wrap;overflow-wrap:anywhere;color:var(--muted);
padding:.3em 0}
.msg-image{margin:.4em 0}
.msg-image img{max-width:100%;max-height:480px;border:1px solid var(--border);border-radius:4px}
.tool-calls{margin:.4em 0;display:flex;flex-direction:column;gap:.3em}
.tool-call{border:1px solid var(--border);border-radius:6px;background:var(--card);
padding:.3em .6em}
.tool-call.unparsed{border-color:var(--exc)}
.tool-call-head{font-size:.85em}
.tool-call-label{color:var(--muted);text-transform:uppercase;font-size:.85em;
letter-spacing:.04em}
.tool-call-name{font-weight:700;color:var(--tool)}
.tool-call-id{color:var(--muted)}
.tool-call-error{color:var(--exc)}
.tool-call-args{background:var(--code);padding:.4em;border-radius:4px;margin:.3em 0 .1em}
.it-header{margin:0 0 1em}
.it-nav{display:flex;flex-wrap:wrap;gap:.4em .9em;align-items:baseline;padding:.5em .8em;
background:var(--card);border:1px solid var(--border);border-radius:8px;font-size:.9em}
.it-nav a{color:var(--accent)}.it-nav .off{color:var(--muted)}
.nav-splits{display:flex;flex-wrap:wrap;gap:.3em .6em}
.nav-split.here{font-weight:700}
.it-note{color:var(--muted);font-size:.85em}
.it-trajs h2{font-size:1.15em}.it-trajs .count{color:var(--muted);font-weight:400}
.it-scroll{overflow:auto;max-height:60vh;max-width:100%;border:1px solid var(--border);
border-radius:8px;background:var(--card)}
.traj-table,.group-table{border-collapse:collapse;width:100%;font-size:.85em}
.traj-table th,.group-table th{position:sticky;top:0;background:var(--th);text-align:left}
.traj-table th,.traj-table td,.group-table th,.group-table td{padding:.2em .5em;
border-bottom:1px solid var(--border);white-space:nowrap}
.traj-table td.num,.group-table td.num{text-align:right;font-variant-numeric:tabular-nums}
.traj-table tr.fail{background:var(--exc-bg)}
.traj-table tr.fail td{color:var(--exc)}
.fail-mark{color:var(--exc);font-weight:700}
.it-none{color:var(--muted)}
.lt-group{margin:1em 0;background:var(--card);border:1px solid var(--border);border-radius:10px;
padding:.4em 1em;border-left:4px solid var(--accent)}
.lt-group>summary{cursor:pointer}
.lt-group>summary>h2,.lt-group>summary>h3{display:inline;margin:0;font-size:1.15em;
color:var(--accent)}
.lt-group-stats{color:var(--muted);font-size:.9em}
:target{outline:2px solid var(--accent);outline-offset:2px}
@media print{
:root{--bg:#fff;--card:#fff;--fg:#000;--muted:#444;--border:#bbb;--code:#f4f4f4;
--think-bg:#fafafa;--zebra:#fafafa}
body{max-width:none;padding:0;font-size:11pt}
.msg-head,.tool-call,.lt-table tr,h2,h3,h4,h5,h6{break-inside:avoid}
h2,h3,h4,h5,h6{break-after:avoid}
.lt-table{display:table}
details::details-content{content-visibility:visible;block-size:auto}
}
"""
