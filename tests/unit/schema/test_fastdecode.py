"""The msgspec fast decoder is sound: a line it accepts is valid, with orjson's values.

Soundness is one-sided: ``decode(line)`` accepting implies that ``orjson.loads(line)`` parses,
that python-jsonschema judges the value valid, and that the decoded record holds exactly orjson's
values (types included: ``1`` is not ``1.0``). The decoder may refuse a valid line (it then takes
the validator's exact path), but plain records as writers encode them must be accepted, or the
fast path would never be taken. Checked differentially with hypothesis: valid records, value
mutations, crafted duplicate keys and escaped keys, byte-level mutations. The known divergences
(``1.0`` for an integer, ``true``, big integers, NaN tokens, lone surrogates, invalid UTF-8,
undeclared keys, deep values, trailing data...) are pinned one by one in
``test_fastdecode_pinned.py``.
"""

from __future__ import annotations

import copy
import json
import math
import os
import struct
from collections.abc import Callable
from typing import Any

import jsonschema
import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rlio._schema.decoders import compile_decoder, decoder_for
from rlio._schema.loader import SCHEMA_NAMES, load_schema
from rlio._schema.severity import folded

INT64 = (-(2**63), 2**63 - 1)
COMPILED = ["checkpoint-line", "rollout-summary-line", "timing-spans-line", "trace-event-line"]
#: More examples for a long fuzzing session: RLIO_FASTDECODE_EXAMPLES=5000 pytest this file.
EXAMPLES = int(os.environ.get("RLIO_FASTDECODE_EXAMPLES", "80"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

#: Hand-written schemas exercising what the translation supports (renamed keys, enums, bounds).
FEATURES: dict[str, Any] = {
    "type": "object",
    "required": ["class", "a-b", "n", "kind"],
    "properties": {
        "class": {"type": "integer", "exclusiveMinimum": -3, "maximum": 7},
        "a-b": {"type": ["number", "null"], "minimum": -1.5, "exclusiveMaximum": 2},
        "n": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 3},
              "maxItems": 3},
        "kind": {"enum": ["x", "y", 3, None]},
        "_private": {"type": "boolean"},
        "field_1": {"const": "f"},
        "nested": {"type": "object", "additionalProperties": {
            "type": "array", "items": {"type": "integer", "minimum": 0}}},
        "free": {},
        "opt": {"$ref": "#/$defs/pt"},
    },
    "additionalProperties": False,
    "$defs": {"pt": {"type": "object", "required": ["x"], "properties": {
        "x": {"type": "number"}, "label": {"type": "string", "pattern": "^[a-z]+$"}}}},
}


def oracle(schema: Any) -> Callable[[Any], bool]:
    """python-jsonschema's verdict."""
    return jsonschema.validators.validator_for(schema)(schema).is_valid  # type: ignore[no-any-return]


def same(a: Any, b: Any) -> bool:
    """Equal with equal types at every level (floats bit for bit, key order ignored)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


def sound(decode: Callable[[bytes], Any], valid: Callable[[Any], bool], line: bytes) -> bool:
    """Assert the soundness property on ``line``; return whether the decoder accepted it."""
    try:
        typed = decode(line)
    except Exception:
        return False
    value = orjson.loads(line)  # raises (fails the test) if orjson refuses what msgspec took
    assert valid(value), line
    assert same(msgspec.to_builtins(typed), value), (line, typed, value)
    return True


@pytest.fixture(scope="module")
def shipped() -> dict[str, tuple[Callable[[bytes], Any], Callable[[Any], bool]]]:
    """(decoder, jsonschema verdict) per compiled shipped schema."""
    out = {}
    for name in COMPILED:
        decode = decoder_for(name)
        assert decode is not None, name
        out[name] = (decode, oracle(load_schema(name)))
    return out


# ------------------------------------------------------------------------------- generators

_scalars = (st.none() | st.booleans() | st.integers(*INT64)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6))
ANY = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                   | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)


def depth(v: Any) -> int:
    """Container nesting of a JSON value (a scalar is 0)."""
    if isinstance(v, dict):
        return 1 + max(map(depth, v.values()), default=0)
    if isinstance(v, list):
        return 1 + max(map(depth, v), default=0)
    return 0


def _resolve(s: Any, root: dict[str, Any]) -> Any:
    while isinstance(s, dict) and "$ref" in s:
        s = root["$defs"][s["$ref"].rsplit("/", 1)[-1]]
    return s


def plain(s: Any, root: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid values as writers produce them: int64 integers, finite floats, declared keys only."""
    s = _resolve(s, root)
    if s is True or not isinstance(s, dict) or not (set(s) - {"description", "title"}):
        return ANY.filter(lambda v: depth(v) <= 4)
    if "const" in s:
        return st.just(s["const"])
    if "enum" in s:
        return st.sampled_from(s["enum"])
    kinds = s["type"] if isinstance(s["type"], list) else [s["type"]]
    return st.one_of([_typed(k, s, root) for k in kinds])


