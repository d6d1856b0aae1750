"""``rlio demo``: write a simulated RL run through the public API."""

from __future__ import annotations

import argparse
import sys

from rlio.cli.common import EXIT_OK, EXIT_UNREADABLE, add_command, fail


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``demo`` to the ``rlio`` parser."""
    p = add_command(
        sub,
        "demo",
        summary="write a simulated RL run through the public API",
        examples=(
            ("rlio demo out/demo", "12 iterations in the flat layout"),
            ("rlio demo out/nested --layout nested --iterations 30 --seed 7",
             "a longer nested run; the same seed writes the same records"),
            ("rlio demo out/demo --force", "replace the demo run written there before"),
            ("rlio demo out/math --env math", "a run shaped like the cookbook's math environment "
             "(reward in the step, final_reward 0.0)"),
        ),
        exit_codes=(
            (EXIT_OK, "the run was written"),
            (EXIT_UNREADABLE, "OUT holds other files (or an earlier run, without --force), or "
             "the command was misused"),
        ),
    )
    p.add_argument("out", metavar="OUT", help="run directory to write (local path or URI); "
                   "must be new or empty (or an earlier demo run, with --force)")
    p.add_argument("--layout", choices=("flat", "nested"), default="flat",
                   help="flat: train_iteration_NNNNNN_* files; nested: iteration_NNNNNN/train_*")
    p.add_argument("--iterations", type=int, default=12, metavar="N",
                   help="training iterations to simulate (>= 1)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="random seed of the simulated rewards and texts")
    p.add_argument("--env", choices=("math", "multiturn", "tools", "preference", "evalonly",
                                     "async"), default=None,
                   help="write a run shaped like a cookbook environment (flat layout) instead of "
                   "the default demo")
    p.add_argument("--force", action="store_true",
                   help="replace an earlier demo run at OUT (a folder whose config.json the demo "
                   "wrote); any other non-empty folder is still refused")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the demo run to ``args.out``."""
    from rlio.demo import run_demo

    if args.iterations < 1:
        return fail(f"--iterations must be >= 1, got {args.iterations}")
    try:
        run_demo(args.out, layout=args.layout, iterations=args.iterations, seed=args.seed,
                 replace=args.force, env=args.env)
    except FileExistsError as exc:
        hint = "" if args.force else ", or pass --force to replace an earlier demo run"
        return fail(f"{exc}; choose an empty or new directory{hint}")
    kind = f"({args.env} environment)" if args.env else f"({args.layout} layout)"
    sys.stdout.write(f"wrote a demo run {kind} of {args.iterations} iterations to {args.out}\n")
    return EXIT_OK
