"""``rlio compare``: one self-contained HTML page comparing the runs of a sweep."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rlio.cli import compare_prompts
from rlio.cli.common import (
    EXIT_OK,
    EXIT_UNREADABLE,
    add_command,
    add_parallel_options,
    dask_executor,
    fail,
    printable,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``compare`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "compare",
        summary="one HTML page comparing runs: table, config differences, overlay charts, prompts",
        examples=(
            ("rlio compare runs/sweep/ -o sweep.html",
             "every run under runs/sweep/, reward and loss keys charted by step"),
            ("rlio compare runs/a runs/b", "two runs, with the prompts both logged"),
            ("rlio compare gs://bucket/sweep/ --metric env/all/reward/total --x cost "
             "--sort env/all/reward/total:desc", "by cumulative cost, best run first"),
            ("rlio compare runs/sweep/ --baseline lr-1e-5",
             "every run's prompts against the run named lr-1e-5"),
            ("rlio compare --prompts runs/a runs/b --split test",
             "each test prompt's change from a to b, with intervals and a paired test"),
        ),
        exit_codes=(
            (EXIT_OK, "the page was written"),
            (EXIT_UNREADABLE, "a PATH holds no run or a run cannot be read (the page is still "
             "written when some run was read), or the command was misused"),
        ),
    )
    p.add_argument("paths", metavar="PATH", nargs="+",
                   help="a run, a folder holding runs at any depth, or a URI prefix")
    p.add_argument("-o", "--output", metavar="FILE", default="compare.html",
                   help="where to write the page (a local file; a folder gets compare.html)")
    p.add_argument("--metric", action="append", default=[], metavar="KEY",
                   help="a metric to tabulate and chart (repeatable; default: the reward and "
                   "loss keys every run logged)")
    p.add_argument("--x", choices=("step", "tokens", "cost", "time"), default="step",
                   help="x axis: step, cumulative tokens (tokens/cumulative/*), cumulative cost "
                   "(cost/cumulative_usd) or elapsed time (running sum of time/total)")
    p.add_argument("--sort", metavar="KEY[:asc|:desc]", default=None,
                   help="order the runs by name, status, iterations, checkpoint or a metric's "
                   "best value")
    p.add_argument("--baseline", metavar="RUN", default=None,
                   help="compare every other run's prompts with this run (its name in the table)")
    p.add_argument("--reports", action="store_true",
                   help="first write each run's report (rlio report), so every link resolves")
    add_parallel_options(p, "read")
    compare_prompts.add_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the comparison page of ``args.paths``."""
    from rlio.errors import UnknownMetricError
    from rlio.report.sweep import write_comparison

    if args.prompts:
        return compare_prompts.run(args)
    if args.jobs is not None and args.jobs < 1:
        return fail(f"--jobs must be at least 1, got {args.jobs}")
    options: dict[str, Any] = {"metrics": args.metric, "x": args.x, "sort": args.sort,
                               "baseline": args.baseline, "jobs": args.jobs,
                               "reports": args.reports}
    try:
        with dask_executor(args.dask) as executor:
            where, problems = write_comparison(args.paths, args.output, executor=executor,
                                               **options)
    except (ValueError, UnknownMetricError) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"cannot write {args.output!r}: {exc.strerror or exc}")
    for message in problems:
        fail(message)
    sys.stdout.write(f"wrote {printable(where)}\n")
    return EXIT_UNREADABLE if problems else EXIT_OK
