"""``rlio validate``: check a run against the schemas and the format's rules."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNREADABLE,
    add_command,
    emit_json,
    fail,
)
from rlio.cli.output import render_github, render_text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``validate`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "validate",
        summary="check a run directory against the schemas and the format's rules",
        examples=(
            ("rlio validate runs/exp1", "check one run; findings as file:line: CODE lines"),
            ("rlio validate gs://bucket/exp1 --format json", "one JSON report on stdout"),
            ("rlio validate runs/exp1 --format github --fail-on warning",
             "GitHub annotations; warnings fail the job too"),
        ),
        exit_codes=(
            (EXIT_OK, "no finding at or above --fail-on"),
            (EXIT_FINDINGS, "a finding at or above --fail-on"),
            (EXIT_UNREADABLE, "no run could be read at RUN, or the command was misused"),
        ),
    )
    p.add_argument("run", metavar="RUN", help="local path or URI (gs://bucket/run)")
    p.add_argument("--format", choices=("text", "json", "github"), default="text",
                   help="text: one line per finding and a verdict; json: one document; "
                   "github: workflow annotations")
    p.add_argument("--fail-on", choices=("error", "warning", "info"), default="error",
                   help="lowest severity that makes the exit code 1")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Validate ``args.run`` and print the report in ``args.format``."""
    from rlio.errors import RunNotFoundError
    from rlio.findings import Severity
    from rlio.validate import validate_run

    try:
        report = validate_run(args.run)
    except (RunNotFoundError, NotADirectoryError) as exc:
        return fail(f"cannot read run {args.run!r}: {exc.strerror or exc}")
    if args.format == "json":
        emit_json(report.to_dict())
    elif args.format == "github":
        sys.stdout.write(render_github(report))
    else:
        sys.stdout.write(render_text(report))
    return EXIT_FINDINGS if report.at_or_above(Severity.parse(args.fail_on)) else EXIT_OK
