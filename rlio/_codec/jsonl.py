"""Record <-> line codec: orjson on the fast path, the non-finite policy, torn-tail detection.

Writing: ``encode_record`` turns a record into one JSON document (``encode_line`` adds the ``\\n``).
Values are normalized on the way (numpy scalars, enums, paths, dataclasses, pydantic models);
anything that cannot be written faithfully raises ``RecordError`` naming the JSON pointer.

Reading: ``decode`` parses with orjson and, on a slow path, accepts the ``NaN``/``Infinity``
tokens the cookbook writes; it classifies every failure (invalid UTF-8, bad JSON, too deep)
without raising anything but ``DecodeError``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import os
from collections.abc import Mapping
from typing import Any, Final, Literal

import orjson

from rlio.errors import RecordError

__all__ = ["INT_MAX", "INT_MIN", "DecodeError", "NonFinite", "decode", "encode_line",
           "encode_record", "normalize_value", "tail_start"]

NonFinite = Literal["null", "token"]

_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_PASSTHROUGH_DATETIME
_LINE_OPTS = _OPTS | orjson.OPT_APPEND_NEWLINE
#: The integers orjson can write: int64's minimum to uint64's maximum. Beyond, a value cannot be
#: written faithfully (``RecordError``).
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**64 - 1


def normalize_value(obj: Any) -> Any:
    """Turn one non-JSON value into its JSON-able equivalent, or raise TypeError.

    numpy scalars -> the value orjson writes for them, numpy arrays -> ``.tolist()``, enums ->
    their value, paths -> strings, dataclasses and pydantic models -> dicts, datetimes -> ISO
    strings, sets -> sorted lists (when orderable).
    """
    if type(obj).__module__ == "numpy":
        return _numpy_value(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="python")
    isoformat = getattr(obj, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    item = getattr(obj, "item", None)  # torch / jax scalars
    if callable(item) and getattr(obj, "ndim", 0) == 0 and not isinstance(obj, Mapping):
        return item()
    if isinstance(obj, (set, frozenset)):
        try:
            return sorted(obj)
        except TypeError:
            raise TypeError("an unordered set of mixed types has no faithful JSON form") from None
    raise TypeError(f"{type(obj).__qualname__} is not JSON-serializable")


def _numpy_value(obj: Any) -> Any:
    """A numpy array's ``tolist()``; a numpy scalar as the value orjson writes for it natively
    (its ``.item()`` for integers, booleans and float64; a float32 as its shortest repr, a
    datetime64 in orjson's ISO form), so every path writes the same line. A non-finite float
    (written as null) stays a float, for the token policy."""
    dtype = getattr(obj, "dtype", None)
    if getattr(obj, "ndim", 1) != 0 or dtype is None:
        tolist = getattr(obj, "tolist", None)
        if not callable(tolist):
            raise TypeError(f"{type(obj).__qualname__} is not JSON-serializable")
        return tolist()
    if dtype.kind in "biu" or (dtype.kind == "f" and dtype.itemsize == 8):
        return obj.item()
    with contextlib.suppress(orjson.JSONEncodeError):
        value = orjson.loads(orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY))
        if value is not None:
            return value
    value = obj.item()
    if type(value).__module__ == "numpy":  # a longdouble, say: no Python equivalent
        raise TypeError(f"{type(obj).__qualname__} is not JSON-serializable")
    return value


def _pointer(path: list[str | int]) -> str:
    """``rlio.findings.pointer_of``, imported when a record is refused (readers never need it)."""
    from rlio.findings import pointer_of

    return pointer_of(path)


def _locate_problem(obj: Any, path: list[str | int], depth: int = 0) -> tuple[str, str] | None:
    """Find the first value orjson refuses: returns (pointer, reason) or None."""
    if depth > 512:
        return _pointer(path), "value nested deeper than 512 levels"
    if obj is None or isinstance(obj, (str, bool, float)):
        return None
    if isinstance(obj, int):
        if not INT_MIN <= obj <= INT_MAX:
            return _pointer(path), f"integer {obj} does not fit in 64 bits"
        return None
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not isinstance(k, str):
                return _pointer(path), f"key {k!r} is a {type(k).__name__}, keys must be strings"
            found = _locate_problem(v, [*path, k], depth + 1)
            if found:
                return found
        return None
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found = _locate_problem(v, [*path, i], depth + 1)
            if found:
                return found
        return None
    try:
        replacement = normalize_value(obj)
    except Exception as exc:  # any failure of a user's type is this record's problem
        return _pointer(path), str(exc)
    return _locate_problem(replacement, path, depth + 1)


def _to_token_json(obj: Any) -> Any:
    """Deep-normalize for the stdlib encoder (``nonfinite="token"`` path)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, Mapping):
        return {k: _to_token_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_token_json(v) for v in obj]
    return _to_token_json(normalize_value(obj))


