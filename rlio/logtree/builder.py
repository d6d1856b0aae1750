"""The logtree builder: one iteration's trace as a tree, as JSON (docs/format.md §7) and HTML.

A ``LogTree`` holds nodes in the JSON shape itself (``{"tag", "attrs", "children", "data"?}``), so
``to_json`` is a copy and ``to_json_bytes`` a single orjson call. The insertion point lives in a
``ContextVar``: concurrent asyncio tasks (or threads) each inside their own ``section()`` append to
their own section and never interleave. Every string that can come from a model is escaped when it
enters the tree; ``html()`` is the one explicit way to add markup. Usable without a writer::

    lt = LogTree("RL Iteration 3")
    with lt.section("Group Rollout"):
        lt.conversation(messages)
        lt.table({"reward": 1.0}, caption="Reward components")
    doc, page = lt.to_json(), lt.to_html()
"""

from __future__ import annotations

import contextlib
import math
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from html import escape
from types import MappingProxyType
from typing import Any, Final

import orjson

from rlio._codec.jsonl import normalize_value
from rlio.logtree.conversation import normalize_messages
from rlio.logtree.html import render_logtree_page
from rlio.logtree.sanitize import sanitize_html

__all__ = ["MAX_SECTION_DEPTH", "LogTree"]

Node = dict[str, Any]

#: Sections nest at most this deep; deeper ones become siblings at this depth (still ``h6``), so
#: the JSON stays well inside what orjson (1,024 levels) and Python's ``json`` can read back.
MAX_SECTION_DEPTH: Final = 300

# One variable for every tree: {tree key -> stack of open sections}. Copied on write, so a task
# (which runs in a copy of its creator's context) sees its own stack and never another task's.
_OPEN_SECTIONS: ContextVar[Mapping[object, tuple[Node, ...]]] = ContextVar(
    "rlio_logtree_open_sections"
)
_NO_SECTIONS: Final[Mapping[object, tuple[Node, ...]]] = MappingProxyType({})


def _node(tag: str, attrs: dict[str, str] | None = None, children: list[Any] | None = None) -> Node:
    return {"tag": tag, "attrs": attrs or {}, "children": children if children is not None else []}


def _require_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__} {value!r:.60}")
    return value


