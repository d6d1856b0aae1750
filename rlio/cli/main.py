"""Assemble the subcommands into one parser and run the chosen one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rlio.cli import demo, diff, export, report, resume, schema, show, validate
from rlio.cli.common import EXIT_OK, EXIT_UNREADABLE, fail
from rlio.errors import MissingExtraError

#: Subcommand modules in the order ``rlio`` lists them.
COMMANDS = (validate, resume, report, show, diff, export, demo, schema)
_NAMES = frozenset(m.__name__.rpartition(".")[2] for m in COMMANDS)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``rlio`` parser with every subcommand registered (or just ``only``, when named)."""
    parser = argparse.ArgumentParser(
        prog="rlio",
        description="Write, validate, resume and read RL run directories "
        "(local folders or gs:// URIs).",
        epilog="Run 'rlio COMMAND --help' for a command's options, examples and exit codes.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        if only is None or module.__name__.rpartition(".")[2] == only:
            module.register(sub)
    return parser


def _version() -> str:
    from rlio._version import __version__

    return f"rlio {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # A named command registers alone: building every subparser's help costs a whole command's
    # start (``rlio resume`` is one short process). Anything else gets the full parser.
    named = argv[0] if argv and argv[0] in _NAMES else None
    parser = build_parser(named)
    args = parser.parse_args(argv)
    if args.command is None:
        sys.stderr.write(parser.format_help())
        return EXIT_UNREADABLE
    try:
        code: int = args.handler(args)
    except BrokenPipeError:
        return EXIT_OK
    except MissingExtraError as exc:  # e.g. gs:// without gcsfs: one line naming the install
        return fail(str(exc))
    return code
