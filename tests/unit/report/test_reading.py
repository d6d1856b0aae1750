"""rlio.report.reading: the report reads JSONL through the bounded line reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlio import layout
from rlio.report import reading
from rlio.storage import LocalStorage


def test_too_long_metrics_line_is_skipped_and_counted_as_bad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metrics line over the report's line bound is skipped unread, counted like an unparseable
    line, and the lines after it are read with their numbers."""
    monkeypatch.setattr(reading, "MAX_LINE", 100)
    (tmp_path / layout.METRICS).write_bytes(
        b'{"step": 0, "loss": 1.0}\n'
        + b'{"step": 1, "loss": "' + b"x" * 500 + b'"}\n'
        + b'{"step": 2, "loss": 0.5}\n'
    )
    scan = reading.read_metrics(LocalStorage(tmp_path), ["loss"])
    assert (scan.stats.lines, scan.stats.bad, scan.records) == (3, 1, 2)
    assert scan.columns["loss"].points() == ([0.0, 2.0], [1.0, 0.5])
    assert "1 line(s) are not JSON objects: skipped" in scan.stats.notes()


def test_checkpoint_lines_keep_their_numbers_after_a_too_long_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoint records after a too-long line keep their 1-based line numbers; a torn last line
    is noted, not read."""
    monkeypatch.setattr(reading, "MAX_LINE", 64)
    (tmp_path / layout.CHECKPOINTS).write_bytes(
        b'{"name": "' + b"n" * 100 + b'", "batch": 1}\n'
        + b'{"name": "000002", "batch": 2}\n'
        + b'{"name": "000003", "ba'
    )
    scan = reading.read_checkpoints(LocalStorage(tmp_path))
    assert [(line, rec["name"]) for line, rec, _ in scan.records] == [(2, "000002")]
    assert (scan.stats.bad, scan.stats.torn) == (1, True)
