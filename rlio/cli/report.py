"""``rlio report``: one self-contained HTML page for a whole run."""

from __future__ import annotations

import argparse
import os
import sys

from rlio.cli.common import (
    EXIT_OK,
    EXIT_UNREADABLE,
    add_command,
    fail,
    printable,
    run_failure,
)


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
        exit_codes=(
            (EXIT_OK, "the page was written (a run with findings too: the page shows them)"),
            (EXIT_UNREADABLE, "no run found at RUN (nothing is written), the page could not be "
                              "written, or the command was misused"),
        ),
    )
    p.add_argument("run", metavar="RUN", help="local path or URI")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write the page (default: RUN/report.html)")
    p.add_argument("--metric", action="append", default=[], metavar="KEY",
                   help="also chart this metric (repeatable; the usual keys the run logged are "
                   "charted anyway); a key the run never logged is an error naming the closest")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the report of ``args.run``."""
    from rlio.errors import RunNotFoundError, UnknownMetricError
    from rlio.report import write_run_report

    try:
        where = write_run_report(args.run, output=args.output, metrics=args.metric)
    except (RunNotFoundError, NotADirectoryError) as exc:
        return run_failure(args.run, exc)
    except UnknownMetricError as exc:
        return fail(f"{exc}; nothing was written")
    except UnicodeError as exc:  # a file name (or the path) that is not UTF-8
        return fail(f"cannot write a report of run {args.run!r}: a file name in it is not "
                    f"valid UTF-8 ({exc})")
    except OSError as exc:  # a run (or output folder) that cannot be written into
        target = exc.filename or args.output or args.run
        return fail(f"cannot write the report of run {args.run!r} to {target!r}: "
                    f"{exc.strerror or exc}; pass -o FILE to write it elsewhere")
    sys.stdout.write(f"wrote {printable(os.fsencode(where).decode('utf-8', 'backslashreplace'))}\n")
    return EXIT_OK
