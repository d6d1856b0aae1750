"""``rlio schema``: print one of rlio's JSON Schemas, or list them."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, add_command, fail


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``schema`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "schema",
        summary="print a JSON Schema (or list them)",
        examples=(
            ("rlio schema", "list the schema names"),
            ("rlio schema metrics_line", "print the schema of one metrics.jsonl line"),
        ),
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="schema name; omit to list them")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the schema ``args.name``, or the list of names."""
    from rlio.schema import SCHEMA_NAMES, schema_bytes

    if args.name is None:
        sys.stdout.write("".join(n + "\n" for n in SCHEMA_NAMES))
        return EXIT_OK
    try:
        data = schema_bytes(args.name)
    except ValueError as exc:
        return fail(str(exc))
    sys.stdout.write(data.decode() + ("" if data.endswith(b"\n") else "\n"))
    return EXIT_OK
