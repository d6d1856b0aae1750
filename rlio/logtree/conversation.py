"""Conversations in a logtree: checking messages on the way in, rendering them to HTML.

A conversation is a ``data`` node (docs/format.md §7): ``{"type": "conversation", "messages": []}``.
``normalize_messages`` turns what a training loop holds (dicts, pydantic tool calls, numpy scalars,
PIL images) into exactly that shape or raises ``RecordError`` naming the message and the pointer;
``conversation_view`` turns any such payload, including a foreign one, into the view model the
templates draw with escaping on: no model text ever reaches the page as markup.
"""

from __future__ import annotations

import base64
import contextlib
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


def _pretty_arguments(arguments: Any) -> str:
    """Tool-call arguments, pretty-printed when they are JSON-encoded objects or arrays."""
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
        if isinstance(parsed, (dict, list)) and parsed:
            try:
                return orjson.dumps(parsed, option=orjson.OPT_INDENT_2).decode()
            except TypeError:  # nested deeper than orjson writes
                return arguments
        return arguments
    return _plain(arguments)


def is_safe_image_uri(uri: Any) -> bool:
    """True only for base64 ``data:image/<raster>`` URIs, the one kind rendered as ``<img>``."""
    return isinstance(uri, str) and _SAFE_IMAGE_URI.match(uri) is not None


@dataclass(frozen=True, slots=True)
class Part:
    """One content part as drawn: ``kind`` is text, thinking, image, no-image, image-ref, empty
    or unknown; ``text`` is plain (the template escapes it)."""

    kind: str
    text: str = ""
    index: int = 0
    size: int = 0


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call: ``raw`` (plain text) when it has no ``function`` object."""

    name: str = ""
    id: str = ""
    arguments: str = ""
    raw: str | None = None


@dataclass(frozen=True, slots=True)
class Unparsed:
    """A tool call the renderer could not parse: the raw text and the error."""

    raw_text: str
    error: str


@dataclass(frozen=True, slots=True)
class Message:
    """One message as drawn (``unknown``: the plain text of a message that is no object)."""

    index: int
    role: str = ""
    name: str | None = None
    reply_to: str | None = None
    trainable: bool | None = None
    parts: tuple[Part, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    unparsed: tuple[Unparsed, ...] = ()
    unknown: str | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation payload (ours or a foreign one) as the template draws it."""

    messages: tuple[Message, ...]


def _part(part: Any, k: int) -> Part:
    if not isinstance(part, Mapping):
        return Part("unknown", _plain(part))
    kind = part.get("type")
    if kind == "text":
        return Part("text", _plain(part.get("text", "")))
    if kind == "thinking":
        thinking = part.get("thinking", "")
        return Part("thinking", _plain(thinking),
                    size=len(thinking) if isinstance(thinking, str) else 0)
    if kind == "image":
        image = part.get("image")
        if isinstance(image, str) and is_safe_image_uri(image):
            return Part("image", image.strip(), index=k)
        return Part("no-image") if image is None else Part("image-ref", _plain(image))
    return Part("unknown", _plain(part))


def _calls(msg: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    calls = msg.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            out.append(ToolCall(raw=_plain(call)))
            continue
        call_id = call.get("id")
        out.append(ToolCall(_plain(function.get("name", "")), _plain(call_id) if call_id else "",
                            _pretty_arguments(function.get("arguments"))))
    return tuple(out)


def _unparsed(msg: Mapping[str, Any]) -> tuple[Unparsed, ...]:
    raw_calls = msg.get("unparsed_tool_calls")
    out = []
    for raw in raw_calls if isinstance(raw_calls, list) else ():
        raw_map = raw if isinstance(raw, Mapping) else {"raw_text": raw}
        out.append(Unparsed(_plain(raw_map.get("raw_text", "")), _plain(raw_map.get("error", ""))))
    return tuple(out)


def _message(msg: Any, index: int) -> Message:
    if not isinstance(msg, Mapping):
        return Message(index, unknown=_plain(msg))
    content = msg.get("content")
    if isinstance(content, list):
        parts = tuple(_part(p, k) for k, p in enumerate(content))
        parts = parts or (Part("empty", "(no content)"),)
    elif content == "" or content is None:
        parts = () if msg.get("tool_calls") else (Part("empty", "(empty)"),)
    else:
        parts = (Part("text", _plain(content)),)
    name = msg.get("name")
    return Message(
        index, _plain(msg.get("role")), name if isinstance(name, str) else None,
        _plain(msg["tool_call_id"]) if msg.get("tool_call_id") else None,
        (msg["trainable"] is True) if "trainable" in msg else None,
        parts, _calls(msg), _unparsed(msg))


def conversation_view(data: Mapping[str, Any]) -> Conversation:
    """The view model of one conversation payload (ours or a foreign one)."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        messages = []
    return Conversation(tuple(_message(m, i) for i, m in enumerate(messages)))
