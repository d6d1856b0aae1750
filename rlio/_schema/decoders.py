"""Compile a JSON Schema into a msgspec decoder that parses and validates a JSONL line in one pass.

``compile_decoder`` translates the schema into msgspec types (a ``Struct`` per object schema with
fixed ``properties``, ``Annotated`` constraints, ``Literal`` for ``const``/``enum``, unions for
type lists) and returns the decoder's ``decode``. The validator tries it first on every line; a
line it refuses takes the exact path (``orjson.loads``, the compiled fast check, jsonschema's
explanation), which stays the source of truth.

Soundness is one-sided by design: a line the decoder accepts is one ``orjson.loads`` parses to a
value python-jsonschema accepts, with the same values in every field the decoder keeps. The
decoder may refuse valid lines (they only take the slower path). So whatever msgspec would judge
more leniently than orjson + jsonschema is made stricter here, or the schema does not compile:

- integers are bounded to int64: beyond it orjson returns a float (msgspec an exact int), and
  msgspec refuses ``1.0``, ``true`` and ``1e2`` where an integer is expected (jsonschema accepts
  the first and the last);
- every object is decoded with ``forbid_unknown_fields``: msgspec *skips* unknown fields without
  checking UTF-8 or number ranges (orjson rejects both), so a record with undeclared keys, even
  where the schema allows them, is left to the exact path;
- "any value" (``{}``, ``true``, a property without a schema) is a JSON value nested at most
  ``_ANY_DEPTH`` levels with int64 integers, never ``typing.Any``: msgspec's own depth limit is the
  interpreter's recursion limit (orjson's is 1,024 levels), and it keeps integers orjson cannot;
- a float bound that a double cannot represent exactly, ``format``, ``uniqueItems``, ``multipleOf``,
  ``patternProperties``, ``anyOf``/``oneOf``/``allOf``/``not``, ``if``, recursive ``$ref`` and any
  keyword not listed here make the schema not compile (``None``).

What msgspec already shares with orjson: no NaN/Infinity tokens, no numbers that overflow a double,
strict UTF-8 and surrogate escapes in decoded strings, no control characters, no trailing data,
the same four whitespace characters, the last of duplicate keys wins, and ``pattern`` is
``re.search`` as in jsonschema (top-level ``pattern`` fields such as ``split`` are searched after
decoding, with the matching values remembered: their values repeat). Floats parse to the same
double. ``tests/unit/schema/test_fastdecode.py`` checks all of it differentially.
"""

from __future__ import annotations

import functools
import keyword
import math
import operator
import re
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal, Union

import msgspec

from rlio._codec.jsonl import INT_MIN
from rlio._schema.loader import load_schema
from rlio._schema.severity import folded

#: msgspec decodes signed 64-bit integers into a constrained ``int``; larger take the exact path.
_I64_MIN: Final = INT_MIN
_I64_MAX: Final = 2**63 - 1
#: Nesting accepted inside an "any value" position; deeper values take the exact path.
_ANY_DEPTH: Final = 8

#: Keywords that never change a verdict (python-jsonschema asserts no ``format`` by default, but
#: a schema that names one is left to the exact path anyway).
_ANNOTATIONS: Final = frozenset({
    "title", "description", "$comment", "default", "examples", "deprecated", "readOnly",
    "writeOnly", "$defs", "definitions",
})
_ROOT_ONLY: Final = frozenset({"$schema", "$id"})
_DRAFT_DEFAULT: Final = "https://json-schema.org/draft/2020-12/schema"
#: Distinct matching strings remembered per top-level ``pattern`` field.
_MATCHED_MAX: Final = 4096
_DRAFTS: Final = frozenset({
    "http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema",
})
_NUMERIC: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_STRING: Final = frozenset({"minLength", "maxLength", "pattern"})
_ARRAY: Final = frozenset({"items", "minItems", "maxItems", "uniqueItems"})
_OBJECT: Final = frozenset({"properties", "required", "additionalProperties", "minProperties",
                            "maxProperties"})
_VALUES: Final = frozenset({"const", "enum"})
_KNOWN: Final = (_ANNOTATIONS | _NUMERIC | _STRING | _ARRAY | _OBJECT | _VALUES
                 | {"type", "$ref"})
_TYPES: Final = ("null", "boolean", "integer", "number", "string", "array", "object")

Decode = Callable[[bytes], Any]

# Types are built at run time from schema values: these spellings keep type checkers from reading
# them as static type expressions.
_ANNOTATED: Any = Annotated
_LITERAL: Any = Literal
_UNION: Any = Union
_LIST: Any = list
_DICT: Any = dict
_META: Any = msgspec.Meta


