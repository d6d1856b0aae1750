"""Read-only access to a run's files: JSONL records streamed line by line, JSON documents whole.

Every read goes through ``rlio.storage`` (local folders, ``gs://``, ``memory://``), the bounded
forward line reader and the tolerant decoder, so a reader sees what the validator sees: ``NaN``
tokens become ``float("nan")``; blank, unparseable, over-long and non-object lines are skipped
and counted; a torn last line (no final newline) is never read as a record. Nothing is written,
nothing is repaired.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_LINE, ForwardLines
from rlio.storage.base import Storage

__all__ = ["LineStats", "iter_records", "read_document"]


@dataclass
class LineStats:
    """What streaming one JSONL file passed over (filled in as the stream is consumed).

    Attributes:
        lines: lines met so far (1-based number of the last one).
        records: objects yielded.
        skipped: blank, unparseable, over-long and non-object lines.
        torn: the last line had no final newline: what a crash leaves, not read.
    """

    lines: int = 0
    records: int = 0
    skipped: int = 0
    torn: bool = False


def iter_records(
    storage: Storage, rel: str, stats: LineStats | None = None
) -> Iterator[dict[str, Any]]:
    """The objects of JSONL file ``rel`` in file order, one line in memory at a time.

    A missing file (or one that is not a regular file: a symlink is never followed) yields
    nothing. See the module docstring for what is skipped.
    """
    st = stats if stats is not None else LineStats()
    entry = storage.stat(rel)
    if entry is None or entry.kind != "file":
        return
    with storage.open_read(rel) as f:
        for number, raw, terminated in ForwardLines(f, max_line=MAX_LINE):
            st.lines = number
            if not terminated:
                st.torn = True  # a crash's torn tail (docs/format.md §2): readers ignore it
                return
            value = decode_line(raw)
            if value is None:
                st.skipped += 1
                continue
            st.records += 1
            yield value


def decode_line(raw: bytes | None) -> dict[str, Any] | None:
    """One terminated JSONL line as an object, or None when it is not one (blank, bad, long)."""
    if raw is None or not raw.strip():
        return None
    try:
        value, _ = decode(raw)
    except DecodeError:
        return None
    return value if isinstance(value, dict) else None


def read_document(storage: Storage, rel: str) -> Any:
    """The JSON document at ``rel`` (``NaN`` tokens as floats), or None when absent or unreadable
    as JSON (an empty, truncated or invalid document is what the validator reports)."""
    entry = storage.stat(rel)
    if entry is None or entry.kind != "file":
        return None
    try:
        value, _ = decode(storage.read_bytes(rel))
    except DecodeError:
        return None
    return value
