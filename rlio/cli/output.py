"""How ``rlio validate`` renders a report: compiler-style text lines or GitHub annotations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlio.cli.common import printable

if TYPE_CHECKING:
    from rlio.findings import Report


def render_text(report: Report) -> str:
    """Compiler-style lines (``file:line: pointer: CODE severity: message``) and a summary."""
    lines = []
    for f in report.findings:
        where = printable(f.file or ".")
        if f.line is not None:
            where += f":{f.line}"
        ptr = f" {printable(f.pointer)}:" if f.pointer else ""
        lines.append(f"{where}:{ptr} {f.code} {f.severity}: {printable(f.message)}")
    c = report.counts
    verdict = "ok" if report.ok else "FAILED"
    lines.append(
        f"{printable(report.run)}: {verdict}: {c['error']} error(s), {c['warning']} warning(s), "
        f"{c['info']} info"
    )
    return "\n".join(lines) + "\n"


def _github_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return printable(text)


def render_github(report: Report) -> str:
    """GitHub workflow commands, one annotation per finding (info becomes ``notice``)."""
    level = {"error": "error", "warning": "warning", "info": "notice"}
    lines = []
    for f in report.findings:
        props = [f"file={_github_escape(f.file or '.', prop=True)}"]
        if f.line is not None:
            props.append(f"line={f.line}")
        props.append(f"title={_github_escape(f.code, prop=True)}")
        ptr = f"{f.pointer}: " if f.pointer else ""
        lines.append(f"::{level[str(f.severity)]} {','.join(props)}::"
                     f"{_github_escape(ptr + f.message)}")
    return "".join(line + "\n" for line in lines)