def _constrained(base: Any, meta: dict[str, Any]) -> Any:
    """``base`` with msgspec constraints (``base`` itself when there are none)."""
    return _ANNOTATED[base, _META(**meta)] if meta else base


def _union(members: list[Any]) -> Any:
    return members[0] if len(members) == 1 else _UNION[tuple(members)]


class Unsupported(Exception):
    """The schema uses something the decoder cannot express exactly (the message says what)."""


def compile_decoder(schema: dict[str, Any] | bool) -> Decode | None:
    """A ``decode(line: bytes)`` that returns the record when the line is valid, else raises.

    Returns None when the schema uses anything this translation cannot express exactly. A line the
    decoder refuses may still be valid: callers judge it on the exact path.
    """
    if isinstance(schema, dict) and schema.get("$schema", _DRAFT_DEFAULT) not in _DRAFTS:
        return None
    builder = _Builder(schema)
    try:
        decode = msgspec.json.Decoder(builder.build(schema, "Record", root=True)).decode
    except (Unsupported, TypeError, ValueError):  # msgspec refusing a type is the same answer
        return None
    return _with_patterns(decode, builder.patterns) if builder.patterns else decode


def _with_patterns(decode: Decode, checks: list[tuple[str, re.Pattern[str]]]) -> Decode:
    """``decode`` followed by the ``pattern`` checks of top-level string fields.

    msgspec runs a ``pattern`` through ``re.search`` on every value (about a third of a
    microsecond); top-level values such as ``split`` repeat, so the strings found to match are
    remembered (up to ``_MATCHED_MAX``) and a repeat costs one set lookup.
    """
    fields = [(operator.attrgetter(attr), attr, rx, set[str]()) for attr, rx in checks]

    def check(rec: Any) -> Any:
        for get, attr, rx, matched in fields:
            v = get(rec)
            if type(v) is str and v not in matched:
                if rx.search(v) is None:
                    raise msgspec.ValidationError(f"`{attr}` does not match {rx.pattern!r}")
                if len(matched) < _MATCHED_MAX:
                    matched.add(v)
        return rec

    if len(fields) > 1:
        return lambda line: check(decode(line))
    get, _, _, matched = fields[0]

    def checked(line: bytes) -> Any:  # one field (split): the common case inlined
        rec = decode(line)
        return rec if get(rec) in matched else check(rec)

    return checked


@functools.cache
def decoder_for(name: str) -> Decode | None:
    """The decoder of the shipped schema ``name`` (cached), or None when it does not compile.

    Every rule counts, warning-level ones too (folded into plain keywords): a line it accepts
    gives no finding."""
    return compile_decoder(folded(load_schema(name)))


def _int_type(lo: int, hi: int) -> Any:
    return _constrained(int, {"ge": lo, "le": hi})


_INT: Final = _int_type(_I64_MIN, _I64_MAX)
_SCALAR: Final = _union([_INT, float, str, bool, None])


@functools.cache
def any_value(depth: int = _ANY_DEPTH) -> Any:
    """Any JSON value nested at most ``depth`` levels, integers within int64."""
    if depth == 0:
        return _SCALAR
    inner = any_value(depth - 1)
    return _union([_SCALAR, _LIST[inner], _DICT[str, inner]])


