"""The conversations of a logtree document: a walk of its ``data`` nodes (docs/format.md §7).

rlio's builder (and the cookbook's) writes a conversation as a node whose ``data`` is
``{"type": "conversation", "messages": [...]}``, inside the sections it was logged in. The walk
yields each one with the titles of the sections around it, outermost first, so a caller can tell
a ``Prompt`` from a ``Policy Response`` or pick ``Group Rollout`` > ``Trajectory 0 Episode``.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from rlio.reader.records import ConversationMessage

__all__ = ["Conversation", "iter_conversations"]

_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation found in a logtree.

    Attributes:
        path: titles of the sections that hold it, outermost first (``("Group Rollout",
            "Prompt")``); empty for a conversation at the top of the document.
        messages: the messages as written (``role``, ``content`` and the optional keys).
    """

    path: tuple[str, ...]
    messages: list[ConversationMessage]


def iter_conversations(document: Any) -> Iterator[Conversation]:
    """Every conversation of a logtree document in document order (depth first).

    Tolerant of foreign or damaged trees: a node that is not an object, or a ``conversation``
    whose ``messages`` is not a list, is passed over; depth is walked without recursion.
    """
    if not isinstance(document, dict):
        return
    stack: list[tuple[Any, tuple[str, ...]]] = [(document.get("root"), ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        children = node.get("children")
        children = children if isinstance(children, list) else []
        if node.get("tag") == "section":
            title = _heading(children)
            if title is not None:
                path = (*path, title)
        data = node.get("data")
        if isinstance(data, dict) and data.get("type") == "conversation":
            messages = data.get("messages")
            if isinstance(messages, list):
                kept = [m for m in messages if isinstance(m, dict)]
                yield Conversation(path, cast(list[ConversationMessage], kept))
        stack.extend((child, path) for child in reversed(children) if isinstance(child, dict))


def _heading(children: list[Any]) -> str | None:
    """The text of a section's heading (its first ``h1``-``h6`` child), unescaped."""
    for child in children:
        if isinstance(child, dict) and child.get("tag") in _HEADINGS:
            parts = child.get("children")
            if isinstance(parts, list):
                return html.unescape("".join(p for p in parts if isinstance(p, str)))
            return ""
    return None


def content_text(content: Any) -> str:
    """A message's text: a string as is, the ``text`` parts of a list of parts joined by
    newlines, anything else empty."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content
                         if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""
