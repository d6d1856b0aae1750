"""Assemble the subcommands into one parser and run the chosen one."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from rlio._version import __version__
from rlio.cli.common import EXIT_OK, EXIT_UNREADABLE, fail
from rlio.errors import MissingExtraError

#: Subcommands in the order ``rlio`` lists them; each is the module ``rlio.cli.<name>``, imported
#: only when its parser is built (one command's start does not pay for the others' imports).
COMMANDS = ("validate", "resume", "report", "show", "diff", "export", "demo", "schema")


def _command(name: str) -> ModuleType:
    return importlib.import_module(f"rlio.cli.{name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``rlio`` parser with every subcommand registered (or just ``only``, when named)."""
    parser = argparse.ArgumentParser(
        prog="rlio",
        description="Write, validate, resume and read RL run directories "
        "(local folders or gs:// URIs).",
        epilog="Run 'rlio COMMAND --help' for a command's options, examples and exit codes.",
    )
    parser.add_argument("--version", action="version", version=f"rlio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is None or name == only:
            _command(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "resume":
        # ``rlio resume`` is one short process a restart script runs: its plain command lines
        # skip argparse (building a parser costs as much as the work; benchmarks/resume_floor.py);
        # anything else (--help, a misspelt option) goes through the full parser below.
        args: Any = _command("resume").parse_plain(argv[1:])
        if args is not None:
            return _dispatch(args)
    # A named command registers alone: building every subparser's help costs a whole command's
    # start. Anything else gets the full parser.
    named = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(named)
    args = parser.parse_args(argv)
    if args.command is None:
        sys.stderr.write(parser.format_help())
        return EXIT_UNREADABLE
    return _dispatch(args)


def _dispatch(args: Any) -> int:
    """Run the chosen command's handler; a closed pipe is success, a missing extra one line."""
    try:
        code: int = args.handler(args)
    except BrokenPipeError:
        return EXIT_OK
    except MissingExtraError as exc:  # e.g. gs:// without gcsfs: one line naming the install
        return fail(str(exc))
    return code
