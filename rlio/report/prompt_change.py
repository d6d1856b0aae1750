"""Which prompts a change helped or hurt, with statistics: ``prompt_change(a, b)``.

Each side is a run (or two sides of one run) with a split and the iterations or the checkpoint
to read: the trajectories there with a finite reward (``total_reward``) are grouped by prompt,
matched across the sides by the report's prompt key (docs/format.md §11: the system messages and
the first user message of the logged conversation) or, with ``match=KEY``, by an example id the
run logs under ``KEY`` in a trajectory's ``trajectory_metrics`` (or a step's ``logs``).

For each prompt on both sides: the mean reward on each side, the change ``mean_b - mean_a`` and
its percentile bootstrap interval (each side's rewards resampled, seeded by the seed and the
prompt, so a prompt's interval does not depend on the other prompts). Over the whole set: the
mean change with a paired bootstrap interval (prompts resampled), and one paired test:
McNemar's exact test when every reward is 0 or 1 and each prompt has one trajectory per side
(each prompt a pair of 0/1 outcomes), else the Wilcoxon signed-rank test of the per-prompt
changes (``rlio.report.paired_stats``). The verdict is ``improved`` or ``regressed`` when the
test's p-value is below ``alpha``, else ``no significant change``.

Everything returned is plain data (``PromptChange.to_dict()`` is JSON): the compare page and
``rlio compare --prompts`` show it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal

from rlio.reader.dataset import RunFiles, Trajectory
from rlio.reader.run import Run, open_run
from rlio.report.paired_stats import (
    PairedTest,
    bootstrap_mean,
    bootstrap_mean_diff,
    mcnemar_exact,
    wilcoxon_signed_rank,
)
from rlio.report.prompts import prompt_key, prompt_messages

__all__ = ["PromptChange", "PromptDelta", "Side", "SideSummary", "prompt_change"]

#: Verdicts.
IMPROVED: Final = "improved"
REGRESSED: Final = "regressed"
UNCHANGED: Final = "no significant change"


@dataclass(frozen=True)
class Side:
    """What one side of the comparison reads.

    Attributes:
        run: the run (a ``Run`` or its location).
        split: ``"train"``, ``"eval/<label>"`` or an evaluator's label.
        iterations: the iterations to read (None: every iteration with rollouts of the split;
            ``"first"`` or ``"last"``: the first or last of those).
        checkpoint: read the trajectories sampled with this checkpoint instead (its
            ``checkpoints.jsonl`` name; those whose ``sampling_client_step`` is its ``batch``),
            within ``iterations`` when given.
        name: how the side is shown (default: the run's name and what was read).
    """

    run: Run | str
    split: str = "train"
    iterations: tuple[int, ...] | Literal["first", "last"] | None = None
    checkpoint: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class SideSummary:
    """What a side read: its name, run, split, iterations, trajectories and prompts."""

    name: str
    run: str
    split: str
    iterations: list[int]
    checkpoint: str | None
    trajectories: int
    without_key: int
    prompts: int


@dataclass(frozen=True)
class PromptDelta:
    """One prompt on both sides: rewards, change and its bootstrap interval."""

    key: str
    label: str
    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float

    @property
    def changed(self) -> bool:
        """Whether the interval excludes 0."""
        return self.ci_low > 0 or self.ci_high < 0


@dataclass
class PromptChange:
    """The comparison of two sides, prompt by prompt (see the module docstring)."""

    a: SideSummary
    b: SideSummary
    match: str
    matched: int
    only_a: int
    only_b: int
    mean_delta: float | None
    ci_low: float | None
    ci_high: float | None
    test: PairedTest
    verdict: str
    alpha: float
    confidence: float
    seed: int
    resamples: int
    prompts: list[PromptDelta] = field(default_factory=list)
    top: int = 10

    @property
    def improved(self) -> list[PromptDelta]:
        """The prompts that gained most (positive changes, largest first), at most ``top``."""
        up = sorted((p for p in self.prompts if p.delta > 0), key=lambda p: (-p.delta, p.key))
        return up[: self.top]

    @property
    def regressed(self) -> list[PromptDelta]:
        """The prompts that lost most (negative changes, largest loss first), at most ``top``."""
        down = sorted((p for p in self.prompts if p.delta < 0), key=lambda p: (p.delta, p.key))
        return down[: self.top]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data: every field, the test, the movers, and each prompt."""
        def prompt(p: PromptDelta) -> dict[str, Any]:
            return {**asdict(p), "changed": p.changed}

        return {
            "a": asdict(self.a), "b": asdict(self.b), "match": self.match,
            "matched": self.matched, "only_a": self.only_a, "only_b": self.only_b,
            "mean_delta": self.mean_delta, "ci_low": self.ci_low, "ci_high": self.ci_high,
            "confidence": self.confidence, "test": asdict(self.test), "alpha": self.alpha,
            "verdict": self.verdict, "seed": self.seed, "resamples": self.resamples,
            "changed": sum(p.changed for p in self.prompts),
            "improved": [prompt(p) for p in self.improved],
            "regressed": [prompt(p) for p in self.regressed],
            "prompts": [prompt(p) for p in self.prompts],
        }


# -- reading a side ----------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content
                        if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def _label(messages: Sequence[Mapping[str, Any]] | None, key: str) -> str:
    """The first line of the prompt's user message, cut short (else the key)."""
    prompt = prompt_messages(messages or []) or []
    user = next((m for m in reversed(prompt) if m.get("role") == "user"), None)
    text = _text(user.get("content")).strip() if user else ""
    line = text.splitlines()[0] if text else key
    return line if len(line) <= 90 else line[:89] + "…"


def _example_id(t: Trajectory, key: str) -> str | None:
    """The example id logged under ``key`` in ``trajectory_metrics``, else in a step's logs."""
    steps = t.record.get("steps")
    places: list[Any] = [t.record.get("trajectory_metrics")]
    places += [s.get("logs") for s in steps if isinstance(s, Mapping)] \
        if isinstance(steps, list) else []
    for place in places:
        if isinstance(place, Mapping) and place.get(key) is not None:
            return str(place[key])
    return None


def _checkpoint_batch(run: Run, name: str) -> int:
    batch = None
    for rec in run.checkpoints():
        if rec.get("name") == name and type(rec.get("batch")) is int:
            batch = rec.get("batch")
    if batch is None:
        raise ValueError(f"no checkpoint named {name!r} with a batch in {run.location!r}")
    return int(batch)


@dataclass
class _Read:
    rewards: dict[str, list[float]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    trajectories: int = 0
    without_key: int = 0


def _read_side(side: Side, match: str) -> tuple[SideSummary, _Read]:
    run = side.run if isinstance(side.run, Run) else open_run(side.run)
    files = RunFiles(run)
    label, split = files.pick(side.split)[0]
    available = files.splits()[label]
    if side.iterations in ("first", "last"):
        iterations = [available[0 if side.iterations == "first" else -1]]
    else:
        wanted = set(available if side.iterations is None else side.iterations)
        iterations = [i for i in available if i in wanted]
    if not iterations:
        raise ValueError(f"no {split} rollouts at iterations {side.iterations} in "
                         f"{run.location!r}; it has them at {_span(available)}")
    batch = _checkpoint_batch(run, side.checkpoint) if side.checkpoint is not None else None
    out = _Read()
    used = []
    for i in iterations:
        trajs = [t for t in files.trajectories(i, label) if batch is None or t.step == batch]
        used += [i] if trajs else []
        for t in trajs:
            _add(out, t, match)
    if batch is not None and not used:
        raise ValueError(f"no {split} trajectory of {run.location!r} was sampled with "
                         f"checkpoint {side.checkpoint!r} (sampling_client_step {batch})")
    shown = side.name or _side_name(run, split, used, side.checkpoint)
    return SideSummary(shown, run.location, split, used, side.checkpoint, out.trajectories,
                       out.without_key, len(out.rewards)), out


def _add(out: _Read, t: Trajectory, match: str) -> None:
    if t.reward is None:
        return
    out.trajectories += 1
    key = prompt_key(t.messages or []) if match == "prompt" else _example_id(t, match)
    if key is None:
        out.without_key += 1
        return
    out.rewards.setdefault(key, []).append(t.reward)
    if key not in out.labels:
        out.labels[key] = _label(t.messages, key)


def _span(iterations: Sequence[int]) -> str:
    if len(iterations) == 1:
        return f"iteration {iterations[0]}"
    if list(iterations) == list(range(iterations[0], iterations[-1] + 1)):
        return f"iterations {iterations[0]}-{iterations[-1]}"
    return f"iterations {', '.join(map(str, iterations))}"


def _side_name(run: Run, split: str, iterations: Sequence[int], checkpoint: str | None) -> str:
    if checkpoint is not None:
        return f"{run.name} {split} @{checkpoint}"
    return f"{run.name} {split} {_span(iterations)}"


# -- the comparison ----------------------------------------------------------------------------


def _binary(a: Mapping[str, list[float]], b: Mapping[str, list[float]],
            keys: Iterable[str]) -> bool:
    """Every reward 0 or 1 and one trajectory per side for every matched prompt."""
    return all(len(a[k]) == 1 and len(b[k]) == 1 and a[k][0] in (0.0, 1.0)
               and b[k][0] in (0.0, 1.0) for k in keys)


def _test(a: Mapping[str, list[float]], b: Mapping[str, list[float]],
          deltas: Sequence[PromptDelta]) -> PairedTest:
    keys = [p.key for p in deltas]
    if keys and _binary(a, b, keys):
        lost = sum(a[k][0] == 1.0 and b[k][0] == 0.0 for k in keys)
        gained = sum(a[k][0] == 0.0 and b[k][0] == 1.0 for k in keys)
        return mcnemar_exact(lost, gained)
    return wilcoxon_signed_rank([p.delta for p in deltas])


def prompt_change(a: Side, b: Side, *, match: str = "prompt", seed: int = 0,
                  resamples: int = 1000, confidence: float = 0.95, alpha: float = 0.05,
                  top: int = 10) -> PromptChange:
    """Compare side ``b`` with side ``a`` prompt by prompt (see the module docstring).

    Args:
        match: ``"prompt"`` (the prompt key of the logged conversation) or the name of an
            example id the runs log in ``trajectory_metrics`` or a step's ``logs``.
        seed: seeds every bootstrap (the same seed, the same intervals).
        resamples: bootstrap resamples per interval.
        confidence: of the intervals (0.95: 2.5th to 97.5th percentile).
        alpha: the test's p-value below which the change is significant.
        top: how many prompts ``improved`` and ``regressed`` list.

    Raises:
        ValueError: a side names a split, iterations or a checkpoint its run does not have.
        NotARunError: a side's location is not a run.
    """
    if not 0 < confidence < 1 or not 0 < alpha < 1 or resamples < 1:
        raise ValueError("confidence and alpha must be in (0, 1) and resamples at least 1, got "
                         f"{confidence!r}, {alpha!r}, {resamples!r}")
    sa, ra = _read_side(a, match)
    sb, rb = _read_side(b, match)
    keys = sorted(set(ra.rewards) & set(rb.rewards))
    deltas = []
    for k in keys:
        xa, xb = ra.rewards[k], rb.rewards[k]
        lo, hi = bootstrap_mean_diff(xa, xb, seed=f"{seed}:{k}", resamples=resamples,
                                     confidence=confidence)
        ma, mb = math.fsum(xa) / len(xa), math.fsum(xb) / len(xb)
        deltas.append(PromptDelta(k, ra.labels.get(k) or rb.labels[k], len(xa), len(xb), ma,
                                  mb, mb - ma, lo, hi))
    test = _test(ra.rewards, rb.rewards, deltas)
    mean = math.fsum(p.delta for p in deltas) / len(deltas) if deltas else None
    ci = bootstrap_mean([p.delta for p in deltas], seed=seed, resamples=resamples,
                        confidence=confidence) if deltas else (None, None)
    verdict = UNCHANGED
    if mean is not None and test.p_value < alpha and mean != 0:
        verdict = IMPROVED if mean > 0 else REGRESSED
    return PromptChange(sa, sb, match, len(keys), len(ra.rewards) - len(keys),
                        len(rb.rewards) - len(keys), mean, ci[0], ci[1], test, verdict, alpha,
                        confidence, seed, resamples, deltas, top)
