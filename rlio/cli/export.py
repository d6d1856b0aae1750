"""``rlio export``: Parquet datasets of one or many runs (metrics, rollouts, steps, checkpoints)."""

from __future__ import annotations

import argparse
import sys

from rlio.cli import export_dataset
from rlio.cli.common import EXIT_OK, add_command, fail, printable, run_failure

FORMATS = ("parquet", "dataset")


def _take_format(paths: list[str], default: str) -> tuple[list[str], str]:
    """The paths without the ``--format X`` / ``--format=X`` among them, and the format."""
    rest, fmt = [], default
    it = iter(paths)
    for arg in it:
        if arg == "--format":
            fmt = next(it, "")
        elif arg.startswith("--format="):
            fmt = arg.partition("=")[2]
        else:
            rest.append(arg)
    return rest, fmt


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``export`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "export",
        summary="write runs as Parquet datasets (needs the extra rlio[parquet])",
        description="One Parquet dataset per record kind (metrics, rollouts, steps, "
        "checkpoints) under OUT, partitioned by run and split, with run, iteration and split "
        "columns, and a key map per dataset for engines that restrict column names.",
        examples=(
            ("rlio export runs/a runs/b --format parquet out/",
             "a sweep DuckDB reads at once: read_parquet('out/metrics/**/*.parquet')"),
            ("rlio export gs://bucket/exp1 out/exp1",
             "one run from a bucket (needs rlio[gcs] too) into a new local folder"),
            ("rlio export runs/a --format dataset out/sft --min-reward 1 --dedupe",
             "a training dataset: one row per trajectory, chat messages, reward, advantage"),
        ),
    )
    p.add_argument("--format", choices=FORMATS, default="parquet", help="output format")
    # argparse cannot resume a positional list after an option ("RUN... --format parquet OUT"):
    # the paths are gathered whole and a --format among them is taken out in run().
    p.add_argument("paths", nargs=argparse.REMAINDER, metavar="RUN... OUT",
                   help="runs (local paths or URIs), then a new (or empty) local folder")
    export_dataset.add_options(p)
    p.set_defaults(handler=run, parser=p)


def run(args: argparse.Namespace) -> int:
    """Export the runs into OUT (the last path) and print the rows per dataset."""
    from rlio.errors import RlioError
    from rlio.reader.export import export_parquet

    paths, fmt = _take_format(list(args.paths), args.format)
    if fmt == "dataset":
        return export_dataset.run(args, paths)
    unknown = [a for a in paths if a.startswith("-") and a != "-"]
    if unknown:  # REMAINDER takes options too: an unknown one is never a RUN or OUT
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if fmt not in FORMATS:
        return fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if len(paths) < 2:
        return fail("export needs at least one RUN and the OUT folder")
    *runs, out = paths
    try:
        result = export_parquet(runs, out)
    except OSError as exc:
        return run_failure(exc.filename or runs[0], exc)
    except RlioError as exc:  # includes a missing extra (it names the pip command)
        return fail(str(exc))
    for kind, rows in result.rows.items():
        sys.stdout.write(f"{kind}: {rows} row(s)\n")
    sys.stdout.write(f"wrote {len(result.files)} file(s) under {printable(out)}\n")
    return EXIT_OK