def _number(value: Any, what: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(f"{what} {value!r} is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise Unsupported(f"{what} {value!r} is not finite")
    return value


class _Builder:
    """Translates one schema document; ``$ref`` targets are translated once each."""

    def __init__(self, root: dict[str, Any] | bool) -> None:
        self.root = root
        self.done: dict[int, Any] = {}
        self.active: set[int] = set()
        self.names: set[str] = set()
        #: (attribute, regex) of the top-level string fields whose pattern is checked after
        #: decoding (``_with_patterns``), not by msgspec.
        self.patterns: list[tuple[str, re.Pattern[str]]] = []
        self.deferred: re.Pattern[str] | None = None

    def build(self, s: Any, hint: str, *, root: bool = False, defer: bool = False) -> Any:
        """The type of ``s``; with ``defer``, a scalar's ``pattern`` is left to the caller
        (stored in ``self.deferred``) instead of being a msgspec constraint."""
        if s is True:
            return any_value()
        if not isinstance(s, dict):
            raise Unsupported(f"schema {s!r}")  # False (never valid) or malformed
        if id(s) in self.done and not defer:
            return self.done[id(s)]
        if id(s) in self.active:
            raise Unsupported("recursive $ref")
        self.active.add(id(s))
        try:
            result = self._build(s, hint, root, defer)
        finally:
            self.active.discard(id(s))
        if not defer:
            self.done[id(s)] = result
        return result

    def _build(self, s: dict[str, Any], hint: str, root: bool, defer: bool) -> Any:
        unknown = set(s) - _KNOWN - (_ROOT_ONLY if root else set())
        if unknown:
            raise Unsupported(f"keyword(s) {', '.join(sorted(unknown))}")
        if "$ref" in s:
            if set(s) - _ANNOTATIONS - _ROOT_ONLY - {"$ref"}:
                raise Unsupported("$ref with sibling keywords")
            return self.build(self._resolve(s["$ref"]), self._hint(s["$ref"]), defer=defer)
        types = s.get("type")
        if isinstance(types, str):
            types = [types]
        if types is not None and (not isinstance(types, list)
                                  or any(t not in _TYPES for t in types)):
            raise Unsupported(f"type {s.get('type')!r}")
        if "const" in s or "enum" in s:
            return self._values(s, types)
        if types is None:
            if set(s) - _ANNOTATIONS - _ROOT_ONLY:
                raise Unsupported("constraints without a type")
            return any_value()
        members: list[Any] = []
        for t in dict.fromkeys(types):
            if t == "integer" and "number" in types:
                continue
            members.extend(self._member(s, t, hint, top=root and types == ["object"],
                                        defer=defer))
        if not members:
            raise Unsupported("no value can be valid")
        return _union(members)

    def _hint(self, ref: str) -> str:
        name = re.sub(r"\W", "_", ref.rsplit("/", 1)[-1]) or "Def"
        return name[:1].upper() + name[1:]

    def _resolve(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not isinstance(self.root, dict):
            raise Unsupported(f"$ref {ref!r}")
        m = re.fullmatch(r"#/(\$defs|definitions)/([^/~%]+)", ref)
        if m is None:
            raise Unsupported(f"$ref {ref!r} (only #/$defs/<name> is translated)")
        defs = self.root.get(m.group(1))
        if not isinstance(defs, dict) or m.group(2) not in defs:
            raise Unsupported(f"$ref {ref!r} does not resolve")
        return defs[m.group(2)]

    def _values(self, s: dict[str, Any], types: list[str] | None) -> Any:
        if set(s) - _ANNOTATIONS - _ROOT_ONLY - _VALUES - {"type"}:
            raise Unsupported("const/enum with other constraints")
        if "const" in s and "enum" in s:
            raise Unsupported("const and enum together")
        values = [s["const"]] if "const" in s else s["enum"]
        if not isinstance(values, list):
            raise Unsupported("enum is not an array")
        literals: list[int | str] = []
        null = False
        for v in values:
            if v is None:
                null = types is None or "null" in types
            elif isinstance(v, bool):
                raise Unsupported("boolean const/enum")
            elif isinstance(v, int | float) and not isinstance(v, bool):
                # const 1 also accepts 1.0 in jsonschema; msgspec's Literal[1] only 1 (stricter)
                if isinstance(v, float) and not v.is_integer():
                    raise Unsupported(f"const/enum {v!r}")
                n = int(v)
                if not _I64_MIN <= n <= _I64_MAX:
                    raise Unsupported(f"const/enum {v!r} beyond int64")
                if types is None or "integer" in types or "number" in types:
                    literals.append(n)
            elif isinstance(v, str):
                if types is None or "string" in types:
                    literals.append(v)
            else:
                raise Unsupported(f"const/enum {v!r}")
        members: list[Any] = []
        if literals:
            members.append(_LITERAL[tuple(dict.fromkeys(literals))])
        if null:
            members.append(None)
        if not members:
            raise Unsupported("no value can be valid")
        return _union(members)

    def _member(self, s: dict[str, Any], t: str, hint: str, *, top: bool,
                defer: bool) -> list[Any]:
        if t == "null":
            return [None]
        if t == "boolean":
            return [bool]
        if t == "integer":
            it = self._integer(s)
            return [] if it is None else [it]
        if t == "number":
            # msgspec reads a JSON integer as a float where no int is allowed (orjson: an int)
            if (it := self._integer(s)) is None:
                raise Unsupported("number bounds that no int64 integer meets")
            return [it, self._float(s)]
        if t == "string":
            return [self._string(s, defer)]
        if t == "array":
            return [self._array(s, hint)]
        return [self._object(s, hint, top)]

    def _integer(self, s: dict[str, Any]) -> Any:
        lo, hi = _I64_MIN, _I64_MAX
        if "minimum" in s:
            lo = max(lo, math.ceil(_number(s["minimum"], "minimum")))
        if "exclusiveMinimum" in s:
            lo = max(lo, math.floor(_number(s["exclusiveMinimum"], "exclusiveMinimum")) + 1)
        if "maximum" in s:
            hi = min(hi, math.floor(_number(s["maximum"], "maximum")))
        if "exclusiveMaximum" in s:
            hi = min(hi, math.ceil(_number(s["exclusiveMaximum"], "exclusiveMaximum")) - 1)
        return None if lo > hi else _int_type(lo, hi)

    def _float(self, s: dict[str, Any]) -> Any:
        meta: dict[str, float] = {}
        for side in ("Minimum", "Maximum"):
            bounds: list[tuple[float, bool]] = []  # (bound, exclusive)
            for key, exclusive in ((side.lower(), False), ("exclusive" + side, True)):
                if key in s:
                    b = _number(s[key], key)
                    if float(b) != b:  # msgspec compares with the bound as a double
                        raise Unsupported(f"{key} {b!r} is not exactly a double")
                    bounds.append((float(b), exclusive))
            if not bounds:
                continue
            # the tighter bound; an exclusive one wins a tie
            if side == "Minimum":
                b, exclusive = max(bounds)
                meta["gt" if exclusive else "ge"] = b
            else:
                b, exclusive = min(bounds, key=lambda x: (x[0], not x[1]))
                meta["lt" if exclusive else "le"] = b
        return _constrained(float, meta)

    def _string(self, s: dict[str, Any], defer: bool) -> Any:
        meta: dict[str, Any] = dict(self._lengths(s, "minLength", "maxLength"))
        if "pattern" in s:
            if not isinstance(s["pattern"], str):
                raise Unsupported("pattern is not a string")
            try:
                rx = re.compile(s["pattern"])
            except re.error as exc:
                raise Unsupported(f"pattern {s['pattern']!r}: {exc}") from None
            if defer:
                self.deferred = rx
            else:
                meta["pattern"] = s["pattern"]
        return _constrained(str, meta)

    def _array(self, s: dict[str, Any], hint: str) -> Any:
        if s.get("uniqueItems", False) is not False:
            raise Unsupported("uniqueItems")
        items = s.get("items", True)
        if not isinstance(items, dict | bool):
            raise Unsupported("items as an array (tuple validation)")
        inner = self.build(items, hint + "Item")
        return _constrained(_LIST[inner], self._lengths(s, "minItems", "maxItems"))

    @staticmethod
    def _lengths(s: dict[str, Any], lo: str, hi: str) -> dict[str, int]:
        meta: dict[str, int] = {}
        for key, arg in ((lo, "min_length"), (hi, "max_length")):
            if key in s:
                v = s[key]
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise Unsupported(f"{key} {v!r}")
                meta[arg] = v
        return meta

    def _object(self, s: dict[str, Any], hint: str, top: bool) -> Any:
        props = s.get("properties", {})
        required = s.get("required", [])
        extra = s.get("additionalProperties", True)
        if not isinstance(props, dict) or not isinstance(required, list) or not all(
                isinstance(k, str) for k in required):
            raise Unsupported("malformed properties/required")
        if not props and not required:
            value = self.build(extra, hint + "Value")
            return _constrained(_DICT[str, value], self._lengths(s, "minProperties",
                                                                 "maxProperties"))
        if "minProperties" in s or "maxProperties" in s:
            raise Unsupported("minProperties/maxProperties with properties")
        if extra is not True and extra is not False:
            raise Unsupported("additionalProperties schema with properties")
        names = dict.fromkeys([*props, *required])
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        rename: dict[str, str] = {}
        taken = {n for n in names if _plain(n)}
        for i, key in enumerate(names):
            sub = props.get(key, True)
            if sub is False:
                if key in required:
                    raise Unsupported(f"required property {key!r} is forbidden")
                continue  # with no field, the key is an unknown field: refused
            if key not in props and extra is False:
                raise Unsupported(f"required property {key!r} is forbidden")
            attr = key
            if not _plain(key):
                attr = f"field_{i}"
                while attr in taken:
                    attr += "_"
                taken.add(attr)
                rename[attr] = key
            self.deferred = None
            typ = self.build(sub, hint + _camel(key), defer=top)
            if self.deferred is not None:
                self.patterns.append((attr, self.deferred))
                self.deferred = None
            if key in required:
                fields.append((attr, typ))
            else:
                fields.append((attr, _union([typ, msgspec.UnsetType]), msgspec.UNSET))
        name = hint
        while name in self.names:
            name += "_"
        self.names.add(name)
        # undeclared keys are refused even where the schema allows them (see the module doc)
        return msgspec.defstruct(name, fields, kw_only=True, forbid_unknown_fields=True,
                                 gc=False, rename=rename or None, module=__name__)


def _plain(key: str) -> bool:
    """A key usable as the attribute name itself."""
    return key.isidentifier() and not keyword.iskeyword(key) and not key.startswith("_")


def _camel(key: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"\W|_", key) if p)[:40]
