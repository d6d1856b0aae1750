"""Reading JSON: ``decode`` (classified failures, the ``NaN`` slow path) and ``loads``, which is
``orjson.loads`` without importing orjson while a process has read little.

Importing orjson costs a small run's ``rlio validate`` more than the whole validation (its module
init imports dataclasses, inspect, uuid, datetime...). ``loads`` parses small inputs with the
stdlib's C scanner (``_json``, not the ``json`` package) and gives exactly what ``orjson.loads``
gives: it takes only what orjson takes with the same value, and hands anything else, or anything
doubtful, to orjson itself (imported then), so a refusal is always orjson's, with orjson's
message. Doubtful: not UTF-8, a ``\\uD...`` escape (orjson refuses lone surrogates), integers
outside orjson's 64-bit range (orjson makes them floats), a float that is infinite or has many
digits, ``NaN``/``Infinity``, nesting near orjson's depth limit, and any error at all. Once the
process has decoded ``BUDGET`` bytes this way, or orjson is imported for any reason, orjson reads
everything: a large run pays its import once and then parses at its speed.
"""

from __future__ import annotations

import math
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: Bytes the stdlib scanner may decode in one process before orjson takes over.
BUDGET = 1 << 20
#: Opening brackets beyond which an input goes to orjson (its depth limit is 1,024; the stdlib
#: scanner's is the interpreter's recursion limit).
_MAX_OPEN = 512
#: The integers orjson returns as ints (beyond, it returns floats).
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1
_INF = float("inf")
_WS = " \t\n\r"
_NONFINITE_TOKENS = (b"NaN", b"Infinity")

_left = BUDGET
_scan: Callable[[str, int], tuple[Any, int]] | None = None


class DecodeError(ValueError):
    """A line or document could not be decoded.

    Attributes:
        kind: ``"utf8"`` (invalid UTF-8), ``"json"`` (not JSON), ``"deep"`` (nested too deep)
            or ``"empty"`` (nothing but whitespace).
        position: byte offset of the problem when known.
    """

    def __init__(self, kind: str, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.position = position


class _Doubt(Exception):
    """A value the stdlib would read differently from orjson (or orjson refuses)."""


def _int(text: str) -> int:
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise _Doubt
    return value


def _float(text: str) -> float:
    if len(text) > 20:  # many digits: leave the rounding to orjson
        raise _Doubt
    value = float(text)
    if value == _INF or value == -_INF:
        raise _Doubt
    return value


def _constant(text: str) -> Any:
    raise _Doubt


class _Context:
    """What ``_json.make_scanner`` reads: strict strings, no hooks but the number checks."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = staticmethod(_float)
    parse_int = staticmethod(_int)
    parse_constant = staticmethod(_constant)


_NOTHING: Any = object()


def _small(data: bytes) -> Any:
    """``orjson.loads(data)`` when the stdlib scanner reads it the same, else ``_NOTHING``."""
    global _scan
    if b"\\u" in data and (b"\\ud" in data or b"\\uD" in data):
        return _NOTHING
    if data.count(b"[") + data.count(b"{") > _MAX_OPEN:
        return _NOTHING
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _NOTHING
    start = len(text) - len(text.lstrip(_WS))
    if start == len(text):
        return _NOTHING
    if _scan is None:
        import _json

        _scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # reads the attributes
    try:
        value, end = _scan(text, start)
    except Exception:  # any refusal or doubt (StopIteration included): orjson decides
        return _NOTHING
    if end != len(text) and text[end:].strip(_WS):
        return _NOTHING
    return value


def loads(data: bytes) -> Any:
    """``orjson.loads(data)``: the same value, or orjson's own ``JSONDecodeError``."""
    global _left
    if "orjson" not in sys.modules and len(data) <= _left:
        _left -= len(data)
        value = _small(data)
        if value is not _NOTHING:
            return value
    import orjson

    return orjson.loads(data)


def loader() -> Callable[[bytes], Any]:
    """The ``loads`` to use for a file's lines: ``orjson.loads`` itself once orjson is imported."""
    if "orjson" not in sys.modules:
        return loads
    import orjson

    return orjson.loads


def _nonfinite_marker(token: str) -> float:
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[token]


def decode(data: bytes) -> tuple[Any, bool]:
    """Parse one JSON document; returns ``(value, had_nonfinite_tokens)``.

    Raises:
        DecodeError: with ``kind`` telling what is wrong. Never anything else.
    """
    try:
        return loads(data), False
    except ValueError as exc:  # orjson.JSONDecodeError (refusals are always orjson's)
        msg = str(exc)
        if msg.startswith("depth limit exceeded") or "recursion" in msg.lower():
            raise DecodeError("deep", "nested deeper than 1024 levels", _pos(exc)) from None
        if "not valid UTF-8" in msg:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as u:
                raise DecodeError(
                    "utf8", f"invalid UTF-8 at byte {u.start}: {data[u.start:u.start + 4]!r}",
                    u.start,
                ) from None
            raise DecodeError("utf8", msg.split(":", 1)[0], _pos(exc)) from None
        if not data.strip():
            raise DecodeError("empty", "empty document", 0) from None
        if any(t in data for t in _NONFINITE_TOKENS):
            import json

            try:
                return json.loads(data, parse_constant=_nonfinite_marker), True
            except RecursionError:
                raise DecodeError("deep", "nested deeper than the parser accepts") from None
            except (ValueError, UnicodeDecodeError):
                pass
        raise DecodeError("json", msg.split(": line ", 1)[0], _pos(exc)) from None


def _pos(exc: ValueError) -> int | None:
    pos: int | None = getattr(exc, "pos", None)
    return pos
