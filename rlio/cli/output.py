"""How ``rlio validate`` renders reports: compiler-style text lines or GitHub annotations.

Every file name and message from a run goes through ``printable`` (control characters escaped).
"""

from __future__ import annotations

import contextlib
import os

from rlio.cli.common import printable
from rlio.findings import Finding, Report, Severity
from rlio.validate.fleet import FleetReport, uri_scheme

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


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


def verdict_line(report: Report, fail_on: Severity) -> str:
    """``RUN: ok|FAILED: counts``; FAILED exactly when a finding is at or above ``fail_on``."""
    c = report.counts
    verdict = "FAILED" if report.at_or_above(fail_on) else "ok"
    return (f"{printable(report.run)}: {verdict}: {c['error']} error(s), "
            f"{c['warning']} warning(s), {c['info']} info")


def render_fleet_text(fleet: FleetReport, fail_on: Severity) -> str:
    """Each run's findings (paths relative to the run) and verdict line; with several runs,
    paths carry the run's location and a last line sums up the fleet."""
    several = len(fleet.runs) + len(fleet.unreadable) > 1
    out = []
    for r in fleet.runs:
        out += [finding_line(f, joined(r.run, f.file) if several else (f.file or "."))
                for f in r.findings]
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
        lines.append(f"::{_LEVEL[str(f.severity)]} {props},title={f.code}::"
                     f"{_github_escape(ptr + f.message)}\n")
    return "".join(lines)


def render_fleet_github(fleet: FleetReport) -> str:
    """The annotations of every run, then one error annotation per path without a run."""
    out = [render_github(r) for r in fleet.runs]
    out += [f"::error title=rlio::{_github_escape(u.message)}\n" for u in fleet.unreadable]
    return "".join(out)
