"""What counts as a run, from the command line: every command refuses a non-run the same way, in
the same words (exit 2, one line), and writes nothing there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factories import cli, cookbook_run, write

from rlio import layout
from rlio.storage.run_root import no_run

RUN_FILES = ("a run holds metrics.jsonl, checkpoints.jsonl or per-iteration files, or "
             "config.json together with code.diff")
#: each command with the arguments that follow RUN
COMMANDS = {"validate": [], "report": [], "show": [], "resume": [], "diff": ["RUN"],
            "export": ["OUT"]}


def _targets(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """Non-runs by name: (path, the reason the error line gives)."""
    hf = tmp_path / "hfmodel"
    write(hf, "config.json", '{"architectures": ["LlamaForCausalLM"]}')
    write(hf, "tokenizer.json", "{}")
    (tmp_path / "empty").mkdir()
    write(tmp_path, "afile.txt", "notes")
    return {
        "hfmodel": (str(hf), f"this folder holds no run files ({RUN_FILES})"),
        "empty": (str(tmp_path / "empty"), "the folder is empty"),
        "afile.txt": (str(tmp_path / "afile.txt"), "it is a file, not a run directory"),
        "absent": (str(tmp_path / "absent"), "no such file or directory"),
    }


def _snapshot(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_refuses_a_non_run_in_the_same_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """validate, report, show, resume, diff and export exit 2 with the one line
    "no run found at 'PATH': WHY" for a model folder, an empty folder, a file and a missing
    path, and write nothing anywhere."""
    run = cookbook_run(tmp_path / "run", 2)
    for path, why in _targets(tmp_path).values():
        before = _snapshot(tmp_path)
        extra = [str(run) if a == "RUN" else str(tmp_path / "out") for a in COMMANDS[command]]
        code, out, err = cli(capsys, command, path, *extra)
        assert code == 2, (command, path, out, err)
        assert err == f"rlio: error: no run found at '{path}': {why}\n", (command, path)
        assert _snapshot(tmp_path) == before, (command, path)  # nothing written, OUT included


def test_inside_a_run_the_hint_names_the_run(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """An iteration folder of a nested run says "this is iteration N of run X"; a run's file
    says it is a file of that run."""
    run = cookbook_run(tmp_path / "run", 2, layout_name="nested")
    code, _, err = cli(capsys, "report", str(run / "iteration_000001"))
    assert code == 2
    assert err == (f"rlio: error: no run found at '{run / 'iteration_000001'}': this is "
                   f"iteration 1 of run '{run}'\n")
    assert not (run / "iteration_000001" / layout.REPORT).exists()
    code, _, err = cli(capsys, "show", str(run / layout.METRICS))
    assert code == 2
    assert err == (f"rlio: error: no run found at '{run / layout.METRICS}': it is a file of "
                   f"run '{run}', not a run directory\n")


@pytest.mark.parametrize(("names", "is_run"), [
    ({"metrics.jsonl"}, True), ({"checkpoints.jsonl"}, True),
    ({"train_iteration_000000.html"}, True), ({"iteration_000003"}, True),
    ({"config.json", "code.diff"}, True), ({"config.json"}, False), ({"code.diff"}, False),
    ({"config.json", "tokenizer.json", "model.safetensors"}, False), (set(), False),
    ({"timing_spans.jsonl", "logs.log"}, False)])
def test_what_counts_as_a_run(names: set[str], is_run: bool) -> None:
    """A run holds metrics.jsonl, checkpoints.jsonl or per-iteration files, or config.json
    together with code.diff; nothing else (a model folder's config.json alone) is one."""
    assert layout.is_run_root(names) is is_run


def test_validate_finds_no_run_in_a_tree_of_model_folders(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tree of model folders (config.json at many depths) holds no run: exit 2, not "ok"."""
    for sub in ("a", "b/c", "sdk/lib/d"):
        write(tmp_path / sub, "config.json", "{}")
    code, out, err = cli(capsys, "validate", str(tmp_path))
    assert code == 2 and out == ""
    assert err == f"rlio: error: no run found at '{tmp_path}': this folder holds no run files " \
                  f"({RUN_FILES})\n"


def test_export_options_after_the_paths_are_argparse_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`rlio export RUN --format parquet OUT --bogus` is a usage error (exit 2) in one line
    naming the option and where help is, never a run or OUT named --bogus; nothing is written."""
    run = cookbook_run(tmp_path / "run", 2)
    with pytest.raises(SystemExit) as info:
        cli(capsys, "export", str(run), "--format", "parquet", str(tmp_path / "out"), "--bogus")
    assert info.value.code == 2
    assert capsys.readouterr().err == ("rlio export: error: unrecognized arguments: --bogus "
                                       "(see 'rlio export --help')\n")
    assert not (tmp_path / "out").exists()


def test_the_message_is_one_owner() -> None:
    """The CLI prints no_run()'s message as is (one function words every refusal)."""
    exc = no_run(os.devnull)
    assert exc.strerror == f"no run found at '{os.devnull}': it is a file, not a run directory"
