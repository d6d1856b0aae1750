"""``is_cut_record``: a strict prefix of a JSON object, optionally followed by a whole one."""

from __future__ import annotations

import json

import pytest

from rlio._codec.prefix import is_cut_record

_RECORD = {"step": 3, "spans": [{"name": "a", "duration": 1.5e-3, "ok": True, "n": None}],
           "s": "q\"\\u00e9\n", "neg": -0.25}


@pytest.mark.parametrize("line,cut", [
    (b'{"step": 1, "x', True),
    (b'{"step":1,"x":{"step":0,"eval/acc":0.75}', True),  # a prefix, then a whole record
    (b'{"step":1,"x{"step":0,"eval/acc":0.75}', True),  # cut inside a key, then glued
    (b'{"step":1,"spans":[{"name":"a"{"step":1,"spans":[{"name":"a"}]}', True),
    (b'{"step":1,"spans":[{"name":"a","duration":1},{"name":"b"', True),
    (b'{"a":1.', True), (b'{"a":Na', True), (b'{"a":-Inf', True), (b'{"a":[1,2,', True),
    (b'{"a":"\\u12', True),
    (b'{"step": 2, "progress/batch": 2, oops', False),  # garbage, not a cut line
    (b'{"a":1}{"b":2}', False), (b'{"a":1} oops', False), (b"garbage", False),
    (b'{"a" 1}', False), (b'{"a":01', False), (b'{"a":"\\q', False), (b'{"a":[1,,', False),
    (b'{"step": 3, "x": 1}}', False), (b"[1, 2", False), (b'"str', False), (b"12", False),
])
def test_crafted_lines(line: bytes, cut: bool) -> None:
    """Each crafted line is crash damage exactly when it is a cut record (glued or not)."""
    assert is_cut_record(line) is cut


def test_every_prefix_of_a_record_is_cut_and_the_whole_record_is_not() -> None:
    """Every strict prefix of an encoded record is a cut record, alone or glued to a whole one;
    the whole record is not."""
    data = json.dumps(_RECORD).encode()
    for i in range(1, len(data)):
        assert is_cut_record(data[:i]), data[:i]
        assert is_cut_record(data[:i] + data), data[:i]
    assert not is_cut_record(data)


def test_a_long_number_is_scanned_in_linear_time() -> None:
    """A 200,000-digit number (whole, cut, or cut then glued to a record) is judged in one pass
    over its bytes (the scanner once re-matched the whole token on every byte: minutes)."""
    digits = b"7" * 200_000
    assert is_cut_record(b'{"step": 1, "x": ' + digits) is True
    assert is_cut_record(b'{"step": 1, "x": ' + digits + b'{"step": 2}') is True
    assert is_cut_record(b'{"step": 1, "x": ' + digits + b"}") is False
    assert is_cut_record(b'{"step": 1, "x": ' + digits + b"e+") is True
    assert is_cut_record(b'{"step": 1, "x": ' + digits + b"x") is False
