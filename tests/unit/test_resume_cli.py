"""Tests of `rlio resume`: JSON and text output and exit codes, in-process and as a real command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import cli, run_cli, write


def test_json_output_is_the_documented_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json prints exactly the six documented keys with the state's values."""
    write(tmp_path, "checkpoints.jsonl",
           b'{"name":"000004","batch":4,"epoch":2,"state_path":"tinker://r/w/4","rolling":true}\n'
           b'{"name":"000005","batch":5,"sampler_path":"tinker://r/s/5"}\n')
    write(tmp_path, "metrics.jsonl", b"".join(b'{"step": %d}\n' % i for i in range(7)))
    write(tmp_path, "iteration_000004/train_logtree.json", b"{}")
    code, out, _ = cli(capsys, "resume", str(tmp_path), "--format", "json", "--line")
    assert code == 0
    assert json.loads(out) == {
        "checkpoint": {"name": "000004", "batch": 4, "epoch": 2, "state_path": "tinker://r/w/4",
                       "rolling": True},
        "line": 1, "next_batch": 4, "next_epoch": 2, "torn_tail": False,
        "superseded": {"metrics_lines": [5, 7],
                       "iteration_files": ["iteration_000004/train_logtree.json"]},
    }


def test_json_without_line_keeps_the_keys_with_null_line_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --line the document has the same keys, line and metrics_lines null (nothing is
    counted from the start of a file)."""
    write(tmp_path, "checkpoints.jsonl",
           b'{"name":"000004","batch":4,"state_path":"tinker://r/w/4"}\n{"name":"000005"}\n')
    write(tmp_path, "metrics.jsonl", b"".join(b'{"step": %d}\n' % i for i in range(7)))
    code, out, _ = cli(capsys, "resume", str(tmp_path), "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "checkpoint": {"name": "000004", "batch": 4, "state_path": "tinker://r/w/4"},
        "line": None, "next_batch": 4, "next_epoch": None, "torn_tail": False,
        "superseded": {"metrics_lines": None, "iteration_files": []},
    }


def test_required_key_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--required-key sampler_path resumes from the last record with a sampler_path."""
    write(tmp_path, "checkpoints.jsonl",
           b'{"name":"000004","batch":4,"state_path":"tinker://r/w/4"}\n'
           b'{"name":"000005","batch":5,"sampler_path":"tinker://r/s/5"}\n')
    code, out, _ = cli(capsys, "resume", str(tmp_path), "--format", "json", "--required-key",
                        "sampler_path")
    assert code == 0 and json.loads(out)["next_batch"] == 5


def test_no_checkpoint_exits_zero_with_null_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run without a resumable checkpoint exits 0 and prints checkpoint null, torn tail shown."""
    write(tmp_path, "checkpoints.jsonl", b'{"name":"0000')
    code, out, _ = cli(capsys, "resume", str(tmp_path), "--format", "json")
    assert code == 0
    assert json.loads(out) == {
        "checkpoint": None, "line": None, "next_batch": None, "next_epoch": None,
        "torn_tail": True, "superseded": {"metrics_lines": None, "iteration_files": []},
    }
    code, out, _ = cli(capsys, "resume", str(tmp_path))
    assert code == 0 and "no resumable checkpoint" in out


def test_text_output_describes_the_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text format names the checkpoint, its line (from the end, or from the start with
    --line), the restart batch and how many metrics lines are superseded."""
    write(tmp_path, "checkpoints.jsonl", b'\n{"name":"000003","batch":3,"state_path":"t://w"}\n'
                                         b'\n{"name":"x"')
    write(tmp_path, "metrics.jsonl", b"".join(b'{"step": %d}\n' % i for i in range(5)))
    code, out, _ = cli(capsys, "resume", str(tmp_path))
    assert code == 0
    assert out.startswith("resume from checkpoint '000003' (checkpoints.jsonl line 3 from the "
                          "end): restart at batch 3")
    assert "skipped checkpoints.jsonl last line: torn last line" in out
    assert "supersedes the last 2 metrics.jsonl lines (step >= 3)" in out
    code, out, _ = cli(capsys, "resume", str(tmp_path), "--line")
    assert code == 0
    assert out.startswith("resume from checkpoint '000003' (checkpoints.jsonl line 2): "
                          "restart at batch 3")
    assert "skipped checkpoints.jsonl line 4: torn last line" in out
    assert "supersedes metrics.jsonl lines 4-5 (step >= 3)" in out


