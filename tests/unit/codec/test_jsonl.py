"""rlio._codec.jsonl: encoding with the non-finite policy, faithful errors, decoding."""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import pathlib

import pytest

from rlio._codec.jsonl import DecodeError, decode, encode_line, encode_record, tail_start
from rlio.errors import RecordError


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


def test_encode_line_is_compact_strict_json_with_null_for_nonfinite() -> None:
    """Default policy writes NaN and infinities as null and ends the line with a newline."""
    line = encode_line({"step": 1, "a": math.nan, "b": -math.inf, "c": 0.5})
    assert line == b'{"step":1,"a":null,"b":null,"c":0.5}\n'


def test_encode_line_token_policy_matches_python_json() -> None:
    """nonfinite='token' writes the tokens Python's json writes, readable by json.loads."""
    line = encode_line({"a": math.nan, "b": math.inf}, nonfinite="token")
    assert line == b'{"a":NaN,"b":Infinity}\n'
    assert math.isnan(json.loads(line)["a"])


def test_encode_normalizes_common_python_values() -> None:
    """Enums, paths, tuples, sets and dataclasses are written as their JSON equivalents."""
    rec = {"e": Color.RED, "p": pathlib.PurePosixPath("/a/b"), "t": (1, 2), "s": {3, 1},
           "d": Point(1, 2.5)}
    assert json.loads(encode_record(rec)) == {
        "e": "red", "p": "/a/b", "t": [1, 2], "s": [1, 3], "d": {"x": 1, "y": 2.5}}
    assert json.loads(encode_record(rec, nonfinite="token"))["d"] == {"x": 1, "y": 2.5}


@pytest.mark.parametrize(
    ("record", "pointer", "reason"),
    [
        ({"a": {"b": [1, {2: 3}]}}, "/a/b/1", "keys must be strings"),
        ({"x/y": 2**70}, "/x~1y", "64 bits"),
        ({"o": object()}, "/o", "not JSON-serializable"),
    ],
)
def test_unwritable_record_raises_with_index_and_pointer(
    record: dict[str, object], pointer: str, reason: str
) -> None:
    """A record that cannot be written faithfully names its index, pointer and reason."""
    with pytest.raises(RecordError, match=reason) as info:
        encode_line(record, index=4)
    assert info.value.index == 4 and info.value.pointer == pointer
    assert "record 4" in str(info.value)


def test_decode_accepts_strict_json_and_nonfinite_tokens() -> None:
    """decode flags NaN/Infinity documents and parses them with the tolerant parser."""
    assert decode(b'{"a":1}') == ({"a": 1}, False)
    value, nonfinite = decode(b'{"a":NaN,"b":-Infinity}')
    assert nonfinite and math.isnan(value["a"]) and value["b"] == -math.inf


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b'{"a":', "json"),
        (b"\xff\xfe{}", "utf8"),
        (b"   ", "empty"),
        (b"[" * 200_000 + b"]" * 200_000, "deep"),
        (b'{"a": NaN', "json"),
    ],
)
def test_decode_classifies_failures(data: bytes, kind: str) -> None:
    """Every undecodable input raises DecodeError with a kind, never anything else."""
    with pytest.raises(DecodeError) as info:
        decode(data)
    assert info.value.kind == kind


def test_tail_start_finds_unterminated_last_line() -> None:
    """tail_start points at the start of the unterminated last line, or the end."""
    assert tail_start(b"") == 0
    assert tail_start(b"a\nb\n") == 4
    assert tail_start(b"a\nbc") == 2
    assert tail_start(b"abc") == 0
