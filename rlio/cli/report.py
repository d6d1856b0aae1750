"""``rlio report``: one self-contained HTML page for a whole run."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, add_command, fail


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "report",
        summary="one self-contained HTML page for a whole run",
        examples=(
            ("rlio report runs/exp1", "write runs/exp1/report.html"),
            ("rlio report runs/exp1 -o /tmp/exp1.html --metric optim/lr",
             "write elsewhere and also chart optim/lr"),
        ),
    )
    p.add_argument("run", metavar="RUN", help="local path or URI")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write the page (default: RUN/report.html)")
    p.add_argument("--metric", action="append", default=[], metavar="KEY",
                   help="also chart this metric (repeatable)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the report of ``args.run``."""
    from rlio.errors import RunNotFoundError
    from rlio.report import write_run_report

    try:
        where = write_run_report(args.run, output=args.output, metrics=args.metric)
    except (RunNotFoundError, NotADirectoryError) as exc:
        return fail(f"cannot read run {args.run!r}: {exc.strerror or exc}")
    sys.stdout.write(f"wrote {where}\n")
    return EXIT_OK
