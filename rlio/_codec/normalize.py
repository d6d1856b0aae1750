"""Deep normalization of user values into plain JSON values, with errors that name a pointer.

The writer hands records straight to orjson; this module is the path taken when the checker
refuses a record as given (a numpy integer, a tuple, a mapping that is not a dict), when orjson
refuses a value, and when a whole document is written (``config.json``). It turns dataclasses,
pydantic models, enums, paths, numpy and torch scalars, mappings and sequences into dicts, lists
and scalars, and refuses anything it cannot write faithfully with a ``RecordError`` naming the
JSON pointer of the offending value.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import os
import warnings
from collections.abc import Mapping
from typing import Any, Literal

import orjson

from rlio._codec.jsonl import INT_MAX, INT_MIN, NonFinite, normalize_value
from rlio.errors import RecordError, RlioWarning
from rlio.findings import pointer_of

OnUnserializable = Literal["error", "repr", "text"]

_MAX_DEPTH = 255  # orjson refuses to serialize deeper documents
_Path = list[str | int]


def _fail(what: str, path: _Path, reason: str, index: int | None,
          call: str | None = None) -> RecordError:
    pointer = pointer_of(path)
    where = call or (f"{what} {index}" if index is not None else what)
    return RecordError(f"{where} at {pointer or '/'}: {reason}", index=index, pointer=pointer)


class _Normalizer:
    """One deep conversion; carries the options and the set of containers on the current path."""

    def __init__(self, on_unserializable: OnUnserializable, what: str, index: int | None,
                 call: str | None, notes: list[str] | None) -> None:
        self.mode = on_unserializable
        self.what = what
        self.index = index
        self.call = call
        self.notes = notes
        self.active: set[int] = set()

    def fail(self, path: _Path, reason: str) -> RecordError:
        return _fail(self.what, path, reason, self.index, self.call)

    def convert(self, obj: Any, path: _Path) -> Any:
        """``obj`` as plain JSON values (``path``: where it sits, for errors)."""
        t = type(obj)
        if obj is None or t is str or t is bool or t is float:
            return obj
        if t is int:
            if not INT_MIN <= obj <= INT_MAX:
                return self._error_or_repr(obj, path, f"integer {obj} does not fit in 64 bits")
            return obj
        if t.__module__ == "numpy" and getattr(obj, "ndim", 1) == 0:  # before the ABC tests
            return self._other(obj, path)
        if isinstance(obj, enum.Enum):
            return self.convert(obj.value, path)
        if isinstance(obj, str):
            return str.__str__(obj)
        if isinstance(obj, int):
            return self.convert(int.__index__(obj), path)
        if isinstance(obj, float):
            return float.__float__(obj)
        if len(path) >= _MAX_DEPTH:
            raise self.fail(path, f"value nested deeper than {_MAX_DEPTH} levels")
        if isinstance(obj, (Mapping, list, tuple)) or (
            dataclasses.is_dataclass(obj) and not isinstance(obj, type)
        ):
            return self._container(obj, path)
        return self._other(obj, path)

    def _other(self, obj: Any, path: _Path) -> Any:
        """A value that is neither a JSON scalar nor a container: sets, dates, paths, numpy and
        torch scalars, models; refused (or its ``repr``) when it has no faithful JSON form."""
        if type(obj).__module__ == "numpy":
            return self._converted(obj, path)
        if isinstance(obj, (set, frozenset)):
            try:
                return self._container(sorted(obj), path)
            except TypeError:
                return self._error_or_repr(
                    obj, path, "an unordered set of mixed types has no faithful JSON form"
                )
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return self._error_or_repr(obj, path, f"{type(obj).__name__} is not JSON text")
        if isinstance(obj, type):
            return self._error_or_repr(obj, path, f"class {obj.__qualname__} has no JSON form")
        if isinstance(obj, (datetime.date, datetime.time)):
            return obj.isoformat()
        if isinstance(obj, os.PathLike):
            return os.fspath(obj)
        if callable(obj) and not hasattr(obj, "model_dump"):
            name = getattr(obj, "__qualname__", type(obj).__qualname__)
            return self._error_or_repr(obj, path, f"callable {name} has no JSON form")
        return self._converted(obj, path)

    def _converted(self, obj: Any, path: _Path) -> Any:
        """``normalize_value(obj)``, converted in turn (refused when it cannot convert)."""
        try:
            replacement = normalize_value(obj)
        except Exception as exc:  # a user type failing to convert is this value's problem
            return self._error_or_repr(obj, path, str(exc))
        if replacement is obj:
            return self._error_or_repr(obj, path, f"{type(obj).__qualname__} has no JSON form")
        return self.convert(replacement, path)

    def _error_or_repr(self, obj: Any, path: _Path, reason: str) -> str:
        if self.mode == "error":
            raise self.fail(path, reason)
        text = repr(obj) if self.mode == "repr" else cookbook_text(obj)
        if self.notes is not None:
            self.notes.append(f"{pointer_of(path) or '/'} ({reason}; written as {text!r:.80})")
        return text

    def _container(self, obj: Any, path: _Path) -> Any:
        """Convert a mapping, sequence or dataclass, refusing reference cycles."""
        ident = id(obj)
        if ident in self.active:
            raise self.fail(path, f"{type(obj).__qualname__} contains itself (a reference cycle)")
        self.active.add(ident)
        try:
            if isinstance(obj, (list, tuple)):
                items: list[Any] = []
                for i, v in enumerate(obj):
                    path.append(i)
                    items.append(self.convert(v, path))
                    path.pop()
                return items
            if isinstance(obj, Mapping):
                pairs: Any = obj.items()
            else:  # a dataclass instance
                pairs = ((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))
            out: dict[str, Any] = {}
            for k, v in pairs:
                key = self._key(k, path)
                path.append(key)
                out[key] = self.convert(v, path)
                path.pop()
            return out
        finally:
            self.active.discard(ident)

    def _key(self, k: Any, path: _Path) -> str:
        if isinstance(k, enum.Enum) and isinstance(k.value, str):
            return k.value
        if isinstance(k, str):
            return str.__str__(k)
        if self.mode == "error":
            raise self.fail(path, f"key {k!r} is a {type(k).__name__}; keys must be strings")
        if self.notes is not None:
            self.notes.append(f"{pointer_of(path) or '/'} (key {k!r} written as {json_key(k)!r})")
        return json_key(k)


def cookbook_text(obj: Any) -> str:
    """The text the Tinker cookbook's logger writes for a config value with no JSON form: a
    function or class as ``module.name`` (its ``dump_config``), anything else as
    ``str(type(obj))`` (its JSON encoder's fallback); an oversized integer as its digits."""
    if type(obj) is int:
        return str(obj)
    if callable(obj) and isinstance(getattr(obj, "__name__", None), str):
        return f"{getattr(obj, '__module__', None) or 'builtins'}.{obj.__name__}"
    return str(type(obj))


def json_key(key: Any) -> str:
    """The string Python's ``json`` makes of a non-string key (``None`` -> ``"null"``)."""
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def to_json_value(
    obj: Any, *, on_unserializable: OnUnserializable = "error", what: str = "record",
    index: int | None = None, call: str | None = None, notes: list[str] | None = None,
) -> Any:
    """A deep copy of ``obj`` made only of dict, list, str, int, float, bool and None.

    Args:
        obj: the value to convert (dataclasses, pydantic models, enums, paths, numpy/torch scalars,
            mappings, sequences, sets of orderable items, dates).
        on_unserializable: ``"error"`` raises for a value with no faithful JSON form;
            ``"repr"`` writes its ``repr()`` string instead; ``"text"`` the text the cookbook's
            logger writes (``cookbook_text``).
        what: how error messages name the value (``"config"``, ``"metrics record"``).
        index: the record's index, named in errors.
        call: the call to name in errors instead of ``what`` and ``index``.
        notes: where each value written as text is described (its pointer and why).

    Raises:
        RecordError: naming the JSON pointer of the first value that cannot be written.
    """
    try:
        return _Normalizer(on_unserializable, what, index, call, notes).convert(obj, [])
    except RecursionError:
        raise _fail(what, [], "value nested too deeply to convert", index, call) from None


def has_nonfinite(obj: Any) -> bool:
    """True when a plain JSON value holds a NaN or an infinity anywhere."""
    if isinstance(obj, float):
        return not math.isfinite(obj)
    if isinstance(obj, dict):
        return any(has_nonfinite(v) for v in obj.values())
    if isinstance(obj, list):
        return any(has_nonfinite(v) for v in obj)
    return False


def nonfinite_to_none(obj: Any) -> Any:
    """A copy of a plain JSON value with every NaN and infinity replaced by None.

    This is what the strict-JSON writer puts on disk, so schema checks judge this form (the writer
    on a failed record, the validator on a line with ``NaN`` tokens). Iterative, so a value nested
    as deep as any parser returns is copied without a RecursionError.
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if not isinstance(obj, (dict, list)):
        return obj
    root: Any = dict(obj) if isinstance(obj, dict) else list(obj)
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        items: Any = list(node.items()) if isinstance(node, dict) else enumerate(node)
        for key, v in items:
            if isinstance(v, float):
                if not math.isfinite(v):
                    node[key] = None
            elif isinstance(v, (dict, list)):
                copy: Any = dict(v) if isinstance(v, dict) else list(v)
                node[key] = copy
                stack.append(copy)
    return root


def config_bytes(obj: Any, *, on_unserializable: OnUnserializable = "text",
                 nonfinite: NonFinite = "null") -> bytes:
    """``config.json``'s bytes for ``obj``: a JSON object, indent 2, a final newline.

    A value with no JSON form is written as ``on_unserializable`` says (by default as the
    cookbook's logger writes it), with one ``RlioWarning`` naming each such field.

    Raises:
        RecordError: a value has no faithful JSON form and ``on_unserializable="error"`` (see
            ``to_json_value``), or ``obj`` does not serialize to a JSON object.
    """
    notes: list[str] = []
    plain = to_json_value(obj, on_unserializable=on_unserializable, what="config",
                          notes=notes if on_unserializable == "text" else None)
    if notes:
        warnings.warn(f"write_config: {len(notes)} config field(s) had no JSON form and were "
                      f"written as text: {'; '.join(notes[:10])}"
                      f"{' ...' if len(notes) > 10 else ''}", RlioWarning, stacklevel=3)
    if not isinstance(plain, dict):
        raise RecordError(
            f"config at /: must serialize to a JSON object, got a {type(plain).__name__} "
            f"from {type(obj).__qualname__}", pointer="",
        )
    if nonfinite == "token":
        import json

        return json.dumps(plain, indent=2, ensure_ascii=False, allow_nan=True).encode() + b"\n"
    return orjson.dumps(plain, option=orjson.OPT_INDENT_2) + b"\n"
