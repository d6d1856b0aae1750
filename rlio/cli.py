"""The ``rlio`` command: a thin shell over the public API. Parses arguments, renders, exits.

Exit codes: 0 success, 1 findings at or above ``--fail-on``, 2 the run could not be read or the
command was misused.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

import orjson

if TYPE_CHECKING:
    from rlio.findings import Report

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlio", description="Write, validate and resume RL run directories."
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check a run directory against the schemas and SPEC")
    p.add_argument("run", metavar="RUN", help="local path or URI (gs://bucket/run)")
    p.add_argument("--format", choices=("text", "json", "github"), default="text")
    p.add_argument("--fail-on", choices=("error", "warning", "info"), default="error",
                   help="lowest severity that makes the exit code 1 (default: error)")
    p.set_defaults(handler=_cmd_validate)

    p = sub.add_parser("schema", help="print a JSON Schema (or list them)")
    p.add_argument("name", nargs="?", metavar="NAME", help="schema name; omit to list them")
    p.set_defaults(handler=_cmd_schema)

    p = sub.add_parser("resume", help="where a crashed run must restart")
    p.add_argument("run", metavar="RUN", help="local path or URI")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--required-key", default="state_path", metavar="K",
                   help="checkpoint key that makes a record resumable (default: state_path)")
    p.set_defaults(handler=_cmd_resume)

    p = sub.add_parser("demo", help="write a simulated RL run through the public API")
    p.add_argument("out", metavar="OUT", help="run directory to write (local path or URI)")
    p.add_argument("--layout", choices=("flat", "nested"), default="flat")
    p.add_argument("--iterations", type=int, default=12, metavar="N")
    p.add_argument("--seed", type=int, default=0, metavar="S")
    p.set_defaults(handler=_cmd_demo)

    p = sub.add_parser("report", help="one self-contained HTML page for a whole run")
    p.add_argument("run", metavar="RUN", help="local path or URI")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write the page (default: RUN/report.html)")
    p.add_argument("--metric", action="append", default=[], metavar="KEY",
                   help="also chart this metric (repeatable)")
    p.set_defaults(handler=_cmd_report)
    return parser


def _version() -> str:
    from rlio._version import __version__

    return f"rlio {__version__}"


def _emit_json(obj: Any, out: TextIO) -> None:
    out.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


def _fail(message: str) -> int:
    sys.stderr.write(f"rlio: error: {message}\n")
    return EXIT_UNREADABLE


def render_text(report: Report) -> str:
    """Compiler-style lines (``file:line: pointer: CODE severity: message``) and a summary."""
    lines = []
    for f in report.findings:
        where = f.file or "."
        if f.line is not None:
            where += f":{f.line}"
        ptr = f" {f.pointer}:" if f.pointer else ""
        lines.append(f"{where}:{ptr} {f.code} {f.severity}: {f.message}")
    c = report.counts
    verdict = "ok" if report.ok else "FAILED"
    lines.append(
        f"{report.run}: {verdict}: {c['error']} error(s), {c['warning']} warning(s), "
        f"{c['info']} info"
    )
    return "\n".join(lines) + "\n"


def _github_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


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


def _cmd_validate(args: argparse.Namespace) -> int:
    from rlio.errors import RunNotFoundError
    from rlio.findings import Severity
    from rlio.validate import validate_run

    try:
        report = validate_run(args.run)
    except (RunNotFoundError, NotADirectoryError) as exc:
        return _fail(f"cannot read run {args.run!r}: {exc.strerror or exc}")
    if args.format == "json":
        _emit_json(report.to_dict(), sys.stdout)
    elif args.format == "github":
        sys.stdout.write(render_github(report))
    else:
        sys.stdout.write(render_text(report))
    return EXIT_FINDINGS if report.at_or_above(Severity.parse(args.fail_on)) else EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from rlio.schema import SCHEMA_NAMES, schema_bytes

    if args.name is None:
        sys.stdout.write("".join(n + "\n" for n in SCHEMA_NAMES))
        return EXIT_OK
    try:
        data = schema_bytes(args.name)
    except ValueError as exc:
        return _fail(str(exc))
    sys.stdout.write(data.decode() + ("" if data.endswith(b"\n") else "\n"))
    return EXIT_OK


def _cmd_resume(args: argparse.Namespace) -> int:
    from rlio.errors import ResumeError, RunNotFoundError
    from rlio.resume import read_resume_state, resume_document

    try:
        state = read_resume_state(args.run, required_key=args.required_key)
    except ResumeError as exc:
        return _fail(str(exc))
    except (RunNotFoundError, NotADirectoryError) as exc:
        return _fail(f"cannot read run {args.run!r}: {exc.strerror or exc}")
    doc = resume_document(state, run=args.run)
    if args.format == "json":
        _emit_json(doc, sys.stdout)
    elif state is None:
        sys.stdout.write(f"{args.run}: no resumable checkpoint; start from iteration 0\n")
    else:
        sys.stdout.write(state.describe() + "\n")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from rlio.demo import run_demo

    if args.iterations < 1:
        return _fail(f"--iterations must be >= 1, got {args.iterations}")
    try:
        run_demo(args.out, layout=args.layout, iterations=args.iterations, seed=args.seed)
    except FileExistsError as exc:
        return _fail(f"{exc}; choose an empty or new directory")
    sys.stdout.write(f"wrote a {args.layout} demo run of {args.iterations} iterations to "
                     f"{args.out}\n")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from rlio.errors import RunNotFoundError
    from rlio.report import write_run_report

    try:
        where = write_run_report(args.run, output=args.output, metrics=args.metric)
    except (RunNotFoundError, NotADirectoryError) as exc:
        return _fail(f"cannot read run {args.run!r}: {exc.strerror or exc}")
    sys.stdout.write(f"wrote {where}\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    args = _build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except BrokenPipeError:
        return EXIT_OK
    return code
