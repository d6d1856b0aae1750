"""``rlio validate``: check runs (or every run under folders and prefixes) against the format,
and render the reports as compiler-style text lines, JSON or GitHub annotations."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rlio import layout
from rlio.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_UNREADABLE,
    add_command,
    emit_json,
    fail,
    printable,
)
from rlio.errors import RunNotFoundError, install_line
from rlio.findings import Finding, Report, Severity, counts_text
from rlio.status import RunStatus, run_statuses
from rlio.validate.fleet import (
    FleetReport,
    Progress,
    default_runs_root,
    uri_scheme,
    validate_runs,
)
from rlio.validate.watch import Watcher


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``validate`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "validate",
        summary="check runs (or every run under folders and URI prefixes) against the format",
        examples=(
            ("rlio validate runs/exp1", "check one run; findings as file:line: CODE lines"),
            ("rlio validate", "every run under $TINKER_COOKBOOK_RUNS_DIR (else ~/tinker-runs)"),
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
    p.add_argument("paths", metavar="PATH", nargs="*",
                   help="a run, a folder holding runs at any depth, or a URI prefix "
                   "(gs://bucket/sweep/); none: the cookbook's run root "
                   "($TINKER_COOKBOOK_RUNS_DIR, else ~/tinker-runs)")
    p.add_argument("--format", choices=("text", "json", "github"), default="text",
                   help="text: one line per finding and a verdict per run; json: one document; "
                   "github: workflow annotations")
    p.add_argument("--fail-on", choices=("error", "warning", "info"), default="error",
                   help="lowest severity that makes the exit code 1")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="runs validated at once in a process pool (default: the CPU count)")
    p.add_argument("--dask", metavar="ADDRESS", default=None,
                   help="validate on the Dask cluster whose scheduler is at ADDRESS "
                   "(needs rlio[dask])")
    p.add_argument("--all", action="store_true",
                   help="text: one line per finding (by default repeats of one code in one file, "
                   "and infos of one code across files, are one line with a count)")
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
            return fail("--watch takes exactly one run (a PATH)")
        return watch_run(args.paths[0], args.interval, fail_on, args.format)
    if not args.paths:
        root = default_runs_root()
        if not os.path.isdir(root):
            return fail(f"no PATH given and the cookbook's run root {root} is not a folder "
                        f"(set {layout.RUNS_DIR_ENV} or give a PATH)")
    client: Any = None
    if args.dask is not None:
        try:
            import distributed
        except ImportError:
            need = install_line("dask")
            return fail(f"--dask needs the distributed package (the extra rlio[dask]): {need}")
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
    statuses = run_statuses([r.run for r in fleet.runs]) if args.format != "github" else {}
    if args.format == "json":
        doc = fleet.to_dict(fail_on=fail_on)
        for entry in doc["runs"]:
            status = statuses.get(entry["run"])
            entry["status"] = status.to_dict() if status is not None else None
        emit_json(doc)
    else:
        sys.stdout.write(render_fleet_github(fleet) if args.format == "github"
                         else render_fleet_text(fleet, fail_on, statuses, every=args.all))
    return fleet.exit_code(fail_on)


class _Bar:
    """The progress bar on stderr: runs done / total, files, MB/s and the ETA (tqdm)."""

    bar: Any = None
    start = 0.0

    def update(self, p: Progress) -> None:
        if self.bar is None:
            from tqdm import tqdm  # type: ignore[import-untyped]

            try:  # a terminal that reports no size (a fresh pty) still gets a bar: tqdm
                width, rows = os.get_terminal_size(sys.stderr.fileno())  # hides it in 0 rows
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


# -- rendering: compiler-style text lines or GitHub annotations; every file name and message
# from a run goes through ``printable`` (control characters escaped) --

def joined(run: str, file: str) -> str:
    """``file`` of the run at ``run`` as one path (a URI stays a URI)."""
    if not file:
        return run
    return f"{run.rstrip('/')}/{file}" if uri_scheme(run) else os.path.join(run, file)


def finding_line(f: Finding, where: str) -> str:
    """One compiler-style line: ``where:line: pointer: CODE severity: message``."""
    if f.line is not None:
        where += f":{f.line}"
    ptr = f" {printable(f.pointer)}:" if f.pointer else ""
    return f"{printable(where)}:{ptr} {f.code} {f.severity}: {printable(f.message)}"


def folded(findings: Sequence[Finding]) -> list[tuple[Finding, str]]:
    """Each group of findings of one code in one file (of one info code in any file) as its
    first finding and a note counting the others, in the order of the groups' first findings."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.code, "" if f.severity is Severity.INFO else f.file), []).append(f)
    out = []
    for first, *rest in groups.values():
        if not rest:
            out.append((first, ""))
            continue
        files = {f.file for f in rest} | {first.file}
        if len(files) > 1:
            where = f" in {len(files)} files"
        else:
            lines = [str(f.line) for f in rest if f.line is not None]
            shown = ", ".join(lines[:5]) + (", ..." if len(lines) > 5 else "")
            where = " in this file" + (f" (line{'s' if len(lines) > 1 else ''} {shown})"
                                       if lines else "")
        out.append((first, f" [+{len(rest)} more {first.code}{where}; --all lists them]"))
    return out


