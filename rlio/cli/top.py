"""``rlio top``: a live terminal dashboard of runs (needs ``rlio[tui]``)."""

from __future__ import annotations

import argparse

from rlio.cli.common import EXIT_OK, add_command, fail, run_failure


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``top`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "top",
        summary="a live terminal dashboard of runs, down to the transcript (needs rlio[tui])",
        description="The runs under PATH... (runs, folders of runs, gs://, s3:// or az:// "
        "prefixes) as a live table, one run's charts, rewards, GRPO diagnostics, checkpoints "
        "and findings, and a drill-down from iteration to group to transcript. Keyboard-driven "
        "('?' lists the keys, 'q' quits). Read-only: it never writes to a run.",
        examples=(
            ("rlio top runs/exp1", "one run: charts, rewards, checkpoints, findings"),
            ("rlio top runs/sweep", "every run under a folder, one row each"),
            ("rlio top gs://bucket/sweep --metric env/all/reward/total --metric optim/entropy",
             "runs under a prefix with the last and best of two metrics"),
        ),
    )
    p.add_argument("paths", metavar="PATH", nargs="+",
                   help="a run, a folder of runs, or a URI prefix")
    p.add_argument("--metric", "-m", action="append", default=[], metavar="KEY",
                   help="a metric whose last and best value the runs view shows (repeatable; "
                   "default: env/all/reward/total)")
    p.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between looks at a live run's files")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Discover the runs and run the dashboard until the user quits."""
    from rlio.reader.extras import require
    from rlio.validate.fleet import discover_named

    require("textual", "tui", purpose="rlio top")
    if not args.poll > 0:
        return fail(f"--poll must be seconds > 0, got {args.poll}")
    try:
        runs = discover_named(args.paths)
    except OSError as exc:
        return run_failure(args.paths[0], exc)
    from rlio.tui.dashboard import DEFAULT_METRICS, TopApp

    TopApp(runs, metrics=args.metric or DEFAULT_METRICS, poll=args.poll).run()
    return EXIT_OK
