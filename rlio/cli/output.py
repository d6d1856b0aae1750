"""How ``rlio validate`` renders reports: compiler-style text lines or GitHub annotations.

Every file name and message from a run goes through ``printable`` (control characters escaped).
"""

from __future__ import annotations

import os

from rlio.cli.common import printable
from rlio.findings import Finding, Report, Severity
from rlio.validate.fleet import FleetReport


def _is_uri(location: str) -> bool:
    head, sep, _ = location.partition("://")
    return bool(sep) and head.isidentifier()


def joined(run: str, file: str) -> str:
    """``file`` of the run at ``run`` as one path (a URI stays a URI)."""
    if not file:
        return run
    return f"{run.rstrip('/')}/{file}" if _is_uri(run) else os.path.join(run, file)


def from_cwd(run: str, file: str) -> str:
    """``file`` of the run at ``run``, relative to the current directory when it is local (so a
    pull request's annotation lands on the file)."""
    path = joined(run, file)
    if _is_uri(path):
        return path
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path


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


def render_text(report: Report, fail_on: Severity | None = None, *,
                prefix: bool = False) -> str:
    """Compiler-style lines (``file:line: pointer: CODE severity: message``) and the verdict.

    Paths are relative to the run, or (``prefix``) joined to the run's location.
    """
    lines = [finding_line(f, joined(report.run, f.file) if prefix else (f.file or "."))
             for f in report.findings]
    lines.append(verdict_line(report, Severity.ERROR if fail_on is None else fail_on))
    return "\n".join(lines) + "\n"


def render_fleet_text(fleet: FleetReport, fail_on: Severity) -> str:
    """Each run's findings and verdict line; with several runs, paths carry the run's location
    and a last line sums up the fleet."""
    several = len(fleet.runs) + len(fleet.unreadable) > 1
    out = [render_text(r, fail_on, prefix=several) for r in fleet.runs]
    if several:
        failed = sum(1 for r in fleet.runs if r.at_or_above(fail_on))
        out.append(f"{len(fleet.runs)} run(s): {len(fleet.runs) - failed} ok, {failed} FAILED, "
                   f"{len(fleet.unreadable)} path(s) without a readable run\n")
    return "".join(out)


def _github_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return printable(text)


_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def render_github(report: Report, *, relative: bool = True) -> str:
    """GitHub workflow commands, one annotation per finding (info becomes ``notice``); ``file=``
    is relative to the current directory (or to the run, without ``relative``)."""
    lines = []
    for f in report.findings:
        file = from_cwd(report.run, f.file) if relative else (f.file or ".")
        props = [f"file={_github_escape(file, prop=True)}"]
        if f.line is not None:
            props.append(f"line={f.line}")
        props.append(f"title={_github_escape(f.code, prop=True)}")
        ptr = f"{f.pointer}: " if f.pointer else ""
        lines.append(f"::{_LEVEL[str(f.severity)]} {','.join(props)}::"
                     f"{_github_escape(ptr + f.message)}")
    return "".join(line + "\n" for line in lines)


def render_fleet_github(fleet: FleetReport) -> str:
    """The annotations of every run, then one error annotation per path without a run."""
    out = [render_github(r) for r in fleet.runs]
    out += [f"::error title=rlio::{_github_escape(u.message)}\n" for u in fleet.unreadable]
    return "".join(out)
