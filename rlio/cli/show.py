"""``rlio show``: one run at a glance (layout, iterations, metrics, trend, checkpoints, resume)."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, add_command, printable, run_failure


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``show`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "show",
        summary="a terminal summary of a run: what to look at first",
        description="Layout, iterations and evaluators, last metrics, the reward trend as a "
        "sparkline, checkpoints, the resume point and the validator's verdict. Read-only.",
        examples=(
            ("rlio show runs/exp1", "the summary of a local run"),
            ("rlio show gs://bucket/exp1 --no-validate", "skip the validation pass"),
        ),
    )
    p.add_argument("run", metavar="RUN", help="local path or URI")
    p.add_argument("--no-validate", dest="validate", action="store_false",
                   help="do not run the validator (faster on large runs)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the summary of ``args.run``."""
    from rlio.reader import open_run
    from rlio.reader.summary import show_lines

    try:
        lines = show_lines(open_run(args.run), validate=args.validate)
    except OSError as exc:
        return run_failure(args.run, exc)
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))
    return EXIT_OK