def verdict_line(report: Report, fail_on: Severity) -> str:
    """``RUN: ok|FAILED: counts``; FAILED exactly when a finding is at or above ``fail_on``."""
    c = report.counts
    verdict = "FAILED" if report.at_or_above(fail_on) else "ok"
    return f"{printable(report.run)}: {verdict}: {counts_text(c)}"


def render_fleet_text(fleet: FleetReport, fail_on: Severity,
                      statuses: Mapping[str, RunStatus] | None = None, *,
                      every: bool = False) -> str:
    """Each run's findings (paths relative to the run; repeats ``folded`` unless ``every``),
    status (``RUN: status ...``, when known) and verdict line; with several runs, paths carry
    the run's location and a last line sums up the fleet."""
    several = len(fleet.runs) + len(fleet.unreadable) > 1
    out = []
    for r in fleet.runs:
        shown = [(f, "") for f in r.findings] if every else folded(r.findings)
        out += [finding_line(f, joined(r.run, f.file) if several else (f.file or ".")) + note
                for f, note in shown]
        status = (statuses or {}).get(r.run)
        if status is not None:
            out.append(f"{printable(r.run)}: status {printable(status.text())}")
        out.append(verdict_line(r, fail_on))
    if several:
        failed = sum(1 for r in fleet.runs if r.at_or_above(fail_on))
        out.append(f"{len(fleet.runs)} run(s): {len(fleet.runs) - failed} ok, {failed} FAILED, "
                   f"{len(fleet.unreadable)} path(s) without a readable run")
    return "".join(line + "\n" for line in out)


def _github_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return printable(text)


def render_github(report: Report) -> str:
    """GitHub workflow commands, one annotation per finding (info becomes ``notice``), ``file=``
    relative to the current directory when local (so a pull request's annotation lands on it)."""
    lines = []
    for f in report.findings:
        file = joined(report.run, f.file)
        if not uri_scheme(file):
            with contextlib.suppress(ValueError):  # another drive (Windows)
                file = os.path.relpath(file)
        props = f"file={_github_escape(file, prop=True)}"
        if f.line is not None:
            props += f",line={f.line}"
        ptr = f"{f.pointer}: " if f.pointer else ""
        level = "notice" if f.severity is Severity.INFO else f.severity
        lines.append(f"::{level} {props},title={f.code}::"
                     f"{_github_escape(ptr + f.message)}\n")
    return "".join(lines)


def render_fleet_github(fleet: FleetReport) -> str:
    """The annotations of every run, then one error annotation per path without a run."""
    out = [render_github(r) for r in fleet.runs]
    out += [f"::error title=rlio::{_github_escape(u.message)}\n" for u in fleet.unreadable]
    return "".join(out)
