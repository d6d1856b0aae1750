"""What every subcommand shares: exit codes, error lines, JSON output, terminal-safe text, and
one way of declaring a subcommand's help (summary, examples, exit codes)."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import orjson

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2

#: The exit codes most commands share, for their ``--help`` epilog.
STANDARD_EXIT_CODES = (
    (EXIT_OK, "success"),
    (EXIT_UNREADABLE, "the run could not be read, or the command was misused"),
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: object) -> str:
    """``text`` with control characters (newline, ESC, ...) shown as ``\\n``/``\\xNN`` escapes.

    File names and values from a run are untrusted: a name holding a newline would forge an
    output line, an ESC sequence would reach the terminal.
    """
    return _CONTROL.sub(_escape_control, str(text))


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char, f"\\x{ord(char):02x}")


def fail(message: str) -> int:
    """Write ``rlio: error: message`` (terminal-safe) to stderr and return exit code 2."""
    sys.stderr.write(f"rlio: error: {printable(message)}\n")
    return EXIT_UNREADABLE


def emit_json(obj: Any, out: TextIO | None = None) -> None:
    """Write ``obj`` as indented JSON and a newline (JSON escapes every control character)."""
    (out or sys.stdout).write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's example layout and shows each option's default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        default = action.default
        if (  # by identity: a default of 0 is shown, although 0 == False
            not any(default is v for v in (None, False, argparse.SUPPRESS))
            and default != []
            and "%(default)" not in help_text
            and action.option_strings
        ):
            help_text += " (default: %(default)s)"
        return help_text


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str | None = None,
    examples: Sequence[tuple[str, str]] = (),
    exit_codes: Sequence[tuple[int, str]] = STANDARD_EXIT_CODES,
) -> argparse.ArgumentParser:
    """Add subcommand ``name``: one-line ``summary``, and an epilog of examples and exit codes.

    ``examples`` are ``(command line, what it does)`` pairs.
    """
    epilog = []
    if examples:
        epilog.append("examples:")
        for line, meaning in examples:
            epilog.append(f"  {line}")
            epilog.append(f"      {meaning}")
    epilog.append("exit codes:")
    epilog.extend(f"  {code}  {meaning}" for code, meaning in exit_codes)
    return sub.add_parser(
        name,
        help=summary,
        description=description or summary,
        epilog="\n".join(epilog),
        formatter_class=HelpFormatter,
    )
