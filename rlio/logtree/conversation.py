"""Conversations in a logtree: checking messages on the way in, rendering them to HTML.

A conversation is a ``data`` node (docs/format.md §7): ``{"type": "conversation", "messages": []}``.
``normalize_messages`` turns what a training loop holds (dicts, pydantic tool calls, numpy scalars,
PIL images) into exactly that shape or raises ``RecordError`` naming the message and the pointer;
``render_conversation`` draws any such payload, including a foreign one, as escaped HTML: no model
text ever reaches the page as markup.
"""

from __future__ import annotations

import base64
import contextlib
import io
import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import orjson

from rlio import schema
from rlio._codec.jsonl import encode_record, normalize_value
from rlio.errors import RecordError
from rlio.findings import pointer_of

#: Only these data URIs become ``<img>``: raster images, base64, nothing that can carry script.
_SAFE_IMAGE_URI = re.compile(
    r"data:image/(?:png|jpeg|jpg|gif|webp|bmp|avif);base64,[A-Za-z0-9+/=\s]*\Z", re.IGNORECASE
)
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _fail(index: int, path: list[str | int], what: str, value: Any) -> RecordError:
    pointer = pointer_of(["messages", index, *path])
    return RecordError(
        f"conversation message {index}: {pointer} is {_type_name(value)} {_short(value)}; "
        f"expected {what}",
        index=index, pointer=pointer,
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _image_to_uri(image: Any) -> Any:
    """Raw image bytes or a PIL-like image -> a data URI; anything else unchanged."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        raw = bytes(image)
        kind = next((k for magic, k in _IMAGE_MAGIC if raw.startswith(magic)), None)
        if kind is None and raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
            kind = "webp"
        if kind is None:
            return image  # unknown bytes: let normalization reject them with a pointer
        return f"data:image/{kind};base64,{base64.b64encode(raw).decode('ascii')}"
    save = getattr(image, "save", None)
    if callable(save) and hasattr(image, "mode") and hasattr(image, "size"):  # PIL.Image
        buf = io.BytesIO()
        save(buf, format="PNG")
        return f"data:image/png;base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"
    return image


def _prepare(message: Any, index: int) -> dict[str, Any]:
    """Shallow, tolerant fix-ups before normalization (documented on ``LogTree.conversation``)."""
    if not isinstance(message, Mapping):
        with contextlib.suppress(TypeError):
            message = normalize_value(message)
    if not isinstance(message, Mapping):
        raise RecordError(
            f"conversation message {index} is a {_type_name(message)}; expected a mapping with "
            f"'role' and 'content'", index=index, pointer=pointer_of(["messages", index]),
        )
    msg = dict(message)
    if "content" in msg and msg["content"] is None:
        msg["content"] = ""  # OpenAI-style assistant turns that only call tools
    content = msg.get("content")
    if isinstance(content, Sequence) and not isinstance(content, (str, bytes, bytearray)):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "image" and not isinstance(
                part.get("image", ""), str
            ):
                image = part["image"]
                part = {k: v for k, v in part.items() if k != "image"}
                if image is not None:  # None: the image was not kept; the key is optional
                    part["image"] = _image_to_uri(image)
            parts.append(part)
        msg["content"] = parts
    calls = msg.get("tool_calls")
    if isinstance(calls, Sequence) and not isinstance(calls, (str, bytes, bytearray)):
        msg["tool_calls"] = [_prepare_call(c) for c in calls]
    return msg


def _prepare_call(call: Any) -> Any:
    if not isinstance(call, Mapping):
        try:
            call = normalize_value(call)  # pydantic ToolCall -> dict
        except TypeError:
            return call
        if not isinstance(call, Mapping):
            return call
    fixed = dict(call) if "type" in call else {"type": "function", **call}
    function = fixed.get("function")
    if isinstance(function, Mapping):
        args = function.get("arguments")
        if args is not None and not isinstance(args, str):
            try:
                encoded = encode_record(args).decode()
            except RecordError:
                return fixed  # let normalization name the pointer
            fixed["function"] = {**function, "arguments": encoded}
    return fixed


def _check_message(msg: Any, i: int) -> None:
    """Raise RecordError unless ``msg`` is a message of the logtree schema (``$defs/message``)."""
    found = schema.record_schema("logtree").part("message").refusal(msg)
    if found is None:
        return
    pointer = pointer_of(["messages", i]) + found[0]
    raise RecordError(f"conversation message {i}: {found[1]}", index=i,
                      pointer=pointer)


def normalize_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A deep, JSON-native copy of ``messages`` in the schema's conversation shape.

    Raises:
        TypeError: ``messages`` is not a sequence of messages.
        RecordError: a message cannot be written as JSON or breaks the message shape; names the
            message index and the pointer inside the conversation (``/messages/3/content/0/text``).
    """
    if isinstance(messages, (str, bytes, bytearray, Mapping)) or not isinstance(
        messages, (Sequence, list, tuple)
    ):
        raise TypeError(
            f"conversation() takes a sequence of messages, got {type(messages).__name__}"
        )
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        prepared = _prepare(message, i)
        try:
            normalized = orjson.loads(encode_record(prepared, index=i))
        except RecordError as exc:
            pointer = "/messages/" + str(i) + exc.pointer
            reason = str(exc).partition("cannot be written as JSON: ")[2] or str(exc)
            raise RecordError(
                f"conversation message {i}: {pointer} cannot be written as JSON: {reason}",
                index=i, pointer=pointer,
            ) from None
        _check_message(normalized, i)
        out.append(normalized)
    return out


# --- rendering -------------------------------------------------------------------------------


def _plain(value: Any) -> str:
    """Text of any JSON value (strings as is, others as compact JSON); not escaped."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _text(value: Any) -> str:
    """Escaped text of any JSON value."""
    return escape(_plain(value))


def _pretty_arguments(arguments: Any) -> str:
    """Escaped tool-call arguments, pretty-printed when they are JSON-encoded objects or arrays."""
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return escape(arguments)
        if isinstance(parsed, (dict, list)) and parsed:
            try:
                return escape(orjson.dumps(parsed, option=orjson.OPT_INDENT_2).decode())
            except TypeError:  # nested deeper than orjson writes
                return escape(arguments)
        return escape(arguments)
    return _text(arguments)


def is_safe_image_uri(uri: Any) -> bool:
    """True only for base64 ``data:image/<raster>`` URIs, the one kind rendered as ``<img>``."""
    return isinstance(uri, str) and _SAFE_IMAGE_URI.match(uri) is not None


def _render_part(part: Any, k: int, out: list[str]) -> None:
    if not isinstance(part, Mapping):
        out.append(f'<pre class="msg-part-unknown">{_text(part)}</pre>')
        return
    kind = part.get("type")
    if kind == "text":
        out.append(f'<div class="msg-text">{_text(part.get("text", ""))}</div>')
    elif kind == "thinking":
        thinking = part.get("thinking", "")
        size = len(thinking) if isinstance(thinking, str) else 0
        out.append(
            f'<details class="msg-thinking"><summary>Thinking ({size:,} chars)</summary>'
            f'<div class="msg-thinking-body">{_text(thinking)}</div></details>'
        )
    elif kind == "image":
        image = part.get("image")
        if isinstance(image, str) and is_safe_image_uri(image):
            out.append(
                f'<figure class="msg-image"><img src="{escape(image.strip())}" '
                f'alt="image part {k}"></figure>'
            )
        elif image is None:
            out.append('<div class="msg-image-ref">(image not recorded)</div>')
        else:
            out.append(f'<div class="msg-image-ref">image: <code>{_text(image)}</code></div>')
    else:
        out.append(f'<pre class="msg-part-unknown">{_text(part)}</pre>')


def _render_tool_calls(msg: Mapping[str, Any], out: list[str]) -> None:
    calls = msg.get("tool_calls")
    if isinstance(calls, list) and calls:
        out.append('<div class="tool-calls">')
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping):
                out.append(f'<pre class="tool-call">{_text(call)}</pre>')
                continue
            call_id = call.get("id")
            id_html = (
                f' <span class="tool-call-id">{_text(call_id)}</span>' if call_id else ""
            )
            out.append(
                '<div class="tool-call"><div class="tool-call-head">'
                '<span class="tool-call-label">tool call</span> '
                f'<code class="tool-call-name">{_text(function.get("name", ""))}</code>{id_html}'
                f'</div><pre class="tool-call-args">{_pretty_arguments(function.get("arguments"))}'
                "</pre></div>"
            )
        out.append("</div>")
    raw_calls = msg.get("unparsed_tool_calls")
    if isinstance(raw_calls, list) and raw_calls:
        out.append('<div class="tool-calls">')
        for raw in raw_calls:
            raw_map = raw if isinstance(raw, Mapping) else {"raw_text": raw}
            out.append(
                '<div class="tool-call unparsed"><div class="tool-call-head">'
                '<span class="tool-call-label">unparsed tool call</span> '
                f'<span class="tool-call-error">{_text(raw_map.get("error", ""))}</span></div>'
                f'<pre class="tool-call-args">{_text(raw_map.get("raw_text", ""))}</pre></div>'
            )
        out.append("</div>")


def _render_message(msg: Any, index: int, out: list[str]) -> None:
    if not isinstance(msg, Mapping):
        out.append(
            f'<div class="msg" data-role="unknown" data-index="{index}"><div class="msg-body">'
            f'<pre class="msg-part-unknown">{_text(msg)}</pre></div></div>'
        )
        return
    role = msg.get("role")
    role_text = _plain(role)
    head = [f'<span class="msg-role">{escape(role_text)}</span>']
    if isinstance(msg.get("name"), str):
        head.append(f'<span class="msg-name">{escape(msg["name"])}</span>')
    if msg.get("tool_call_id"):
        head.append(f'<span class="msg-tool-call-id">reply to {_text(msg["tool_call_id"])}</span>')
    if "trainable" in msg:
        trained = msg["trainable"] is True
        head.append(
            f'<span class="msg-badge{"" if trained else " off"}">'
            f'{"trainable" if trained else "not trainable"}</span>'
        )
    out.append(
        f'<div class="msg" data-role="{escape(role_text)}" data-index="{index}">'
        f'<div class="msg-head">{" ".join(head)}</div><div class="msg-body">'
    )
    content = msg.get("content")
    if isinstance(content, list):
        for k, part in enumerate(content):
            _render_part(part, k, out)
        if not content:
            out.append('<div class="msg-empty">(no content)</div>')
    elif content == "" or content is None:
        if not msg.get("tool_calls"):
            out.append('<div class="msg-empty">(empty)</div>')
    else:
        out.append(f'<div class="msg-text">{_text(content)}</div>')
    _render_tool_calls(msg, out)
    out.append("</div></div>\n")


def render_conversation(data: Mapping[str, Any], out: list[str]) -> None:
    """Append the HTML of one conversation payload (ours or a foreign one) to ``out``."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        messages = []
    out.append(f'<div class="conversation" data-messages="{len(messages)}">\n')
    for index, msg in enumerate(messages):
        _render_message(msg, index, out)
    out.append("</div>")