def encode_record(record: Any, *, nonfinite: NonFinite = "null", index: int | None = None) -> bytes:
    """One JSON document for ``record`` (no trailing newline).

    Args:
        record: the value to write.
        nonfinite: ``"null"`` writes NaN and infinities as ``null`` (strict JSON, the default);
            ``"token"`` writes ``NaN``/``Infinity``/``-Infinity`` like Python's ``json``.
        index: the record's index in the caller's batch, named in errors.

    Raises:
        RecordError: the record cannot be written faithfully; names the pointer and the reason.
    """
    try:
        if nonfinite == "token":
            return json.dumps(
                _to_token_json(record), ensure_ascii=False, separators=(",", ":"), allow_nan=True
            ).encode()
        return orjson.dumps(record, default=normalize_value, option=_OPTS)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _record_error(record, exc, index) from None


def encode_line(record: Any, *, nonfinite: NonFinite = "null", index: int | None = None) -> bytes:
    """``encode_record`` plus the terminating ``\\n``."""
    if nonfinite == "null":
        try:
            return orjson.dumps(record, default=normalize_value, option=_LINE_OPTS)
        except (TypeError, ValueError, RecursionError) as exc:
            raise _record_error(record, exc, index) from None
    return encode_record(record, nonfinite=nonfinite, index=index) + b"\n"


def _record_error(record: Any, exc: BaseException, index: int | None) -> RecordError:
    located = _locate_problem(record, [])
    pointer, reason = located if located else ("", str(exc))
    where = f"record {index}" if index is not None else "record"
    return RecordError(
        f"{where} at {pointer or '/'} cannot be written as JSON: {reason}",
        index=index, pointer=pointer,
    )


def tail_start(data: bytes) -> int:
    """Offset where the unterminated last line of ``data`` begins (``len(data)`` if none)."""
    if not data or data.endswith(b"\n"):
        return len(data)
    return data.rfind(b"\n") + 1


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


_NONFINITE_TOKENS: Final = (b"NaN", b"Infinity")


def _nonfinite_marker(token: str) -> float:
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[token]


def decode(data: bytes) -> tuple[Any, bool]:
    """Parse one JSON document; returns ``(value, had_nonfinite_tokens)``.

    Strict JSON is orjson's; a document orjson refuses only for its ``NaN``/``Infinity`` tokens
    is read by the standard library's parser, which takes them.

    Raises:
        DecodeError: with ``kind`` telling what is wrong. Never anything else.
    """
    try:
        return orjson.loads(data), False
    except orjson.JSONDecodeError as exc:
        msg = str(exc)
        if msg.startswith("depth limit exceeded") or "recursion" in msg.lower():
            raise DecodeError("deep", "nested deeper than 1024 levels", exc.pos) from None
        if "not valid UTF-8" in msg:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as u:
                raise DecodeError(
                    "utf8", f"invalid UTF-8 at byte {u.start}: {data[u.start:u.start + 4]!r}",
                    u.start,
                ) from None
            raise DecodeError("utf8", msg.split(":", 1)[0], exc.pos) from None
        if not data.strip():
            raise DecodeError("empty", "empty document", 0) from None
        if any(t in data for t in _NONFINITE_TOKENS):
            try:
                return json.loads(data, parse_constant=_nonfinite_marker), True
            except RecursionError:
                raise DecodeError("deep", "nested deeper than the parser accepts") from None
            except (ValueError, UnicodeDecodeError):
                pass
        raise DecodeError("json", msg.split(": line ", 1)[0], exc.pos) from None
