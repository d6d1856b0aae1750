"""What every subcommand shares: exit codes, error lines, JSON output, terminal-safe text, and
one way of declaring a subcommand's help (summary, examples, exit codes)."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

import orjson

from rlio.errors import install_line

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2

#: The exit codes most commands share, for their ``--help`` epilog.
STANDARD_EXIT_CODES = (
    (EXIT_OK, "success"),
    (EXIT_UNREADABLE, "no run found at RUN or it could not be read, or the command was misused"),
)

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: object) -> str:
    """``text`` with control characters shown as ``\\n``/``\\xNN`` escapes: names and values
    from a run are untrusted (a newline would forge an output line, ESC reach the terminal)."""
    return _CONTROL.sub(lambda m: _NAMED.get(m[0], f"\\x{ord(m[0]):02x}"), str(text))


def fail(message: str) -> int:
    """Write ``rlio: error: message`` (terminal-safe) to stderr and return exit code 2."""
    sys.stderr.write(f"rlio: error: {printable(message)}\n")
    return EXIT_UNREADABLE


def run_failure(location: str, exc: OSError) -> int:
    """Exit 2 with the one line saying why ``location`` cannot be read as a run: a non-run in
    the words every command shares (``rlio.storage.run_root.no_run``), else what failed."""
    from rlio.errors import NotARunError

    if isinstance(exc, NotARunError) and exc.strerror:
        return fail(exc.strerror)
    why = exc.strerror or str(exc)
    if not why.startswith("cannot read run"):
        why = f"cannot read run {location!r}: {why}"
    return fail(why)


def emit_json(obj: Any) -> None:
    """Write ``obj`` as indented JSON and a newline (JSON escapes every control character)."""
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's example layout and shows each option's default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        default = action.default
        if (  # by identity: a default of 0 is shown, although 0 == False
            action.nargs != 0  # a flag (--no-validate): its default is the flag's absence
            and not any(default is v for v in (None, False, argparse.SUPPRESS))
            and default != []
            and "%(default)" not in help_text
            and action.option_strings
        ):
            help_text += " (default: %(default)s)"
        return help_text


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (the problem and where help is), exit 2:
    the usage block argparse prints first says nothing the error does not."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_UNREADABLE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    summary: str,
    description: str | None = None,
    examples: Sequence[tuple[str, str]] = (),
    exit_codes: Sequence[tuple[int, str]] = STANDARD_EXIT_CODES,
) -> argparse.ArgumentParser:
    """Add subcommand ``name``: one-line ``summary``, and an epilog of examples (``(command line,
    what it does)`` pairs) and exit codes."""
    epilog = ["examples:", *(f"  {line}\n      {meaning}" for line, meaning in examples)
              ] if examples else []
    epilog += ["exit codes:", *(f"  {code}  {meaning}" for code, meaning in exit_codes)]
    return sub.add_parser(name, help=summary, description=description or summary,
                          epilog="\n".join(epilog), formatter_class=HelpFormatter)


def add_parallel_options(p: argparse.ArgumentParser, what: str) -> None:
    """``--jobs N`` and ``--dask ADDRESS``: where the runs are read (``what``: "read")."""
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help=f"runs {what} at once in a process pool (default: the CPU count)")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help=f"runs {what} on the Dask cluster whose scheduler is at ADDRESS "
                   "(needs rlio[dask])")


@contextlib.contextmanager
def dask_executor(address: str | None) -> Iterator[Any]:
    """The executor of a Dask client connected to ``address`` (None: yields None), closed after.

    Raises:
        ValueError: distributed is not installed, or the scheduler cannot be reached (the
            message says which).
    """
    if address is None:
        yield None
        return
    try:
        import distributed
    except ImportError as exc:
        need = install_line("dask")
        raise ValueError(f"--dask needs the distributed package (the extra rlio[dask]): {need}"
                         ) from exc
    try:
        client: Any = distributed.Client(address, timeout=30)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as exc:
        raise ValueError(f"cannot connect to the Dask scheduler at {address}: {exc}") from exc
    try:
        yield client.get_executor()
    finally:
        client.close()
