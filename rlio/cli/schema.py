"""``rlio schema``: print one of rlio's JSON Schemas, all of them as one bundle, or list them."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, EXIT_UNREADABLE, add_command, emit_json, fail


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``schema`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "schema",
        summary="print a JSON Schema, or all of them as one bundle (or list them)",
        description="Print the JSON Schema of one file type as shipped, or (--bundle) one "
        "self-contained document holding every schema under $defs, for editors and "
        "validators that know nothing of rlio (docs/format.md, \"Using the schemas elsewhere\").",
        examples=(
            ("rlio schema", "list the schema names"),
            ("rlio schema metrics-line", "print the schema of one metrics.jsonl line"),
            ("rlio schema --bundle > rlio.schema.json",
             "every schema in one file; validate against #/$defs/NAME"),
            ("rlio schema logtree --bundle > logtree.schema.json",
             "the bundle with the logtree schema at its root (for check-jsonschema)"),
        ),
        exit_codes=(
            (EXIT_OK, "success"),
            (EXIT_UNREADABLE, "no schema of that NAME (the names are listed), or the command "
                              "was misused"),
        ),
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="schema name; omit to list them")
    p.add_argument("--bundle", action="store_true",
                   help="print one self-contained document with every schema under $defs "
                   "(with NAME: that schema at its root)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the schema ``args.name``, the bundle, or the list of names."""
    from rlio.schema import SCHEMA_NAMES, bundle_schema, schema_bytes

    try:
        if args.bundle:
            emit_json(bundle_schema(args.name))
            return EXIT_OK
        if args.name is None:
            sys.stdout.write("".join(n + "\n" for n in SCHEMA_NAMES))
            return EXIT_OK
        data = schema_bytes(args.name)
    except ValueError as exc:
        return fail(str(exc))
    sys.stdout.write(data.decode() + ("" if data.endswith(b"\n") else "\n"))
    return EXIT_OK
