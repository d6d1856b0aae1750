"""Pinned msgspec/orjson/jsonschema divergences: each is refused (or accepted) as listed.

The companion of ``test_fastdecode.py`` (the differential tests): one line per known divergence,
so a msgspec upgrade that changes one of them fails here by name.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import orjson
import pytest
from test_fastdecode import oracle, sound

from rlio._schema.decoders import compile_decoder, decoder_for
from rlio._schema.loader import load_schema


@pytest.fixture(scope="module")
def rollout() -> tuple[Any, Any]:
    """(decoder, jsonschema verdict) of the rollout-summary-line schema."""
    return decoder_for("rollout-summary-line"), oracle(load_schema("rollout-summary-line"))


def _rollout(**top: Any) -> dict[str, Any]:
    step = {"step_idx": 0, "ob_len": 5, "ac_len": 3, "reward": 1.0, "episode_done": True,
            "metrics": {"ok": 1.0}, "logs": {"answer": "42"}}
    rec = {"schema_version": 1, "split": "train", "iteration": 0, "group_idx": 0, "traj_idx": 0,
           "tags": ["a"], "sampling_client_step": None, "total_reward": 1.0,
           "final_reward": 0.0, "trajectory_metrics": {"turns": 1}, "steps": [step],
           "final_ob_len": 0}
    rec.update(top)
    return rec


def _line(rec: Any) -> bytes:
    return json.dumps(rec, separators=(",", ":")).encode()  # orjson refuses integers past 64 bits


def _text(rec: dict[str, Any], key: str, raw: str | bytes) -> bytes:
    """The record's JSON text with ``key``'s value written as ``raw`` (top level)."""
    value = raw if isinstance(raw, bytes) else raw.encode()
    return _line(rec).replace(_line({key: rec[key]})[1:-1], f'"{key}":'.encode() + value, 1)


R = _rollout()
STEP_KEYS = _line(R["steps"][0])[1:-1]
PINNED: list[tuple[str, bytes, bool]] = [
    ("plain record", _line(R) + b"\n", True),
    ("CRLF line end and spaces", b"  " + _line(R) + b" \r\n", True),
    ("1.0 for an integer (jsonschema: valid)", _text(R, "iteration", "1.0"), False),
    ("1e2 for an integer", _text(R, "iteration", "1e2"), False),
    ("true for an integer", _text(R, "iteration", "true"), False),
    ("-0 for an integer", _text(R, "iteration", "-0"), True),
    ("int64 max", _text(R, "group_idx", str(2**63 - 1)), True),
    ("2**63 (orjson: int; beyond msgspec's bound)", _text(R, "group_idx", str(2**63)), False),
    ("2**64 (orjson: float)", _text(R, "group_idx", str(2**64)), False),
    ("const 1 as 1.0 (jsonschema: valid)", _text(R, "schema_version", "1.0"), False),
    ("const 1 as true", _text(R, "schema_version", "true"), False),
    ("number given an integer", _text(R, "total_reward", "1"), True),
    ("number given a huge integer", _text(R, "total_reward", "1" * 30), False),
    ("number 1e400", _text(R, "total_reward", "1e400"), False),
    ("NaN token", _text(R, "total_reward", "NaN"), False),
    ("-Infinity token", _text(R, "final_reward", "-Infinity"), False),
    ("split with a trailing newline (re.search $)", _text(R, "split", '"train\\n"'), True),
    ("split pattern mismatch", _text(R, "split", '"Train"'), False),
    ("unicode-escaped split", _text(R, "split", '"\\u0074rain"'), True),
    ("lone high surrogate", _text(R, "split", '"eval/\\ud800"'), False),
    ("lone low surrogate in a tag", _text(R, "tags", '["\\udc00"]'), False),
    ("surrogate pair in a tag", _text(R, "tags", '["\\ud83d\\ude00"]'), True),
    ("invalid UTF-8 in a tag", _text(R, "tags", b'["\xff"]'), False),
    ("raw control character", _text(R, "tags", '["a\x01"]'), False),
    ("undeclared top-level key", _line(R)[:-1] + b',"extra":1}', False),
    ("duplicate key, last wins", _line(R)[:-1] + b',"iteration":0}', True),
    ("duplicate key, last invalid", _line(R)[:-1] + b',"iteration":-1}', False),
    ("duplicate key, first invalid", b'{"iteration":-1,' + _line(R)[1:], False),
    ("trailing data", _line(R) + b" x", False),
    ("two records on a line", _line(R) + _line(R), False),
    ("BOM", b"\xef\xbb\xbf" + _line(R), False),
    ("form feed", _line(R) + b"\x0c", False),
    ("blank line", b"\n", False),
    ("array, not an object", b"[1]\n", False),
]
_step = R["steps"][0]
for label, extra, ok in [
    ("stop_reason and a scalar trace", {"stop_reason": "length", "trace": 3}, True),
    ("a small trace object", {"trace": {"spans": [1, [2.5, None]]}}, True),
    ("a trace nested 9 deep", {"trace": [[[[[[[[[1]]]]]]]]]}, False),
    ("a trace with a big integer", {"trace": [2**64]}, False),
    ("an undeclared step key (allowed by the schema)", {"ob_text": "hi"}, False),
    ("stop_reason of the wrong type", {"stop_reason": 1}, False),
    ("a null where a number belongs", {"ob_len": None}, False),
]:
    PINNED.append((label, _line(_rollout(steps=[{**_step, **extra}])), ok))
PINNED += [
    ("invalid UTF-8 in an undeclared step key", _line(R).replace(
        STEP_KEYS, STEP_KEYS + b',"\xff":1'), False),
    ("1e400 under an undeclared step key", _line(R).replace(
        STEP_KEYS, STEP_KEYS + b',"x":1e400'), False),
    ("deep value in a trace (past orjson's 1,024 levels)", _line(R).replace(
        STEP_KEYS, STEP_KEYS + b',"trace":' + b"[" * 1100 + b"]" * 1100), False),
]


@pytest.mark.parametrize(("label", "line", "accepted"), PINNED, ids=[p[0] for p in PINNED])
def test_pinned_divergences(label: str, line: bytes, accepted: bool, rollout: Any) -> None:
    """Each known msgspec/orjson/jsonschema divergence is refused (or accepted) as listed."""
    decode, valid = rollout
    assert sound(decode, valid, line) is accepted


def test_refused_integers_are_valid_for_jsonschema(rollout: Any) -> None:
    """1.0 and 2**63 for an integer are valid records the decoder leaves to the exact path."""
    _, valid = rollout
    for raw in ("1.0", str(2**63)):
        assert valid(orjson.loads(_text(R, "iteration", raw)))


def test_decoded_record_reads_by_attribute(rollout: Any) -> None:
    """The decoded record exposes the JSON keys as attributes; optional keys default to UNSET."""
    decode, _ = rollout
    rec = decode(_line(R))
    assert (rec.iteration, rec.split, rec.steps[0].reward) == (0, "train", 1.0)
    assert rec.steps[0].stop_reason is msgspec.UNSET


def test_float_parsing_matches_orjson() -> None:
    """msgspec and orjson read the same double from hard decimal strings (rounding, subnormals,
    long mantissas, overflow refused by both)."""
    decode = compile_decoder({"type": "array", "items": {"type": "number"}})
    assert decode is not None
    texts = ["2.2250738585072011e-308", "4.9e-324", "2.4703282292062327e-324",
             "2.4703282292062328e-324", "1e-400", "1.7976931348623157e308", "10e308",
             "1.7976931348623159e308", "9007199254740993.0", "0.30000000000000004",
             "1" + "0" * 400 + "e-400", "0." + "0" * 400 + "1e400", "-0.0", "123.456e-7"]
    texts += [repr(x) for x in (0.1, 1 / 3, 5e-324, 1.5e300, -2.5e-310)]
    overflow = {"10e308", "1.7976931348623159e308"}
    valid = oracle({"type": "array", "items": {"type": "number"}})
    for t in texts:
        assert sound(decode, valid, f"[{t}]".encode()) is (t not in overflow), t


NUMBER_TOKENS = ["1.", ".5", "01", "-0", "-01", "-", "1e", "1e+", "1E5", "1e-5", "1E+05", "+1",
                 "0x1", "1_0", "-.5", "1.e5", "00", "0.0e0", "-0.0", "1e-0", "١", "1 2", "1,",
                 "1.5e308", "4e-324", "2e-324", "9" * 19, "-9223372036854775808"]


@pytest.mark.parametrize("token", NUMBER_TOKENS)
def test_number_token_forms_are_sound(token: str, rollout: Any) -> None:
    """Odd number spellings in a number and an integer field: accepted only as orjson reads
    them, and only when valid."""
    decode, valid = rollout
    for key in ("total_reward", "final_ob_len"):
        sound(decode, valid, _text(R, key, token))
