"""Properties of the resume reader's backward scan: it agrees with a forward reading of the file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import resume
from rlio._codec import lines as lines_mod
from rlio._codec.jsonl import DecodeError, decode
from rlio.storage import LocalStorage

_LINE_PIECES = st.lists(
    st.one_of(st.binary(max_size=40), st.sampled_from([b"", b" ", b"\r", b"{", b"x" * 70])),
    max_size=25,
)


@pytest.fixture(autouse=True)
def _tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few bytes so lines cross chunk boundaries in every way."""
    monkeypatch.setattr(lines_mod, "_CHUNK", 7)
    monkeypatch.setattr(lines_mod, "_MAX_CHUNK", 32)
    monkeypatch.setattr(lines_mod, "_COUNT_CHUNK", 5)


@settings(max_examples=300)
@given(pieces=_LINE_PIECES, terminated=st.booleans())
def test_backward_segments_are_the_lines_in_reverse(pieces: list[bytes], terminated: bool) -> None:
    """The resume reader's backward scan yields exactly the file's lines, last first, with offsets
    and terminators."""
    lines = [p.replace(b"\n", b"") for p in pieces]
    data = b"\n".join(lines) + (b"\n" if terminated and lines else b"")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "f").write_bytes(data)
        got = list(resume._backward(LocalStorage(tmp), "f", len(data)))
        count = lines_mod.count_newlines(LocalStorage(tmp), "f", len(data))
    assert count == data.count(b"\n")
    expected = []
    start = 0
    parts = data.split(b"\n") if data else []
    if data.endswith(b"\n"):
        parts = parts[:-1]
    for i, part in enumerate(parts):
        last_unterminated = i == len(parts) - 1 and not data.endswith(b"\n")
        expected.append((start, part, not last_unterminated))
        start += len(part) + 1
    assert [(s.start, s.data, s.terminated) for s in got] == expected[::-1]


def _reference(data: bytes, key: str) -> tuple[dict[str, Any] | None, int | None, bool]:
    """Parse the whole ledger forwards: (last resumable record, its 1-based line, torn_tail)."""
    lines = data.split(b"\n")
    terminated = data.endswith(b"\n")
    if terminated or not data:
        lines = lines[:-1]
    torn, best, best_line = False, None, None
    for i, raw in enumerate(lines):
        is_last = i == len(lines) - 1
        if is_last and not terminated:
            torn = True
            continue
        if not raw.strip():
            continue
        try:
            value, _ = decode(raw)
        except DecodeError as exc:
            torn = torn or (is_last and exc.kind in ("json", "utf8"))
            continue
        if isinstance(value, dict) and value.get(key) is not None:
            best, best_line = value, i + 1
    return best, best_line, torn


_RECORDS = st.one_of(
    st.builds(lambda b: {"name": f"{b:06d}", "batch": b, "state_path": f"t://w/{b}"},
              st.integers(0, 999)),
    st.builds(lambda b: {"name": f"{b:06d}", "batch": b, "sampler_path": f"t://s/{b}"},
              st.integers(0, 999)),
)
_LEDGER_LINES = st.lists(
    st.one_of(_RECORDS.map(lambda r: json.dumps(r).encode()),
              st.sampled_from([b"", b"  ", b"{oops", b"[1]", b"null"])),
    max_size=20,
)


@settings(max_examples=300)
@given(lines=_LEDGER_LINES, tail=st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")),
       key=st.sampled_from(["state_path", "sampler_path"]))
def test_read_resume_state_agrees_with_a_full_forward_parse(
    lines: list[bytes], tail: bytes, key: str
) -> None:
    """read_resume_state finds the record, line and torn flag a full forward parse finds."""
    data = b"".join(x + b"\n" for x in lines) + tail
    want, want_line, want_torn = _reference(data, key)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "checkpoints.jsonl").write_bytes(data)
        state = resume.read_resume_state(tmp, required_key=key)
        if want is None:
            assert state is None
            assert resume.resume_document(None, run=tmp)["torn_tail"] == (
                bool(tail) or want_torn)
            return
        assert state is not None
        assert (state.checkpoint, state.line, state.torn_tail) == (want, want_line, want_torn)
        for skipped in state.skipped_lines:
            assert skipped.line > state.line
