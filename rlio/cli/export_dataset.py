"""``rlio export RUN... --format dataset OUT``: a training dataset of the runs' rollouts.

The options of the dataset format; ``rlio.cli.export`` dispatches here. They may stand before,
between or after the paths (``export`` gathers the paths whole, so they are parsed again here).
"""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, fail, printable, run_failure


def _iterations(text: str) -> list[int]:
    """``"3"``, ``"0-9"`` or ``"0-4,8,10-12"`` as a list of iterations."""
    out: list[int] = []
    try:
        for part in text.split(","):
            lo, sep, hi = part.strip().partition("-")
            first = int(lo)
            last = int(hi) if sep else first
            if first < 0 or last < first:
                raise ValueError
            out.extend(range(first, last + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected iterations like 3, 0-9 or 0-4,8 (each >= 0), got {text!r}") from None
    return out


def add_options(p: argparse.ArgumentParser) -> None:
    """Add the dataset format's options to ``p``."""
    g = p.add_argument_group("--format dataset (one row per trajectory, or pairs)")
    g.add_argument("--split", default="train", metavar="SPLIT",
                   help="train, an evaluator's split or label (eval/test, test), or all "
                   "(default: train)")
    g.add_argument("--iterations", type=_iterations, default=None, metavar="LIST",
                   help="iterations to read: 3, 0-9 or 0-4,8 (default: all)")
    g.add_argument("--min-reward", type=float, default=None, metavar="R",
                   help="keep trajectories whose reward (total_reward) is at least R")
    g.add_argument("--min-advantage", type=float, default=None, metavar="A",
                   help="keep trajectories whose advantage (reward minus the group's mean) is "
                   "at least A")
    g.add_argument("--top-k", type=int, default=None, metavar="K",
                   help="keep the K best trajectories of each group")
    g.add_argument("--dedupe", action="store_true",
                   help="drop rows whose prompt and response repeat an earlier row's")
    g.add_argument("--pairs", action="store_true",
                   help="one chosen/rejected pair per group (its best and worst trajectory)")
    g.add_argument("--min-margin", type=float, default=0.0, metavar="M",
                   help="with --pairs: the rewards must differ by more than M (default: 0)")
    g.add_argument("--no-jsonl", dest="jsonl", action="store_false",
                   help="write the Parquet file and the manifest only")


def run(args: argparse.Namespace, paths: list[str]) -> int:
    """Write the dataset of the runs in ``paths`` (options among them) into the last path."""
    from rlio.errors import RlioError
    from rlio.reader.dataset import Selection, write_dataset
    from rlio.reader.run import open_run

    again = argparse.ArgumentParser(prog="rlio export", add_help=False)
    add_options(again)
    again.add_argument("paths", nargs="*")
    try:
        opts, unknown = again.parse_known_intermixed_args(paths, namespace=args)
    except SystemExit:  # argparse already printed the problem
        return 2
    if unknown:
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if len(opts.paths) < 2:
        return fail("export needs at least one RUN and the OUT folder")
    *locations, out = opts.paths
    try:
        selection = Selection(
            split=None if opts.split == "all" else opts.split, iterations=opts.iterations,
            min_reward=opts.min_reward, min_advantage=opts.min_advantage, top_k=opts.top_k,
            dedupe=opts.dedupe, pairs=opts.pairs, min_margin=opts.min_margin)
        runs = [open_run(loc) for loc in locations]
        result = write_dataset(runs, out, selection, jsonl=opts.jsonl)
    except ValueError as exc:
        return fail(str(exc))
    except OSError as exc:
        return run_failure(exc.filename or locations[0], exc)
    except RlioError as exc:  # includes a missing extra (it names the pip command)
        return fail(str(exc))
    counts = result.manifest["counts"]
    sys.stdout.write(f"{result.manifest['kind']}: {counts['rows']} row(s) from "
                     f"{counts['trajectories']} trajectories\n")
    sys.stdout.write(f"wrote {len(result.files)} file(s) under {printable(out)} "
                     "(manifest.json says what was selected)\n")
    return EXIT_OK
