"""``rlio diff``: two runs side by side (config differences, metrics at matching steps)."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, add_command, fail, printable, run_failure


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``diff`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "diff",
        summary="compare two runs: config differences and metrics at matching steps",
        description="Config differences by key path, then a table of each metric's last, min "
        "and max over the steps both runs logged. Read-only.",
        examples=(
            ("rlio diff runs/a runs/b", "config differences and the metrics both runs logged"),
            ("rlio diff runs/a gs://bucket/b --metric env/all/reward/total --metric optim/lr",
             "only the chosen metrics"),
        ),
    )
    p.add_argument("run_a", metavar="RUN_A", help="local path or URI")
    p.add_argument("run_b", metavar="RUN_B", help="local path or URI")
    p.add_argument("--metric", action="append", default=[], metavar="KEY",
                   help="a metric to compare (repeatable; default: numeric keys both logged)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the comparison of ``args.run_a`` and ``args.run_b``."""
    from rlio.reader import open_run
    from rlio.reader.summary import diff_lines

    runs = []
    for location in (args.run_a, args.run_b):
        try:
            runs.append(open_run(location))
        except OSError as exc:
            return run_failure(location, exc)
    try:
        lines = diff_lines(runs[0], runs[1], args.metric)
    except OSError as exc:
        return fail(f"cannot read runs: {exc}")
    except ValueError as exc:  # a --metric neither run logged
        return fail(str(exc))
    sys.stdout.write("".join(printable(line) + "\n" for line in lines))
    return EXIT_OK
