"""The start-up decoder gives exactly what orjson.loads gives, or leaves the input to orjson."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio._codec import decoding


def canon(value: Any) -> Any:
    """``value`` with every type, key order and float bit pattern made visible to ``==``."""
    if isinstance(value, dict):
        return ("d", [(k, canon(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("l", [canon(v) for v in value])
    if isinstance(value, float):
        return ("f", repr(value))
    return (type(value).__name__, value)


def agrees(data: bytes) -> bool:
    """The small-input path either declines or returns orjson's value (and orjson accepts)."""
    got = decoding._small(data)
    if got is decoding._NOTHING:
        return True
    try:
        want = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return bool(canon(got) == canon(want))


EDGES = [
    b"0", b"-0", b"-0.0", b"1e400", b"-1e400", b"1e-400", b"1E2", b"1.5e+3", b"01", b"-01",
    b"1.", b".5", b"-", b"+1", b"1e", b"18446744073709551615", b"18446744073709551616",
    b"-9223372036854775808", b"-9223372036854775809", b"1" * 30, b"1" * 5000,
    b"0.1000000000000000055511151231257827021181583404541015625", b"2.2250738585072011e-308",
    b"NaN", b"Infinity", b"-Infinity", b"[NaN]", b"nan", b"true", b"false", b"null", b"True",
    b'"\\ud800"', b'"\\udc00"', b'"\\ud83d\\ude00"', b'"\\uD83D\\uDE00"', b'"\\u0000"', b'"\\/"',
    b'"\\x41"', b'"\\a"', b'"\t"', b'"\x1f"', b'"\x7f"', b'"\xc3\xa9"', b'"\xed\xa0\x80"',
    b'"\xc0\xaf"', b'"\xef\xbf\xbe"', b"\xef\xbb\xbf{}", b"\xef\xbb\xbf", b"", b" ", b" \t\r\n",
    b"\x0c1", b"1\x0c", b"\xc2\xa01", b"1 2", b"[1,]", b"[,1]", b"{,}", b'{"a":1,}', b'{"a" 1}',
    b'{"a":1,"b":2,"a":3}', b'{"b":1,"a":2}', b"[" * 600 + b"]" * 600, b"[" * 2000 + b"]" * 2000,
    b"[" * 400 + b"]" * 400, b'{"a":' * 300 + b"1" + b"}" * 300, b"[1]x", b"[1] \n", b"\n[1]\n",
    b'"abc', b'"a\\"', b'{"a":[1,{"b":null}],"c":"d"}', b"[1e5,1E-5,-0e0]", b"[1.0,10.0]",
    b"[12345678901234567890]", b"[1.234567890123456789]", b"123456789012345678901",
]


@pytest.mark.parametrize("data", EDGES)
def test_edge_cases_agree_with_orjson(data: bytes) -> None:
    """Numbers at orjson's limits, surrogates, control characters, BOMs, depth and junk agree."""
    assert agrees(data)


def test_plain_documents_take_the_small_path() -> None:
    """Ordinary records are read without orjson: the path exists, it is not all declines."""
    for data in (b'{"step": 1, "loss": 0.25, "tags": ["a"], "ok": true, "x": null}', b"[]",
                 b'"\\u00e9\\n"', b"-0", b"18446744073709551615"):
        assert decoding._small(data) is not decoding._NOTHING


JSON = st.recursive(
    st.none() | st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=5),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(JSON, st.booleans(), st.sampled_from([None, 0, 2]), st.booleans())
def test_documents_agree_with_orjson(value: Any, ascii_only: bool, indent: int | None,
                                     compact: bool) -> None:
    """Any JSON document, however written (escapes, spacing), decodes as orjson decodes it."""
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent,
                      separators=(",", ":") if compact else None)
    assert agrees(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=400, deadline=None)
@given(JSON, st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255),
                                st.sampled_from(["insert", "delete", "replace"])),
                      min_size=1, max_size=4))
def test_mutated_documents_agree_with_orjson(value: Any, edits: list[tuple[int, int, str]]) -> None:
    """Byte-level damage to a document never makes the small path accept what orjson refuses."""
    data = bytearray(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    for at, byte, how in edits:
        i = at % (len(data) + 1)
        if how == "insert":
            data[i:i] = bytes([byte])
        elif i < len(data):
            data[i:i + 1] = b"" if how == "delete" else bytes([byte])
    assert agrees(bytes(data))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"u", b"d8",
                                 b"0", b"1", b"-", b".", b"e", b"E", b"+", b" ", b"\n", b"\t",
                                 b"true", b"null", b"NaN", b"Infinity", b'"a"', b"\xff", b"\x00",
                                 b"\xc3", b"\xa9", b"\x1f"]), max_size=20))
def test_token_soup_agrees_with_orjson(tokens: list[bytes]) -> None:
    """Arbitrary sequences of JSON-ish tokens and stray bytes agree with orjson."""
    assert agrees(b"".join(tokens))


def test_decode_classifies_as_before() -> None:
    """``decode`` keeps its kinds and messages: empty, UTF-8, deep, JSON, and the NaN path."""
    cases = {b"  ": "empty", b'"\xff"': "utf8", b"[" * 2000: "deep", b"[1,]": "json"}
    for data, kind in cases.items():
        with pytest.raises(decoding.DecodeError) as err:
            decoding.decode(data)
        assert err.value.kind == kind
    with pytest.raises(decoding.DecodeError, match="trailing comma is not allowed"):
        decoding.decode(b"[1,]")
    value, nonfinite = decoding.decode(b'{"a": NaN}')
    assert nonfinite and value["a"] != value["a"]


def test_a_fresh_process_reads_small_inputs_without_orjson() -> None:
    """Small valid inputs never import orjson; a refusal imports it and is orjson's error."""
    code = """
import sys
from rlio._codec.decoding import decode, loads
assert loads(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
assert decode(b'{"lr": 0.0001}') == ({"lr": 0.0001}, False)
print("orjson" in sys.modules)
try:
    loads(b"[1,]")
except ValueError as exc:
    print(type(exc).__module__, exc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["False", "orjson trailing comma is not allowed: line 1 column 3 (char 2)"]


def test_the_budget_hands_over_to_orjson() -> None:
    """Past ``BUDGET`` bytes decoded, orjson reads everything (and ``loader`` returns it)."""
    code = """
import sys
from rlio._codec import decoding
line = b'{"k": "' + b"x" * 1000 + b'"}'
n = 0
while "orjson" not in sys.modules:
    assert decoding.loader() is decoding.loads
    decoding.loads(line)
    n += 1
import orjson
print(n * len(line) > decoding.BUDGET - len(line), decoding.loader() is orjson.loads)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "True"]
