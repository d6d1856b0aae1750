"""A transcript as terminal text: each message under its role, tool calls and results named,
thinking folded to one line unless unfolded. Control characters a run holds are shown as
escapes (ESC from a model's output must not reach the terminal)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

__all__ = ["clean", "transcript_text"]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ROLE_STYLE = {"system": "magenta", "user": "green", "assistant": "cyan", "tool": "yellow"}


def clean(text: object) -> str:
    """``text`` with control characters other than newline and tab shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", str(text))


def _short_json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _parts(content: Any) -> list[tuple[str, str]]:
    """``(kind, text)`` of a message's content: ``text``, ``thinking`` or another part type."""
    if isinstance(content, str):
        return [("text", content)]
    if not isinstance(content, list):
        return [("text", _short_json(content))] if content is not None else []
    out = []
    for part in content:
        if not isinstance(part, Mapping):
            out.append(("text", _short_json(part)))
            continue
        kind = part.get("type")
        if kind == "thinking":
            out.append(("thinking", str(part.get("thinking", ""))))
        elif kind == "text" or "text" in part:
            out.append(("text", str(part.get("text", ""))))
        else:
            out.append((str(kind), f"[{kind}]"))
    return out


def _tool_calls(message: Mapping[str, Any]) -> list[str]:
    calls = []
    for key in ("tool_calls", "unparsed_tool_calls"):
        items = message.get(key)
        for call in items if isinstance(items, list) else []:
            if not isinstance(call, Mapping):
                continue
            fn = call.get("function")
            fn = fn if isinstance(fn, Mapping) else call
            name = fn.get("name", "?")
            args = fn.get("arguments", fn.get("raw_text", ""))
            tag = "" if key == "tool_calls" else " (unparsed)"
            calls.append(f"→ {name}({_short_json(args)}){tag}")
    return calls


def transcript_text(messages: Sequence[Mapping[str, Any]], *, thinking: bool = False,
                    title: str = "") -> Text:
    """The transcript of ``messages``; ``thinking``: show thinking parts whole."""
    out = Text()
    if title:
        out.append(clean(title) + "\n", style="bold")
    for m in messages:
        role = str(m.get("role", "?"))
        head = role
        if role == "tool":
            head += f" {m.get('name', '')}".rstrip()
            if m.get("tool_call_id"):
                head += f" [{m.get('tool_call_id')}]"
        if m.get("trainable") is True:
            head += " · trainable"
        out.append(f"── {clean(head)} ", style=f"bold {_ROLE_STYLE.get(role, 'white')}")
        out.append("─" * 8 + "\n", style="dim")
        for kind, text in _parts(m.get("content")):
            if kind == "thinking":
                if thinking:
                    out.append(clean(text) + "\n", style="dim italic")
                else:
                    out.append(f"▸ thinking ({len(text)} chars; t unfolds)\n", style="dim")
            else:
                out.append(clean(text) + "\n")
        for call in _tool_calls(m):
            out.append(clean(call) + "\n", style="yellow")
    return out
