"""Checks of logtrees (docs/format.md §7) beyond the schema: RL203, RL204, RL410; twins: RL414."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from rlio import layout
from rlio.findings import Finding, finding
from rlio.layout import RunPath, twin_path
from rlio.schema import known_data_types, logtree_known_types
from rlio.storage.base import Storage
from rlio.validate.checks.view import RunView
from rlio.validate.scan import Sink, short

_OFFSET = re.compile(r"(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)$")
_TIME = re.compile(r"[T ][0-9]{2}:[0-9]{2}")


def logtree_checks(doc: Any, sink: Sink, rp: RunPath) -> None:
    """RL204 (naive started_at), RL410 (path does not name the HTML twin), RL203 (a ``data``
    type the schema does not specify, once per type)."""
    if not isinstance(doc, dict):
        return
    head_checks(doc.get("started_at"), doc.get("path"), sink, rp)
    if not logtree_known_types().clean(doc):  # else no unknown type anywhere: no walk here
        _report_unknown_types(doc.get("root"), known_data_types(), sink)


def head_checks(started: Any, path: Any, sink: Sink, rp: RunPath) -> None:
    """RL204 (a time of day but no UTC offset), RL410 (path does not name the HTML twin)."""
    twin = twin_path(rp, "html")
    if isinstance(started, str) and _TIME.search(started) and not _OFFSET.search(started):
        sink.add("RL204", f"started_at {short(started)} has no UTC offset (naive local time)",
                 pointer="/started_at")
    if isinstance(path, str):
        parts = [p for p in re.split(r"[\\/]", path) if p]
        want = twin.split("/")  # nested: the iteration folder and the file; flat: the file
        n = min(len(want), len(parts))
        if not parts or parts[-n:] != want[-n:]:
            sink.add("RL410", f"path {short(path)} does not name the HTML twin {twin!r}",
                     pointer="/path")


def _unknown(node: Any, known: frozenset[str]) -> str | None:
    """The ``data`` type of ``node`` when it is one the schema does not specify, else None."""
    data = node.get("data")
    if type(data) is dict:
        kind = data.get("type")
        if isinstance(kind, str) and kind not in known:
            return kind
    return None


def _report_unknown_types(root: Any, known: frozenset[str], sink: Sink) -> None:
    """One RL203 per unknown type, at the first node of that type in depth-first order (last
    child first)."""
    reported: set[str] = set()
    # (node, where): ``where`` is (parent's where, child index), a pointer built only for a
    # finding, not one string per node of a document that may hold millions
    stack: list[tuple[Any, Any]] = [(root, None)]
    while stack:
        node, where = stack.pop()
        if type(node) is not dict:
            continue
        kind = _unknown(node, known)
        if kind is not None and kind not in reported:
            reported.add(kind)
            sink.add("RL203", f"data type {short(kind)} is not one the schema specifies "
                              "(consumers ignore it)", pointer=f"{_pointer(where)}/data")
        children = node.get("children")
        if type(children) is list:
            stack.extend((c, (where, i)) for i, c in enumerate(children) if type(c) is dict)


def _pointer(where: Any) -> str:
    """The JSON pointer of a node from its (parent, index) chain."""
    parts: list[str] = []
    while where is not None:
        where, i = where
        parts.append(f"/children/{i}")
    return "/root" + "".join(reversed(parts))


_HTML_ID = re.compile(rb'<meta name="%s" content="([0-9A-Za-z_-]{1,64})"'
                      % re.escape(layout.WRITE_ID_META.encode()))
_JSON_ID = re.compile(rb'^\s*\{\s*"%s"\s*:\s*"([0-9A-Za-z_-]{1,64})"'
                      % re.escape(layout.WRITE_ID_KEY.encode()))


def _write_id(storage: Storage, rel: str, pattern: re.Pattern[bytes], n: int) -> bytes | None:
    """The write id in the first ``n`` bytes of ``rel`` (None when absent or unreadable)."""
    try:
        m = pattern.search(storage.read_range(rel, 0, n))
    except OSError:
        return None  # the per-file pass reports unreadable files
    return m.group(1) if m else None


def twin_write_ids(view: RunView) -> Iterator[Finding]:
    """Logtree twins written by rlio carry one write id; different ids: different writes (RL414).

    Reads the JSON's first bytes (rlio writes ``write_id`` first) and the HTML's head; twins
    where neither carries an id (the cookbook's) are not judged.
    """
    if view.storage is None:
        return
    for rel, rp in sorted(view.files.items()):
        if rp.kind != "html":
            continue
        twin = twin_path(rp, "logtree")
        if twin not in view.files:
            continue
        page = _write_id(view.storage, rel, _HTML_ID, 4096)
        doc = _write_id(view.storage, twin, _JSON_ID, 256)
        if page != doc:
            shown = [("none" if x is None else x.decode()) for x in (doc, page)]
            yield finding("RL414", f"{view.display.get(twin, twin)} has write id {shown[0]} but "
                                   f"its HTML twin has {shown[1]}: the two come from different "
                                   "writes (a crash between the two replaces)",
                          file=view.display[rel])
