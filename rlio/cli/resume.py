"""``rlio resume``: where a crashed run must restart."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, add_command, emit_json, fail, printable, run_failure


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``resume`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "resume",
        summary="where a crashed run must restart",
        examples=(
            ("rlio resume runs/exp1", "the checkpoint to load and the iteration to start from"),
            ("rlio resume gs://bucket/exp1 --format json", "the same as one JSON document"),
            ("rlio resume runs/exp1 --line", "also number the lines from the start of the files"),
        ),
    )
    p.add_argument("run", metavar="RUN", help="local path or URI")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: one sentence; json: one document")
    p.add_argument("--required-key", default="state_path", metavar="K",
                   help="checkpoint key that makes a record resumable")
    p.add_argument("--line", action="store_true",
                   help="number the checkpoint's line (and the superseded metrics lines) from the "
                        "start of the files: reads every byte before them; without it lines are "
                        "placed from the end (text) or null (json)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the resume state of ``args.run``."""
    from rlio.errors import ResumeError, RunNotFoundError
    from rlio.resume import read_resume_state, resume_document
    from rlio.storage.run_root import open_run_storage

    try:
        open_run_storage(args.run)  # a folder that is not a run is not "a fresh run" here
        state = read_resume_state(args.run, required_key=args.required_key)
        doc = resume_document(state, run=args.run, lines=args.line)  # a missing run raises here
    except ResumeError as exc:
        return fail(str(exc))
    except (RunNotFoundError, NotADirectoryError) as exc:
        return run_failure(args.run, exc)
    if args.format == "json":
        emit_json(doc)
    elif state is None:
        sys.stdout.write(f"{printable(args.run)}: no resumable checkpoint; start from "
                         "iteration 0\n")
    else:  # one output line per line of the description, each terminal-safe
        text = state.describe_lines(lines=args.line)  # a newline in a field stays escaped
        sys.stdout.write("".join(printable(line) + "\n" for line in text))
    return EXIT_OK
