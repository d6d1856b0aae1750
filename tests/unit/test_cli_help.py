"""CLI help a person can use: `rlio` alone lists the commands; each command shows examples,
exit codes and the defaults of its options."""

from __future__ import annotations

import argparse

import pytest
from factories import run_cli

from rlio.cli.main import COMMANDS, build_parser


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """The registered subcommand parsers by name."""
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_rlio_alone_lists_every_command_and_exits_2() -> None:
    """`rlio` with no arguments prints each command with its one-line summary and exits 2."""
    done = run_cli()
    assert done.returncode == 2
    names = list(subcommands())
    assert len(names) == len(COMMANDS)
    for name in names:
        line = next((ln for ln in done.stderr.splitlines() if ln.strip().startswith(name + " ")),
                    None)
        assert line is not None and len(line.split()) > 2, (name, done.stderr)


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_each_command_help_has_examples_and_exit_codes(name: str) -> None:
    """Every subcommand's --help has an examples: block (2+ examples) and an exit codes: block."""
    text = subcommands()[name].format_help()
    assert "examples:" in text and "exit codes:" in text
    examples = text.split("examples:", 1)[1].split("exit codes:", 1)[0]
    assert sum(1 for ln in examples.splitlines() if ln.startswith("  rlio ")) >= 2
    codes = text.split("exit codes:", 1)[1]
    assert "  0  " in codes and "  2  " in codes


@pytest.mark.parametrize(("command", "option", "words"), [
    ("validate", "--format", ["text", "json", "github", "default: text"]),
    ("resume", "--format", ["text", "json", "default: text"]),
    ("demo", "--layout", ["flat", "nested", "default: flat"]),
    ("demo", "--iterations", ["default: 12"]),
    ("demo", "--seed", ["random seed", "default: 0"]),
])
def test_options_are_described_with_their_defaults(command: str, option: str,
                                                   words: list[str]) -> None:
    """--format, --layout, --iterations and --seed say what they do and show their default."""
    parser = subcommands()[command]
    action = next(a for a in parser._actions if option in a.option_strings)
    assert action.help
    text = " ".join(parser.format_help().split())
    at = text.index(option, text.index("options:"))
    described = text[at:at + 400]
    assert all(w in described for w in words), described


def test_flags_show_no_default() -> None:
    """A flag says what it does, never "(default: True)" (`rlio show --no-validate`)."""
    for name, parser in subcommands().items():
        for action in parser._actions:
            if action.nargs == 0 and action.option_strings and action.help:
                text = parser.format_help()
                assert "(default: True)" not in text and "(default: False)" not in text, name


def test_exit_codes_say_what_each_command_does() -> None:
    """`rlio schema` reads no run (exit 2: an unknown NAME); `rlio report` exits 0 for a run with
    findings and 2 when no run is found or the page cannot be written."""
    schema = subcommands()["schema"].format_help().split("exit codes:", 1)[1]
    assert "run" not in schema and "no schema of that NAME" in schema
    report = " ".join(subcommands()["report"].format_help().split("exit codes:", 1)[1].split())
    assert "0 the page was written (a run with findings too" in report
    assert "2 no run found at RUN (nothing is written), the page could not be written" in report
