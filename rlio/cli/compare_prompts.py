"""``rlio compare --prompts A [B]``: which prompts a change helped or hurt, with statistics.

Prints ``rlio.report.prompt_change`` as text or JSON; ``rlio.cli.compare`` dispatches here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rlio.cli.common import EXIT_OK, fail, run_failure


def add_options(p: argparse.ArgumentParser) -> None:
    """Add the ``--prompts`` mode's options to ``p``."""
    g = p.add_argument_group("--prompts (per-prompt change of two runs, or two points of one)")
    g.add_argument("--prompts", action="store_true",
                   help="print each prompt's change in mean reward (B minus A) with bootstrap "
                   "intervals, a paired test over all prompts and the prompts that moved most, "
                   "instead of writing the page; PATH is one run (A and B are two points of "
                   "it) or two runs")
    for side, default in (("a", "first (one run) or last"), ("b", "last")):
        g.add_argument(f"--{side}", metavar="SIDE", default=None,
                       help=f"what side {side.upper()} reads: first, last, N, N-M or N,M,... "
                       f"(iterations), or ckpt:NAME (trajectories sampled with that checkpoint)"
                       f" (default: {default})")
    g.add_argument("--split", default="train", metavar="SPLIT",
                   help="train, an evaluator's split or label (default: train)")
    g.add_argument("--match", default="prompt", metavar="KEY",
                   help="match prompts by their logged text (prompt, the default) or by the "
                   "example id logged under KEY in trajectory_metrics or a step's logs")
    g.add_argument("--format", dest="prompt_format", choices=("text", "json"), default="text",
                   help="output (default: text)")
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    g.add_argument("--resamples", type=int, default=1000, metavar="N",
                   help="bootstrap resamples per interval (default: 1000)")
    g.add_argument("--alpha", type=float, default=0.05,
                   help="significance level of the paired test (default: 0.05)")
    g.add_argument("--top", type=int, default=10, metavar="N",
                   help="prompts listed as most improved and most regressed (default: 10)")


def _spec(text: str) -> dict[str, Any]:
    """What ``--a`` or ``--b`` names, as ``Side`` keyword arguments."""
    if text.startswith("ckpt:"):
        return {"checkpoint": text[5:]}
    if text in ("first", "last"):
        return {"iterations": text}
    out: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"a side is first, last, N, N-M, N,M,... or ckpt:NAME, got {text!r}")
        out.extend(range(int(lo), int(hi if sep else lo) + 1))
    return {"iterations": tuple(out)}


def _num(v: float | None, sign: bool = True) -> str:
    if v is None:
        return "—"
    return f"{v:+.3f}" if sign else f"{v:.3f}"


def render_text(change: Any) -> str:
    """The comparison as a few lines of text: sides, set-level result, movers."""
    d = change.to_dict()
    t = d["test"]
    pct = f"{round(100 * d['confidence'])}%"
    lines = [f"A: {d['a']['name']} ({d['a']['trajectories']} trajectories, "
             f"{d['a']['prompts']} prompts)",
             f"B: {d['b']['name']} ({d['b']['trajectories']} trajectories, "
             f"{d['b']['prompts']} prompts)",
             f"{d['matched']} prompt(s) on both sides ({d['only_a']} only in A, {d['only_b']} "
             f"only in B), matched by {d['match']}"]
    if d["matched"]:
        lines.append(f"mean change (B - A): {_num(d['mean_delta'])} [{pct} CI "
                     f"{_num(d['ci_low'])}, {_num(d['ci_high'])}]")
    if t["name"] == "mcnemar-exact":
        lines.append(f"McNemar exact: {t['detail']['c']} prompt(s) 0 -> 1, {t['detail']['b']} "
                     f"1 -> 0, p = {t['p_value']:.4g}")
    else:
        kind = "exact" if t["name"] == "wilcoxon-exact" else "normal approximation"
        lines.append(f"Wilcoxon signed-rank ({kind}): W+ = {t['statistic']:g}, n = {t['n']} "
                     f"({t['detail']['zeros']} unchanged dropped), p = {t['p_value']:.4g}")
    lines.append(f"verdict: {d['verdict']} (alpha {d['alpha']:g}); {d['changed']} prompt(s) "
                 f"whose {pct} interval excludes 0")
    for title, rows in (("most improved", d["improved"]), ("most regressed", d["regressed"])):
        if rows:
            lines.append(f"{title}:")
            lines += [f"  {_num(p['delta'])} [{_num(p['ci_low'])}, {_num(p['ci_high'])}]  "
                      f"{_num(p['mean_a'], False)} -> {_num(p['mean_b'], False)}  "
                      f"(n {p['n_a']}/{p['n_b']})  {p['label']}" for p in rows]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Print the per-prompt comparison of ``args.paths`` (one run or two)."""
    from rlio.errors import RlioError
    from rlio.report.prompt_change import Side, prompt_change

    if len(args.paths) not in (1, 2):
        return fail(f"--prompts compares one run (two points of it) or two runs, got "
                    f"{len(args.paths)} paths")
    first, second = args.paths[0], args.paths[-1]
    default_a = "first" if len(args.paths) == 1 else "last"
    try:
        a = Side(first, args.split, **_spec(args.a or default_a))
        b = Side(second, args.split, **_spec(args.b or "last"))
        change = prompt_change(a, b, match=args.match, seed=args.seed,
                               resamples=args.resamples, alpha=args.alpha, top=args.top)
    except OSError as exc:  # no run there, or it cannot be read
        return run_failure(exc.filename or first, exc)
    except (ValueError, RlioError) as exc:
        return fail(str(exc))
    if args.prompt_format == "json":
        sys.stdout.write(json.dumps(change.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(change))
    return EXIT_OK