def test_resumable_record_without_batch_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resumable record without batch: exit 2 and a message naming the file and line."""
    write(tmp_path, "checkpoints.jsonl",
           b'{"name":"000001","batch":1,"state_path":"t://1"}\n{"name":"final","state_path":"t://f"}\n')
    code, out, err = cli(capsys, "resume", str(tmp_path), "--format", "json")
    assert code == 2 and out == ""
    assert "checkpoints.jsonl:2: resumable checkpoint 'final'" in err
    assert "has state_path but no batch" in err


def test_missing_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run directory that does not exist: exit 2 with a message naming it."""
    code, _, err = cli(capsys, "resume", str(tmp_path / "nope"), "--format", "json")
    assert code == 2 and "nope" in err


def test_real_command_prints_json(tmp_path: Path) -> None:
    """`python -m rlio resume RUN --format json` works as a real process."""
    write(tmp_path, "checkpoints.jsonl", b'{"name":"000002","batch":2,"state_path":"t://2"}\n')
    proc = run_cli("resume", str(tmp_path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["checkpoint"]["name"] == "000002"


@pytest.mark.parametrize(("argv", "expected"), [
    (["runs/a"], ("runs/a", "text", "state_path", False)),
    (["runs/a", "--line"], ("runs/a", "text", "state_path", True)),
    (["--format", "json", "runs/a"], ("runs/a", "json", "state_path", False)),
    (["runs/a", "--format=text", "--required-key", "sampler_path"],
     ("runs/a", "text", "sampler_path", False)),
    (["--required-key=", "runs/a", "--line", "--format", "json", "--format", "text"],
     ("runs/a", "text", "", True)),
])
def test_command_lines_read_as_documented(argv: list[str], expected: tuple[object, ...]) -> None:
    """Options before or after RUN, ``--opt=value``, an empty value and a repeated option."""
    from rlio.cli.main import build_parser

    args = build_parser("resume").parse_args(["resume", *argv])
    assert (args.run, args.format, args.required_key, args.line) == expected


def test_help_and_bad_options(tmp_path: Path) -> None:
    """`rlio resume --help` prints the usage; a bad --format exits 2 naming the choices."""
    helped = run_cli("resume", "--help")
    assert helped.returncode == 0 and "usage: rlio resume" in helped.stdout
    bad = run_cli("resume", str(tmp_path), "--format", "xml")
    assert bad.returncode == 2 and "invalid choice: 'xml'" in bad.stderr


def test_text_output_is_one_line_per_line_of_the_description(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text output prints the description's lines as lines, not as escaped newlines."""
    write(tmp_path, "checkpoints.jsonl", b'{"name":"000002","batch":2,"state_path":"t://2"}\n')
    code, out, _ = cli(capsys, "resume", str(tmp_path))
    assert code == 0 and "\\n" not in out
    assert out.splitlines()[1] == "  state_path: t://2"


def test_a_newline_in_a_field_cannot_forge_an_output_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A state_path holding a newline (and ESC) prints escaped on its own line: the output has
    exactly the description's lines, none forged from the ledger."""
    write(tmp_path, "checkpoints.jsonl",
          b'{"name":"000002","batch":2,"state_path":'
          b'"t://2\\nresume from checkpoint \'x\'\\u001b[2J"}\n')
    code, out, _ = cli(capsys, "resume", str(tmp_path))
    assert code == 0 and "\x1b" not in out
    lines = out.splitlines()
    assert lines[1] == "  state_path: t://2\\nresume from checkpoint 'x'\\x1b[2J"
    assert sum(line.startswith("resume from") for line in lines) == 1


def test_a_folder_that_is_not_a_run_is_no_fresh_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rlio resume` of a model folder (config.json only) is "no run found", exit 2, not
    "start from iteration 0"."""
    write(tmp_path, "config.json", "{}")
    code, out, err = cli(capsys, "resume", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith(f"rlio: error: no run found at '{tmp_path}': this folder holds no run")
