"""The run view's panels as text: a metric's chart, the latest iteration's rewards and GRPO
diagnostics, the checkpoint timeline and the findings. Pure functions of what a ``RunFeed``
holds and a width, so they are tested (and drawn at 80 columns) without a terminal."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.text import Text

from rlio.findings import Finding, Severity
from rlio.outcome import finite
from rlio.tui.braille import bars, line_chart
from rlio.tui.chat_text import clean
from rlio.tui.group_stats import IterationRows, histogram

__all__ = [
    "USUAL",
    "chart_text",
    "checkpoint_lines",
    "distribution_text",
    "findings_text",
    "fmt",
    "usual_keys",
]

#: The usual metrics, by label: the first key present in the run is charted (exact names
#: first, then any key holding the fragment).
USUAL: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("reward", ("env/all/reward/total",), "reward/total"),
    ("KL", ("optim/kl_sample_train_v1", "optim/kl_sample_train_v2"), "kl"),
    ("entropy", ("optim/entropy",), "entropy"),
    ("learning rate", ("optim/lr",), "lr"),
    ("tokens", ("tokens/cumulative/sampled", "env/all/ac_tokens_per_turn"), "tokens"),
    ("cost", ("cost/cumulative_usd",), "cost/"),
    ("time", ("time/total",), "time/"),
)


def fmt(value: float | None) -> str:
    """A number for a narrow column: four significant digits; none as ``—``."""
    if value is None:
        return "—"
    if math.isnan(value):
        return "NaN"
    return f"{value:.4g}"


def _evaluators(key: str) -> bool:
    """Whether ``key`` is an evaluator's (``test/env/...``, ``gsm8k/test (v2)/env/...``)."""
    return key.startswith(("test/", "eval/")) or ("/env/" in key and not key.startswith("env/"))


def usual_keys(keys: Iterable[str]) -> list[tuple[str, str]]:
    """``(label, key)`` of each usual metric the run logs (training keys, not evaluators')."""
    present = sorted(keys)
    out: list[tuple[str, str]] = []
    for label, exact, fragment in USUAL:
        key = next((k for k in exact if k in present), None)
        if key is None:
            key = next((k for k in present if fragment in k and "/" in k
                        and not _evaluators(k)), None)
        if key is not None and key not in (k for _, k in out):
            out.append((label, key))
    return out


def chart_text(label: str, key: str, points: Sequence[tuple[float, float]],
               last: float | None, best: float | None, width: int, height: int) -> Text:
    """A titled braille chart of ``points`` (step, value): the y range at the left."""
    finite = [y for _, y in points if math.isfinite(y)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 0.0)
    labels = [fmt(hi), fmt(lo)] if finite else ["", ""]
    pad = max(len(s) for s in labels)
    out = Text()
    values = f"  last {fmt(last)}" + (f"  best {fmt(best)}" if best is not None else "")
    out.append(clean(label), style="bold")
    room = width - len(label) - len(values) - 1
    if label != key and len(key) <= room:  # the key, when it fits
        out.append(" " + clean(key), style="dim")
    out.append(values[:max(0, width - len(label))] + "\n")
    rows = line_chart(points, max(1, width - pad - 1), height)
    for i, row in enumerate(rows):
        tick = labels[0] if i == 0 else labels[1] if i == len(rows) - 1 else ""
        out.append(tick.rjust(pad) + "│", style="dim")
        out.append(row + ("\n" if i < len(rows) - 1 else ""), style="cyan")
    if not points:
        out.append("  (no points yet)", style="dim")
    return out


def distribution_text(latest: IterationRows | None, width: int) -> Text:
    """The latest iteration's outcomes as a histogram, with GRPO's diagnostics."""
    out = Text()
    if latest is None:
        out.append("rewards: no rollout summaries yet", style="dim")
        return out
    st = latest.stats
    rewards = finite(latest.rewards())
    share = st.equal_share
    out.append(f"iteration {latest.iteration}", style="bold")
    out.append(f" · {st.trajectories} trajectories · {st.groups} groups · mean reward "
               f"{fmt(st.mean)}\n")
    out.append("equal-reward groups ", style="bold")
    out.append(f"{'—' if share is None else f'{share:.0%}'}", style="bold yellow")
    out.append(" (no learning signal) · outcome = total_reward\n", style="dim")
    left, right = fmt(min(rewards, default=None)), fmt(max(rewards, default=None))
    counts, _, _ = histogram(rewards, max(4, min(60, width - len(left) - len(right) - 2)))
    top, bottom = bars(counts, 2)
    out.append(" " * (len(left) + 1) + top + "\n", style="green")
    out.append(left + " ", style="dim")
    out.append(bottom, style="green")
    out.append(" " + right, style="dim")
    return out


def checkpoint_lines(checkpoints: Sequence[Mapping[str, Any]], last_step: int | None,
                     width: int) -> Text:
    """The checkpoints along the run's steps: ``┃`` at a final or kept one, ``│`` at a rolling
    one, with the latest few named."""
    out = Text()
    out.append("checkpoints", style="bold")
    if not checkpoints:
        out.append("  none yet", style="dim")
        return out
    batches = [c.get("batch") for c in checkpoints]
    nums = [b for b in batches if type(b) is int]
    end = max([*nums, last_step or 0, 1])
    line = [" "] * max(1, width)
    for c in checkpoints:
        b = c.get("batch")
        if type(b) is not int:
            continue
        pos = min(len(line) - 1, int(b / end * (len(line) - 1)))
        line[pos] = "│" if c.get("rolling") is True else "┃"
    names = ", ".join(clean(c.get("name", "?")) for c in list(checkpoints)[-3:])
    out.append(f"  {len(checkpoints)} · latest {names}\n")
    out.append("".join(line), style="yellow")
    return out


def findings_text(findings: Sequence[Finding], state: str, limit: int) -> Text:
    """The validator's findings, newest last, cut to ``limit`` lines."""
    out = Text()
    out.append("findings", style="bold")
    errors = sum(1 for f in findings if f.severity == Severity.ERROR)
    out.append(f"  {state}: {len(findings)} ({errors} errors)")
    for f in list(findings)[-limit:]:
        style = {Severity.ERROR: "red", Severity.WARNING: "yellow"}.get(f.severity, "dim")
        where = f.file + (f":{f.line}" if f.line else "")
        out.append(f"\n{f.code} {f.severity} {clean(where)}: {clean(f.message)}",
                   style=style)
    return out
