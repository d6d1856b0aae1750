"""Assemble the subcommands into one parser and run the chosen one."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType

from rlio.cli.common import EXIT_OK, EXIT_UNREADABLE, fail
from rlio.errors import MissingExtraError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

#: Subcommands in the order ``rlio`` lists them; each is the module ``rlio.cli.<name>``, imported
#: only when its parser is built (one command's start does not pay for the others' imports).
COMMANDS = ("validate", "resume", "report", "show", "diff", "export", "demo", "schema")


def _command(name: str) -> ModuleType:
    module = f"rlio.cli.{name}"
    __import__(module)  # not importlib.import_module: importlib (and warnings) cost a start
    return sys.modules[module]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``rlio`` parser with every subcommand registered (or just ``only``, when named)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="rlio",
        description="Write, validate, resume and read RL run directories "
        "(local folders or gs:// URIs).",
        epilog="Run 'rlio COMMAND --help' for a command's options, examples and exit codes.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is None or name == only:
            _command(name).register(sub)
    return parser


def _version() -> str:
    from rlio._version import __version__

    return f"rlio {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    Called as the program (no ``argv``), ``rlio validate`` ends the process itself once its
    output is flushed (``exit_now``); given ``argv``, every command returns its code.
    """
    if argv is None:
        code = _main(sys.argv[1:])
        if sys.argv[1:2] == ["validate"]:
            exit_now(code)
        return code
    return _main(list(argv))


def exit_now(code: int) -> None:
    """End the process with ``code`` at once, skipping the interpreter's teardown, when nothing
    is left for it to do; else return (the caller then exits as usual).

    Tearing down the modules and objects of a validation costs about as much as the start of a
    small run's ``rlio validate``. Nothing is lost by skipping it when standard output and error
    flush cleanly, no exit handler is registered (a temporary directory's cleanup, a pool's
    shutdown register one) and no other thread runs.
    """
    import atexit
    import os

    count = getattr(atexit, "_ncallbacks", None)
    threading = sys.modules.get("threading")
    if count is None or count() or (threading is not None and threading.active_count() > 1):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # a closed pipe: the usual exit reports it as it always did
        return
    os._exit(code)


def _main(argv: list[str]) -> int:
    if argv and argv[0] in ("resume", "validate"):
        # ``rlio resume`` is one short process a restart script runs, and so is ``rlio validate``
        # of a small run: their plain command lines skip argparse (building a parser costs as
        # much as the work); anything else (--help, a misspelt option) goes through the full
        # parser below.
        args: Any = _command(argv[0]).parse_plain(argv[1:])
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
