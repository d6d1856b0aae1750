"""Assemble the subcommands into one parser and run the chosen one."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from rlio._version import __version__
from rlio.cli.common import EXIT_OK, EXIT_UNREADABLE, Parser, fail
from rlio.errors import MissingExtraError, StorageUnavailableError

#: Subcommands in the order ``rlio`` lists them; each is the module ``rlio.cli.<name>``, imported
#: only when its parser is built (one command's start does not pay for the others' imports).
COMMANDS = ("validate", "resume", "report", "compare", "show", "top", "diff", "query", "export",
            "sync", "demo", "schema")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``rlio`` parser with every subcommand registered (or just ``only``, when named)."""
    parser = Parser(
        prog="rlio",
        description="Write, validate, resume and read RL run directories "
        "(local folders or gs://, s3:// and az:// URIs).",
        epilog="Run 'rlio COMMAND --help' for a command's options, examples and exit codes.",
    )
    parser.add_argument("--version", action="version", version=f"rlio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is None or name == only:
            importlib.import_module(f"rlio.cli.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # a named command registers alone: building every subparser's help costs a whole command's
    # start; anything else gets the full parser
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if args.command is None:
        sys.stderr.write(parser.format_help())
        return EXIT_UNREADABLE
    for name in ("gcsfs", "azure"):  # their retry logs are tracebacks; rlio says it in one line
        logging.getLogger(name).addHandler(logging.NullHandler())
    try:
        code: int = args.handler(args)
    except BrokenPipeError:  # a closed pipe (``| head``) is success
        return EXIT_OK
    except MissingExtraError as exc:  # e.g. gs:// without gcsfs: one line naming the install
        return fail(str(exc))
    except StorageUnavailableError as exc:  # offline, no credentials: one line, no traceback
        return fail(str(exc))
    return code
