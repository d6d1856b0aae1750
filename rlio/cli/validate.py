"""``rlio validate``: check runs (or every run under folders and prefixes) against the format."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from rlio.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNREADABLE,
    add_command,
    emit_json,
    fail,
)
from rlio.cli.output import (
    finding_line,
    render_fleet_github,
    render_fleet_text,
    render_github,
    verdict_line,
)
from rlio.errors import RunNotFoundError
from rlio.findings import Report, Severity
from rlio.validate.fleet import Progress, validate_runs
from rlio.validate.watch import Watcher

FORMATS = ("text", "json", "github")
FAIL_ON = ("error", "warning", "info")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``validate`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "validate",
        summary="check runs (or every run under folders and URI prefixes) against the format",
        examples=(
            ("rlio validate runs/exp1", "check one run; findings as file:line: CODE lines"),
            ("rlio validate runs/ gs://bucket/sweep/ --jobs 8",
             "every run found under both, eight at a time"),
            ("rlio validate gs://bucket/exp1 --format json", "one JSON document on stdout"),
            ("rlio validate runs/ --format github --fail-on warning",
             "GitHub annotations; warnings fail the job too"),
            ("rlio validate runs/ --dask tcp://scheduler:8786", "fan out over a Dask cluster"),
            ("rlio validate --watch runs/exp1", "re-check a live run as it grows"),
        ),
        exit_codes=(
            (EXIT_OK, "no finding at or above --fail-on in any run"),
            (EXIT_FINDINGS, "a finding at or above --fail-on in some run"),
            (EXIT_UNREADABLE, "a PATH holds no run or cannot be read, or the command was misused"),
        ),
    )
    p.add_argument("paths", metavar="PATH", nargs="+",
                   help="a run, a folder holding runs at any depth, or a URI prefix "
                   "(gs://bucket/sweep/)")
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="text: one line per finding and a verdict per run; json: one document; "
                   "github: workflow annotations")
    p.add_argument("--fail-on", choices=FAIL_ON, default="error",
                   help="lowest severity that makes the exit code 1")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="runs validated at once in a process pool (default: the CPU count)")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="validate on the Dask cluster whose scheduler is at ADDRESS "
                   "(needs rlio[dask])")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress bar (it is shown only when stderr is a terminal)")
    p.add_argument("--watch", action="store_true",
                   help="keep re-checking one run as it changes; print new findings; Ctrl-C stops")
    p.add_argument("--interval", type=float, default=2.0, metavar="S",
                   help="seconds between re-checks under --watch")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Validate ``args.paths`` and print the reports in ``args.format``."""
    fail_on = Severity.parse(args.fail_on)
    if args.jobs is not None and args.jobs < 1:
        return fail(f"--jobs must be at least 1, got {args.jobs}")
    if args.watch:
        if len(args.paths) != 1:
            return fail("--watch takes exactly one run")
        return watch_run(args.paths[0], args.interval, fail_on, args.format)
    client: Any = None
    if args.dask is not None:
        try:
            import distributed
        except ImportError:
            return fail("--dask needs the distributed package: pip install 'rlio[dask]'")
        try:
            client = distributed.Client(args.dask, timeout=30)  # type: ignore[no-untyped-call]
        except (OSError, TimeoutError, ValueError) as exc:
            return fail(f"cannot connect to the Dask scheduler at {args.dask}: {exc}")
    bar = None if args.quiet or not sys.stderr.isatty() else _Bar()
    try:
        fleet = validate_runs(args.paths, jobs=args.jobs,
                              executor=client.get_executor() if client is not None else None,
                              progress=bar.update if bar is not None else None)
    finally:
        if bar is not None and bar.bar is not None:
            bar.bar.close()
        if client is not None:
            client.close()
    for u in fleet.unreadable:
        fail(u.message)
    if args.format == "json":
        emit_json(fleet.to_dict(fail_on=fail_on))
    else:
        sys.stdout.write(render_fleet_github(fleet) if args.format == "github"
                         else render_fleet_text(fleet, fail_on))
    return fleet.exit_code(fail_on)


class _Bar:
    """The progress bar on stderr: runs done / total, files, MB/s and the ETA (tqdm)."""

    bar: Any = None
    start = 0.0

    def update(self, p: Progress) -> None:
        if self.bar is None:
            from tqdm import tqdm  # type: ignore[import-untyped]

            try:  # a terminal that reports no size (a fresh pty) still gets a bar: tqdm
                size = os.get_terminal_size(sys.stderr.fileno())  # hides it in 0 rows
                width, rows = size.columns, size.lines
            except OSError:
                width = rows = 0
            self.bar = tqdm(total=p.total, unit="run", file=sys.stderr, desc="validate",
                            ncols=width or 80, nrows=rows or 24, leave=False)
            self.start = time.monotonic()
        self.bar.n = p.done
        elapsed = max(time.monotonic() - self.start, 1e-9)
        self.bar.set_postfix_str(f"{p.files} files, {p.bytes / elapsed / 1e6:.1f} MB/s",
                                 refresh=False)
        self.bar.refresh()


def watch_run(location: str, interval: float, fail_on: Severity, out_format: str) -> int:
    """``--watch``: print the new findings every ``interval`` seconds until Ctrl-C (SIGINT),
    then exit with the code the last check gives (text: after a last verdict line)."""
    watcher = Watcher(location)
    try:
        while True:
            try:
                new = watcher.check()
            except (RunNotFoundError, OSError) as exc:
                return fail(str(exc.strerror or exc))
            report = watcher.report
            assert report is not None
            if out_format == "json":  # one document per check that found something new
                if new:
                    emit_json({"run": report.run, **Report.build(report.run, new).to_dict()})
            elif out_format == "github":
                sys.stdout.write(render_github(Report.build(report.run, new)))
            elif new:
                sys.stdout.write("".join(finding_line(f, f.file or ".") + "\n" for f in new))
                sys.stdout.write(verdict_line(report, fail_on) + "\n")
            sys.stdout.flush()
            time.sleep(interval)
    except KeyboardInterrupt:
        report = watcher.report
        if report is None:
            return EXIT_UNREADABLE
        if out_format == "text":
            sys.stdout.write(verdict_line(report, fail_on) + "\n")
            sys.stdout.flush()
        return EXIT_FINDINGS if report.at_or_above(fail_on) else EXIT_OK
