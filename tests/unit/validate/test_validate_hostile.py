"""Hostile input never crashes or hangs validate_run: each is a finding, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest
from factories import cookbook_run, errors, findings, has, jsonl, trajectory, write

import rlio.validate.engine as validate_mod
import rlio.validate.scan as stream_mod
from rlio import layout
from rlio.cli import main
from rlio.validate import validate_run

DEPTH = 200_000


def deep_logtree(depth: int) -> bytes:
    """A logtree whose root nests ``depth`` nodes (2 JSON levels each): past every parser."""
    head = b'{"title": "t", "started_at": "2025-03-01T12:00:00", "path": null, "root": '
    return (head + b'{"tag": "div", "attrs": {}, "children": [' * depth
            + b"]}" * depth + b"}")


def test_logtree_200k_levels_deep_is_rl106(tmp_path: Path) -> None:
    """A logtree nested 200,000 levels deep is one RL106 error for its file, no crash."""
    run = cookbook_run(tmp_path / "run")
    path = layout.iteration_path("flat", 0, "logtree")
    write(run, path, deep_logtree(DEPTH))
    found = [f for f in findings(run) if f[2] == path]
    assert found == [("RL106", "error", path, None, "")]


def test_deep_line_in_jsonl_is_rl106_at_its_line(tmp_path: Path) -> None:
    """A metrics line nested 200,000 deep is RL106 at that line; later lines are still read."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", jsonl([{"step": 0, "progress/batch": 0}]).encode()
          + b"[" * DEPTH + b"]" * DEPTH + b"\n" + b'{"step": 1, "progress/batch": 1}\n')
    found = findings(run)
    assert ("RL106", "error", "metrics.jsonl", 2, "") in found
    assert not [f for f in found if f[0] == "RL408"]


def test_deep_line_with_nan_tokens_is_rl106(tmp_path: Path) -> None:
    """Deep nesting plus NaN tokens (the tolerant parser's path) is still RL106, no crash."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", b"[" * 5000 + b"NaN" + b"]" * 5000 + b"\n"
          + b'{"step": 0, "progress/batch": 0}\n')
    assert has(findings(run), "RL106", "metrics.jsonl", 1)


def test_ten_megabyte_string_value(tmp_path: Path) -> None:
    """A 10 MB string in a metrics line and in a summary is valid data plus an RL115 info."""
    run = cookbook_run(tmp_path / "run")
    big = "x" * 10_000_000
    write(run, "metrics.jsonl", jsonl([{"step": 0, "progress/batch": 0, "note": big},
                                       {"step": 1, "progress/batch": 1}]))
    rec = trajectory(1, 0, 0)
    rec["steps"][0]["logs"]["response"] = big
    path = layout.iteration_path("flat", 1, "rollout_summaries")
    write(run, path, jsonl([rec]))
    found = findings(run)
    assert ("RL115", "info", "metrics.jsonl", 1, "") in found
    assert ("RL115", "info", path, 1, "") in found
    assert errors(run) == []


def test_invalid_utf8_everywhere(tmp_path: Path) -> None:
    """Invalid UTF-8 is RL101 at the JSONL line or document, RL108 in code.diff."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", b'{"step": 0, "progress/batch": 0}\n{"step": 1, "k": "\xff\xfe"}\n'
          b'{"step": 2, "progress/batch": 2}\n')
    write(run, "config.json", b'{"name": "caf\xe9"}')
    lt = layout.iteration_path("flat", 0, "logtree")
    write(run, lt, b"\x80" + b"{}")
    write(run, "code.diff", b"\xc3")
    found = findings(run)
    assert ("RL101", "error", "metrics.jsonl", 2, "") in found
    assert ("RL101", "error", "config.json", None, "") in found
    assert ("RL101", "error", lt, None, "") in found
    assert ("RL108", "warning", "code.diff", None, "") in found


def test_binary_garbage_and_non_object_lines(tmp_path: Path) -> None:
    """NUL bytes, random binary and non-object JSON lines are findings, not crashes."""
    run = cookbook_run(tmp_path / "run")
    write(run, "checkpoints.jsonl", b"\x00\x00\x00\n[1, 2]\nnull\n\"x\"\n")
    write(run, "config.json", bytes(range(256)))
    found = findings(run)
    assert has(found, "RL102", "checkpoints.jsonl", 1)
    assert has(found, "RL201", "checkpoints.jsonl", 2)
    assert has(found, "RL201", "checkpoints.jsonl", 3)
    assert any(f[0] in ("RL101", "RL102") and f[2] == "config.json" for f in found)