def _typed(kind: str, s: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo = s.get("minimum", s.get("exclusiveMinimum"))
    hi = s.get("maximum", s.get("exclusiveMaximum"))
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(INT64[0] if lo is None else math.floor(lo) + 1,
                           INT64[1] if hi is None else math.ceil(hi) - 1)
    if kind == "number":
        return _typed("integer", s, root) | st.floats(
            lo, hi, allow_nan=False, allow_infinity=False, exclude_min=lo is not None,
            exclude_max=hi is not None)
    if kind == "string":
        if "pattern" in s:
            return st.from_regex(s["pattern"], fullmatch=True)
        return st.text(min_size=s.get("minLength", 0), max_size=s.get("maxLength", 8))
    if kind == "array":
        return st.lists(plain(s.get("items", True), root), max_size=s.get("maxItems", 3))
    props = s.get("properties", {})
    if not props:
        return st.dictionaries(st.text(max_size=5), plain(s.get("additionalProperties", True),
                                                          root), max_size=3)
    required = s.get("required", [])
    return st.fixed_dictionaries(
        {k: plain(props[k], root) for k in required},
        optional={k: plain(v, root) for k, v in props.items() if k not in required})


REPLACEMENTS = [None, True, False, 0, -1, 1.0, 2.5, -0.0, 2**63, 2**64, -(2**63) - 1, 10**30,
                "", "x", "train", "eval/a", "eval/", [], {}, ["x"], {"k": 1}, {"k": [[[]]]}]


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A valid value with one to three edits (delete, retype, add a key) at random places."""
    doc = copy.deepcopy(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        nodes: list[Any] = []
        stack = [doc]
        while stack:
            node = stack.pop()
            if isinstance(node, dict | list) and node:
                nodes.append(node)
                stack.extend(node.values() if isinstance(node, dict) else node)
        if not nodes:
            break
        node = draw(st.sampled_from(nodes))
        slot = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        action = draw(st.sampled_from(["delete", "replace", "replace", "add"]))
        if action == "delete":
            del node[slot]
        elif action == "replace":
            node[slot] = copy.deepcopy(draw(st.sampled_from(REPLACEMENTS)))
        elif isinstance(node, dict):
            node[draw(st.sampled_from(["extra", "trace", "stop_reason", "class", "x"]))] = (
                copy.deepcopy(draw(st.sampled_from(REPLACEMENTS))))
        else:
            node.append(copy.deepcopy(draw(st.sampled_from(REPLACEMENTS))))
    return doc


def _escape_key(key: str) -> str:
    """``key`` as a JSON string with every character \\u-escaped."""
    return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else json.dumps(c)[1:-1]
                         for c in key) + '"'


@st.composite
def crafted(draw: st.DrawFn, value: Any) -> bytes:
    """JSON text of ``value`` with duplicate keys (before or after the original, with a valid or
    a wrong value), \\u-escaped keys and odd spacing injected into random objects."""

    def enc(v: Any) -> str:
        if isinstance(v, dict):
            pairs: list[tuple[str, str]] = []
            for k, x in v.items():
                key = _escape_key(k) if draw(st.integers(0, 9)) == 0 else json.dumps(k)
                pairs.append((key, enc(x)))
            if v and draw(st.booleans()):
                k = draw(st.sampled_from(list(v)))
                other = draw(st.sampled_from([v[k], *REPLACEMENTS]))
                dup = (json.dumps(k), json.dumps(other))
                pairs.insert(draw(st.integers(0, len(pairs))), dup)
            sep = draw(st.sampled_from([",", ", ", " ,\t"]))
            return "{" + sep.join(f"{k}:{x}" for k, x in pairs) + "}"
        if isinstance(v, list):
            return "[" + ",".join(enc(x) for x in v) + "]"
        return json.dumps(v)

    return (draw(st.sampled_from(["", " ", "\t"])) + enc(value)
            + draw(st.sampled_from(["\n", "\r\n", " \n", ""]))).encode()


FRAGMENTS = [b'"', b"\\", b",", b"}", b"]", b"{", b"[", b":", b"1", b"0", b"-", b".", b"e", b"+",
             b" ", b"\t", b"\r", b"\x00", b"\x1f", b"\x7f", b"\xff", b"\xc3", b"\xed\xa0\x80",
             b"NaN", b"Infinity", b"-Infinity", b"\\ud800", b"\\udc00", b"\\ud83d\\ude00",
             b"\\u0000", b"1e400", b"1.0", b"true", b"null", b"18446744073709551616",
             b"9223372036854775808", b'"extra":1,', b'"iteration":-1,', b"\xef\xbb\xbf",
             b"9" * 30, b"[" * 20, b'"\xff":1,']


@st.composite
def byte_mutated(draw: st.DrawFn, line: bytes) -> bytes:
    """``line`` with one to three byte-level edits (insert, replace or delete a span)."""
    out = bytearray(line)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(out)))
        span = draw(st.integers(0, 4))
        frag = draw(st.sampled_from(FRAGMENTS))
        action = draw(st.sampled_from(["insert", "replace", "delete"]))
        if action == "insert":
            out[at:at] = frag
        elif action == "replace":
            out[at:at + span] = frag
        else:
            del out[at:at + span]
    return bytes(out)


ENCODERS: list[Callable[[Any], bytes]] = [
    lambda v: orjson.dumps(v) + b"\n",
    lambda v: json.dumps(v).encode() + b"\n",  # the cookbook's defaults: ASCII escapes, ", "
    lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode() + b"\r\n",
    lambda v: b" " + json.dumps(v, indent=None, sort_keys=True).encode(),
]


# ------------------------------------------------------------------------- compile coverage


def test_shipped_schemas_that_compile() -> None:
    """The line schemas compile; metrics (patternProperties) and logtree (anyOf, recursion)
    do not, and take the exact path."""
    compiled = {n for n in SCHEMA_NAMES if decoder_for(n) is not None}
    assert set(COMPILED) <= compiled
    assert "metrics-line" not in compiled
    assert "logtree" not in compiled


@pytest.mark.parametrize("schema", [
    {"type": "object", "patternProperties": {"^a": {"type": "integer"}}},
    {"anyOf": [{"type": "object"}, {"type": "integer"}]},
    {"type": "object", "properties": {"a": {"$ref": "#"}}},
    {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}},
     "$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}}},
    {"type": "string", "format": "date-time"},
    {"type": "array", "uniqueItems": True},
    {"type": "integer", "multipleOf": 3},
    {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
    {"type": "number", "maximum": 2**64 + 1},  # not exactly a double
    {"type": "number", "minimum": 1e19},  # no int64 integer: JSON integers would become floats
    {"type": "integer", "minimum": True},
    {"const": True},
    {"enum": [1.5]},
    {"if": {"type": "string"}, "then": {"minLength": 1}},
    {"not": {"type": "string"}},
    {"minimum": 0},  # a constraint without a type
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
    {"type": "object", "required": ["a"], "additionalProperties": False},
    False,
])
def test_unsupported_schemas_do_not_compile(schema: Any) -> None:
    """Anything the translation cannot express exactly gives None (the exact path)."""
    assert compile_decoder(schema) is None


def test_decoder_is_cached_per_schema() -> None:
    """decoder_for compiles a shipped schema once."""
    assert decoder_for("rollout-summary-line") is decoder_for("rollout-summary-line")


def test_features_schema_renames_and_bounds() -> None:
    """Keys that are not plain identifiers decode through renamed fields; bounds are exact."""
    decode = compile_decoder(FEATURES)
    assert decode is not None
    valid = oracle(FEATURES)
    base = {"class": 7, "a-b": -1.5, "n": ["ab"], "kind": 3, "_private": True, "field_1": "f"}
    assert sound(decode, valid, orjson.dumps(base))
    for key, bad in [("class", -3), ("class", 8), ("a-b", 2), ("a-b", 2.0), ("a-b", -1.6),
                     ("n", [""]), ("n", ["abcd"]), ("n", ["a"] * 4), ("kind", "z"),
                     ("field_1", "g")]:
        line = orjson.dumps({**base, key: bad})
        assert not sound(decode, valid, line), (key, bad)
        assert not valid(orjson.loads(line))


# ------------------------------------------------------------------- differential (hypothesis)


@pytest.mark.parametrize("name", COMPILED)
def test_plain_valid_records_are_accepted(name: str, shipped: Any) -> None:
    """Valid records as writers encode them (orjson, json.dumps variants) take the fast path."""
    decode, valid = shipped[name]
    root = folded(load_schema(name))  # warning-level ranges as plain keywords

    @SETTINGS
    @given(plain(root, root), st.sampled_from(ENCODERS))
    def run(value: Any, encode: Callable[[Any], bytes]) -> None:
        assert valid(value)
        assert sound(decode, valid, encode(value)), value

    run()


def test_plain_feature_records_are_accepted() -> None:
    """Valid values of the feature schema (renames, enums, optional nested objects) decode."""
    decode = compile_decoder(FEATURES)
    assert decode is not None
    valid = oracle(FEATURES)

    @SETTINGS
    @given(plain(FEATURES, FEATURES), st.sampled_from(ENCODERS))
    def run(value: Any, encode: Callable[[Any], bytes]) -> None:
        assume(valid(value))  # the generator ignores the label pattern's $ anchor subtleties
        assert sound(decode, valid, encode(value)), value

    run()


@pytest.mark.parametrize("name", [*COMPILED, "features"])
def test_mutated_records_are_sound(name: str, shipped: Any) -> None:
    """Records with keys deleted, added or retyped: accepted only when valid, with equal values."""
    if name == "features":
        root: Any = FEATURES
        decode, valid = compile_decoder(FEATURES), oracle(FEATURES)
    else:
        root = load_schema(name)
        decode, valid = shipped[name]
    assert decode is not None
    verdicts: list[bool] = []

    @SETTINGS
    @given(mutated(plain(root, root)), st.sampled_from(ENCODERS))
    def run(value: Any, encode: Callable[[Any], bytes]) -> None:
        try:
            line = encode(value)
        except TypeError:  # orjson: an integer past 64 bits
            line = json.dumps(value).encode()
        verdicts.append(sound(decode, valid, line))

    run()
    assert not all(verdicts)


@pytest.mark.parametrize("name", COMPILED)
def test_duplicate_and_escaped_keys_are_sound(name: str, shipped: Any) -> None:
    """Crafted duplicate keys (valid or not, first or last) and \\u-escaped keys: sound."""
    decode, valid = shipped[name]
    root = folded(load_schema(name))  # warning-level ranges as plain keywords

    @SETTINGS
    @given(plain(root, root).flatmap(crafted))
    def run(line: bytes) -> None:
        sound(decode, valid, line)

    run()


@pytest.mark.parametrize("name", COMPILED)
def test_byte_mutations_are_sound(name: str, shipped: Any) -> None:
    """Lines with bytes inserted, replaced or deleted (quotes, escapes, NaN, \\xff, surrogates,
    big numbers, brackets): whatever the decoder accepts is valid JSON, valid, equal."""
    decode, valid = shipped[name]
    root = folded(load_schema(name))  # warning-level ranges as plain keywords

    @SETTINGS
    @given(plain(root, root).map(orjson.dumps).flatmap(byte_mutated))
    def run(line: bytes) -> None:
        sound(decode, valid, line)

    run()


@SETTINGS
@given(ANY, st.sampled_from(COMPILED))
def test_arbitrary_json_is_sound(value: Any, name: str) -> None:
    """Arbitrary JSON values (mostly not records at all) are never wrongly accepted."""
    decode = decoder_for(name)
    assert decode is not None
    sound(decode, oracle(load_schema(name)), orjson.dumps(value))