class LogTree:
    """One iteration's trace: sections, text, tables, conversations, exceptions.

    Args:
        title: the document title (the page's ``<h1>`` and ``<title>``).
        started_at: when the iteration started; default now in UTC. A naive datetime is taken
            as local time and given its UTC offset.
    """

    def __init__(self, title: str, *, started_at: datetime | None = None) -> None:
        self._title = _require_str(title, "LogTree title")
        if started_at is None:
            started_at = datetime.now(UTC)
        elif started_at.tzinfo is None or started_at.utcoffset() is None:
            started_at = started_at.astimezone()
        self.started_at: datetime = started_at
        self._key = object()
        self.root: Node = _node("body", {"class": "lt-root"}, [
            _node("h1", {"class": "lt-title"}, [escape(title)]),
            _node("div", {"class": "lt-subtitle"},
                  [escape(f"Started {started_at.isoformat(timespec='seconds')}")]),
        ])

    @property
    def title(self) -> str:
        """The document title (fixed at construction: it is already in the tree)."""
        return self._title

    def __repr__(self) -> str:
        return f"LogTree({self._title!r}, started_at={self.started_at.isoformat()!r})"

    # --- where things go -----------------------------------------------------------------

    def _stack(self) -> tuple[Node, ...]:
        return _OPEN_SECTIONS.get(_NO_SECTIONS).get(self._key, ())

    def _append(self, node: Node) -> None:
        stack = self._stack()
        (stack[-1] if stack else self.root)["children"].append(node)

    @contextmanager
    def section(self, title: str) -> Iterator[None]:
        """Open a section: everything logged inside goes under its heading.

        Headings are ``h2`` at depth 1 down to ``h6`` (deeper stays ``h6``). The open section is
        tracked per asyncio task and per thread, so concurrent tasks each inside their own
        section never interleave their children.
        """
        _require_str(title, "section title")
        sections = _OPEN_SECTIONS.get(_NO_SECTIONS)
        stack = sections.get(self._key, ())
        level = min(6, len(stack) + 2)
        node = _node("section", {"class": "lt-section"}, [
            _node(f"h{level}", {"class": f"lt-h{level}"}, [escape(title)]),
        ])
        if len(stack) < MAX_SECTION_DEPTH:
            parent = stack[-1] if stack else self.root
        else:  # too deep to nest: a sibling of the deepest allowed section
            parent = stack[MAX_SECTION_DEPTH - 2] if MAX_SECTION_DEPTH >= 2 else self.root
        parent["children"].append(node)
        token = _OPEN_SECTIONS.set({**sections, self._key: (*stack, node)})
        try:
            yield
        finally:
            try:
                _OPEN_SECTIONS.reset(token)
            except ValueError:  # exited in another context than entered: restore by hand
                current = dict(_OPEN_SECTIONS.get(_NO_SECTIONS))
                if stack:
                    current[self._key] = stack
                else:
                    current.pop(self._key, None)
                _OPEN_SECTIONS.set(current)

    # --- content verbs -------------------------------------------------------------------

    def text(self, s: str) -> None:
        """A paragraph of plain text (escaped; whitespace kept)."""
        self._append(_node("p", {"class": "lt-p"}, [escape(_require_str(s, "text"))]))

    def details(self, s: str, *, summary: str = "Details") -> None:
        """A collapsed block of preformatted text under a one-line summary (both escaped)."""
        body = escape(_require_str(s, "details text"))
        self._append(_node("details", {"class": "lt-details"}, [
            _node("summary", {}, [escape(_require_str(summary, "details summary"))]),
            _node("pre", {"class": "lt-details-body"}, [body]),
        ]))

    def html(self, raw: str) -> None:
        """Raw HTML, sanitized against an allow-list (``rlio.logtree.sanitize``) and inserted.

        Formatting markup survives; ``meta``, ``base``, ``form``, ``iframe``, ``script``,
        ``style``, event handlers and every URL that would load something (other than a
        ``data:image`` source) are removed, so no markup can navigate the page or phone home.
        """
        self._append(_node("div", {"class": "lt-html"}, [sanitize_html(_require_str(raw, "html"))]))

    def table(
        self, obj: Any, *, caption: str | None = None, header: Sequence[Any] | None = None
    ) -> None:
        """A table from a dict (key/value rows), a list of dicts, or rows plus ``header``.

        A list of dicts takes the union of its keys as columns, in first-seen order (``header``
        picks and orders columns instead). Cells are escaped; floats show six significant digits
        with the exact value as a tooltip; nested values show as compact JSON.

        Raises:
            TypeError: ``obj`` is none of the accepted shapes (names the offending row).
        """
        columns, rows = _table_rows(obj, header)
        table = _node("table", {"class": "lt-table"})
        if caption is not None:
            cap = escape(_require_str(caption, "table caption"))
            table["children"].append(_node("caption", {}, [cap]))
        if columns is not None:
            table["children"].append(_node("thead", {}, [
                _node("tr", {}, [_node("th", {}, [escape(_plain(c))]) for c in columns]),
            ]))
        table["children"].append(_node("tbody", {}, [
            _node("tr", {}, [_cell(v) for v in row]) for row in rows
        ]))
        self._append(table)

    def conversation(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """A conversation: a typed ``data`` node rendered as role-coloured messages.

        Messages are copied and normalized to JSON (numpy scalars, enums, pydantic tool calls).
        Near misses are fixed: raw image bytes and PIL images become data URIs, ``image: None``
        is dropped, ``content: None`` becomes ``""``, a tool call without ``type`` gets
        ``"function"``, and non-string ``arguments`` are JSON-encoded.

        Raises:
            RecordError: a message breaks the conversation shape (docs/format.md §7) or has a value
                no JSON form; names the message index and pointer.
        """
        data = {"type": "conversation", "messages": normalize_messages(messages)}
        node = _node("div", {"class": "lt-conversation"})
        node["data"] = data
        self._append(node)

    def exception(self, exc: BaseException) -> None:
        """The exception's type, message and traceback in an open, red block (escaped)."""
        try:
            message = str(exc)
        except Exception:  # a broken __str__ must not break logging
            message = "<unprintable>"
        summary = f"Exception: {type(exc).__name__}" + (f": {message}" if message else "")
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self._append(_node("details", {"class": "lt-exc", "open": "open"}, [
            _node("summary", {}, [escape(summary)]),
            _node("pre", {}, [escape(trace)]),
        ]))

    # --- output ----------------------------------------------------------------------------

    def _doc(self, path: str | None, root: Node) -> dict[str, Any]:
        if path is not None:
            _require_str(path, "path")
        return {
            "title": self._title,
            "started_at": self.started_at.isoformat(),
            "path": path,
            "root": root,
        }

    def to_json(self, *, path: str | None = None) -> dict[str, Any]:
        """The docs/format.md §7 document as a new dict (``path``: the HTML twin's path, if any)."""
        return self._doc(path, _copy_json(self.root))

    def to_json_bytes(self, *, path: str | None = None, compact: bool = False) -> bytes:
        """The document as UTF-8 JSON, indented by 2 or ``compact`` (any depth; orjson when it
        can)."""
        doc = self._doc(path, self.root)
        return dumps_compact_fast(doc) if compact else dumps_indented(doc)

    def to_html(self, *, page: str | None = None, write_id: str | None = None) -> str:
        """The complete self-contained page (``<!doctype html>`` ... ``</html>``).

        ``page``: the run-relative path the page is written to; a name of the naming contract
        gets the iteration header (links to the report and the neighbouring iterations, groups
        collapsed). ``rlio report`` later rewrites it with the trajectory table. ``write_id``:
        the id its JSON twin carries (docs/format.md §7), first in the head.
        """
        if page is not None:
            from rlio.logtree.iteration_page import render_iteration_page, written_nav

            nav = written_nav(page)
            if nav is not None:
                doc = {"root": self.root}
                return render_iteration_page(doc, nav, None, title=self._title,
                                             write_id=write_id)
        return render_logtree_page(self._title, self.root, write_id=write_id)


# --- tables --------------------------------------------------------------------------------


def _is_row(value: Any) -> bool:
    return isinstance(value, (Sequence, tuple)) and not isinstance(value, (str, bytes, bytearray))


def _table_rows(
    obj: Any, header: Sequence[Any] | None
) -> tuple[list[Any] | None, list[list[Any]]]:
    """(column names or None, rows of cell values) for every accepted table shape."""
    if header is not None and not _is_row(header):
        raise TypeError(f"table header must be a sequence of names, got {type(header).__name__}")
    columns = list(header) if header is not None else None
    if isinstance(obj, Mapping):
        return (columns or ["key", "value"]), [[k, v] for k, v in obj.items()]
    if isinstance(obj, (str, bytes, bytearray)) or not hasattr(obj, "__iter__"):
        raise TypeError(
            f"table() takes a dict, a list of dicts, or rows with header=..., "
            f"got {type(obj).__name__}"
        )
    items = list(obj)
    records = bool(items) and isinstance(items[0], Mapping)
    for i, row in enumerate(items):
        if not (isinstance(row, Mapping) if records else _is_row(row)):
            raise TypeError(
                f"table row {i} is a {type(row).__name__}; rows must all be dicts or all be "
                f"sequences of cells"
            )
    if records:
        if columns is None:
            seen: dict[Any, None] = {}
            for record in items:
                seen.update(dict.fromkeys(record))
            columns = list(seen)
        return columns, [[r.get(c, "") for c in columns] for r in items]
    return columns, [list(r) for r in items]


def _format_float(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x.is_integer() and abs(x) < 1e15:
        return repr(x)
    return f"{x:.6g}"


def _plain(value: Any) -> str:
    """Display text of one value (not yet escaped)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return _format_float(value)
    if value is None or isinstance(value, (bool, int)):
        return str(value)
    if isinstance(value, (Mapping, list, tuple)):
        try:
            return orjson.dumps(value, default=normalize_value).decode()
        except TypeError:
            return str(value)
    try:
        normalized = normalize_value(value)
    except Exception:  # display only: any object shows as its str()
        return str(value)
    return _plain(normalized) if normalized is not value else str(value)


def _cell(value: Any) -> Node:
    if not isinstance(value, (str, bool, int, float)) and value is not None:
        with contextlib.suppress(Exception):  # display only: keep the value as it is
            value = normalize_value(value)  # numpy scalars -> float/int
    text = _plain(value)
    attrs: dict[str, str] = {}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        attrs["class"] = "num"
        if isinstance(value, float) and text != repr(value) and math.isfinite(value):
            attrs["title"] = repr(value)
    return _node("td", attrs, [escape(text)])


# --- JSON of any depth -----------------------------------------------------------------------


def _copy_json(value: Any) -> Any:
    """Deep copy of a JSON value (dicts, lists, scalars) without recursion."""
    if not isinstance(value, (dict, list)):
        return value
    top: Any = {} if isinstance(value, dict) else []
    work: list[tuple[Any, Any]] = [(value, top)]
    while work:
        src, dst = work.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for k, v in items:
            if isinstance(v, (dict, list)):
                new: Any = {} if isinstance(v, dict) else []
                work.append((v, new))
                v = new
            if isinstance(dst, dict):
                dst[k] = v
            else:
                dst.append(v)
    return top


def dumps_indented(doc: Any) -> bytes:
    """``orjson.dumps(doc, OPT_INDENT_2)``; a document deeper than orjson writes comes out compact.

    Indenting a tree hundreds of levels deep would cost more whitespace than content, and
    whitespace is not part of the format (docs/format.md §2), so the deep path does not indent.
    """
    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError as exc:
        if "recursion" not in str(exc).lower():
            raise
    return dumps_compact(doc)


def dumps_compact_fast(doc: Any) -> bytes:
    """``orjson.dumps(doc)``; a document deeper than orjson writes goes to ``dumps_compact``."""
    try:
        return orjson.dumps(doc)
    except orjson.JSONEncodeError as exc:
        if "recursion" not in str(exc).lower():
            raise
    return dumps_compact(doc)


def dumps_compact(value: Any) -> bytes:
    """Compact JSON of dicts, lists and scalars at any depth (no recursion)."""
    out: list[bytes] = []
    stack: list[tuple[Iterator[Any], bool]] = []  # (items left, is a dict)
    first = True  # the next item is the first of its container

    def start(v: Any) -> None:
        nonlocal first
        if isinstance(v, dict):
            out.append(b"{")
            stack.append((iter(v.items()), True))
            first = True
        elif isinstance(v, (list, tuple)):
            out.append(b"[")
            stack.append((iter(v), False))
            first = True
        else:
            out.append(orjson.dumps(v))

    start(value)
    while stack:
        items, is_dict = stack[-1]
        item: Any = next(items, _END)
        if item is _END:
            stack.pop()
            out.append(b"}" if is_dict else b"]")
            first = False
            continue
        if not first:
            out.append(b",")
        first = False
        if is_dict:
            key, item = item
            out.append(orjson.dumps(key) + b":")
        start(item)
    return b"".join(out)


_END: Final = object()