def test_lone_surrogate_escape_and_crlf(tmp_path: Path) -> None:
    """A lone surrogate escape is reported; CRLF line ends are tolerated; output stays UTF-8."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", b'{"step": 0, "progress/batch": 0}\r\n'
          b'{"step": 1, "progress/batch": 1, "s": "\\ud800"}\r\n'
          b'{"step": 2, "progress/batch": 2}\r\n')
    report = validate_run(run)
    assert orjson.dumps(report.to_dict())
    assert has([(f.code, str(f.severity), f.file, f.line, f.pointer)
                     for f in report.findings], "RL102", "metrics.jsonl", 2)
    assert not [f for f in report.findings if f.file == "metrics.jsonl" and f.line == 1
                and f.severity.name == "ERROR"]


def test_symlinks_are_reported_never_followed(tmp_path: Path) -> None:
    """Symlinks (out of the run, inside it, to a directory, at a required name) are RL303."""
    run = cookbook_run(tmp_path / "run")
    outside = tmp_path / "secret.json"
    outside.write_text("{not json")
    os.symlink(outside, run / "escape.json")
    os.symlink(run / "metrics.jsonl", run / "latest.jsonl")
    os.symlink(tmp_path, run / "parent_dir")
    (run / "config.json").unlink()
    os.symlink(outside, run / "config.json")
    found = findings(run)
    for name in ("escape.json", "latest.jsonl", "parent_dir", "config.json"):
        assert ("RL303", "warning", name, None, "") in found, name
    assert ("RL109", "error", "config.json", None, "") in found
    assert not [f for f in found if f[0] in ("RL102", "RL201") and f[2] == "config.json"]


def test_directory_where_a_file_belongs(tmp_path: Path) -> None:
    """A directory named metrics.jsonl is RL107 (not RL109), its contents are not read."""
    run = cookbook_run(tmp_path / "run")
    (run / "metrics.jsonl").unlink()
    write(run, "metrics.jsonl/inner.txt", "x")
    (run / layout.iteration_path("flat", 0, "logtree")).unlink()
    (run / layout.iteration_path("flat", 0, "logtree")).mkdir()
    found = findings(run)
    assert ("RL107", "error", "metrics.jsonl", None, "") in found
    assert ("RL107", "error", layout.iteration_path("flat", 0, "logtree"), None, "") in found
    assert not [f for f in found if f[0] == "RL109"]
    assert not [f for f in found if "inner" in f[2]]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_fifo_is_never_opened(tmp_path: Path) -> None:
    """A fifo where a file belongs is RL107 and is never opened (no hang)."""
    run = cookbook_run(tmp_path / "run")
    (run / "metrics.jsonl").unlink()
    os.mkfifo(run / "metrics.jsonl")
    os.mkfifo(run / "pipe")
    found = findings(run)
    assert ("RL107", "error", "metrics.jsonl", None, "") in found
    assert ("RL301", "info", "pipe", None, "") in found


@pytest.mark.parametrize("kind", ["metrics", "config", "checkpoints", "logtree", "html",
                                  "rollout_summaries", "code_diff", "timing_spans"])
def test_empty_file_of_each_kind(tmp_path: Path, kind: str) -> None:
    """An empty file of every kind gives a finding or nothing, never a crash; JSON docs error."""
    run = cookbook_run(tmp_path / "run")
    rel = {"metrics": "metrics.jsonl", "config": "config.json",
           "checkpoints": "checkpoints.jsonl", "code_diff": "code.diff",
           "timing_spans": "timing_spans.jsonl"}.get(kind) or layout.iteration_path(
        "flat", 0, kind)  # type: ignore[arg-type]
    write(run, rel, b"")
    found = [f for f in findings(run) if f[2] == rel]
    expected = {"metrics": "RL116", "config": "RL111", "logtree": "RL111", "html": "RL110"}
    if kind in expected:
        assert [f[0] for f in found] == [expected[kind]]
    else:
        assert found == []


def test_undecodable_file_names_are_escaped(tmp_path: Path) -> None:
    """File names with bytes that are not UTF-8 appear escaped, and JSON output works."""
    run = cookbook_run(tmp_path / "run")
    with open(os.path.join(os.fsencode(run), b"bad\xffname.txt"), "wb") as f:
        f.write(b"x")
    report = validate_run(run)
    names = [f.file for f in report.findings if f.code == "RL301"]
    assert names == ["bad\\xffname.txt"]
    assert json.loads(orjson.dumps(report.to_dict()))


def test_line_over_the_limit_is_not_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """A line longer than the validator reads is RL114 and skipped; the next line is read."""
    monkeypatch.setattr(stream_mod, "MAX_LINE", 1024)
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", jsonl([{"step": 0, "progress/batch": 0, "x": "y" * 5000},
                                       {"step": 1, "progress/batch": 1}, {"step": 2, "z": [1]}]))
    found = findings(run)
    assert ("RL114", "error", "metrics.jsonl", 1, "") in found
    assert has(found, "RL201", "metrics.jsonl", 3)


def test_document_over_the_limit_is_not_parsed(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A config larger than the document limit is RL114 and not read."""
    monkeypatch.setattr(validate_mod, "MAX_DOCUMENT", 10)
    run = cookbook_run(tmp_path / "run")
    assert ("RL114", "error", "config.json", None, "") in findings(run)


def test_cli_exit_code_is_0_or_1_on_hostile_run(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Every hostile input together: the CLI prints JSON and exits 1, no traceback."""
    run = cookbook_run(tmp_path / "run")
    write(run, layout.iteration_path("flat", 0, "logtree"), deep_logtree(DEPTH))
    write(run, "metrics.jsonl", b'{"step": 0}\n\xff\n{"step": 1, "torn')
    os.symlink("/", run / "root_link")
    write(run, "config.json", b"")
    code = main(["validate", str(run), "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert doc["ok"] is False and doc["counts"]["error"] >= 3


def test_metrics_line_with_a_200k_digit_number_is_one_finding(tmp_path: Path) -> None:
    """A metrics line holding a 200,000-digit number is one RL102 at its line, found in one
    pass (the crash-damage scanner once took minutes on it); later lines are still read."""
    run = cookbook_run(tmp_path / "run")
    lines = (run / layout.METRICS).read_bytes().splitlines(keepends=True)
    bad = b'{"step": 1, "x": ' + b"7" * 200_000 + b"}\n"
    write(run, layout.METRICS, b"".join([lines[0], bad, *lines[1:]]))
    found = [f for f in findings(run) if f[2] == layout.METRICS and f[1] == "error"]
    assert found == [("RL102", "error", layout.METRICS, 2, "")]
