"""The compare page's per-prompt change of two runs, with statistics (a view model).

For a pair of runs (the two compared, or the baseline and another) the page reads
``rlio.report.prompt_change`` for one split both runs logged (an evaluator's first, else
training), each side at the last iteration with rollouts of that split: what
``rlio compare --prompts A B --split SPLIT`` prints, so the page and the command agree. It shows
the verdict in one line, the most improved and most regressed prompts (each linked to the
prompt's row of the page's prompt table by the report's prompt key) and a footnote naming the
test, the seed and the resample count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rlio._codec.numtext import number_text
from rlio.errors import RlioError
from rlio.reader.dataset import RunFiles
from rlio.reader.run import open_run
from rlio.report.prompt_change import IMPROVED, REGRESSED, Side, prompt_change

__all__ = ["ChangeView", "MoverRow", "change_view", "common_split"]

#: The prompts each movers table lists.
TOP_MOVERS: Final = 10
#: What each side reads: the last iteration with rollouts of the split (the final policy; what
#: ``rlio compare --prompts A B`` reads, and where the page's prompt table scores a prompt).
ITERATIONS: Final = "last"
_TESTS: Final = {"mcnemar-exact": "McNemar exact", "wilcoxon-exact": "Wilcoxon signed-rank exact",
                 "wilcoxon-normal": "Wilcoxon signed-rank (normal approximation)"}


@dataclass(frozen=True, slots=True)
class MoverRow:
    """One prompt that moved: both means, the change, its interval and the sample sizes;
    ``anchor`` is its row in the page's prompt table (None: not listed there)."""

    key: str
    label: str
    mean_a: float
    mean_b: float
    delta: str
    interval: str
    n_a: int
    n_b: int
    changed: bool
    anchor: str | None


@dataclass(frozen=True, slots=True)
class ChangeView:
    """A pair's per-prompt change: the verdict line, the movers and the footnote, or a note
    saying why there is none (``verdict`` is then None)."""

    split: str | None
    verdict: str | None
    trend: str
    line: str
    improved: list[MoverRow]
    regressed: list[MoverRow]
    footnote: str


def _signed(v: float | None) -> str:
    if v is None:
        return "—"
    return ("+" if v > 0 else "") + number_text(v)


def common_split(a: str, b: str) -> str | None:
    """A split both runs at ``a`` and ``b`` have rollouts of: the first evaluator's (by name)
    they share, else ``train``; None when they share none."""
    def splits(location: str) -> set[str]:
        return {split for _, split in RunFiles(open_run(location)).pick(None)}

    both = splits(a) & splits(b)
    evals = sorted(s for s in both if s != "train")
    return evals[0] if evals else "train" if "train" in both else None


def _test_text(t: Mapping[str, Any]) -> str:
    name = _TESTS.get(t["name"], t["name"])
    p = f"p = {t['p_value']:.2g}"
    if t["name"] == "mcnemar-exact":
        return (f"{name} {p} ({t['detail']['c']:,} prompts 0→1, {t['detail']['b']:,} "
                f"1→0)")
    return (f"{name} {p} (W+ = {t['statistic']:g}, n = {t['n']:,}, "
            f"{t['detail']['zeros']:,} unchanged dropped)")


def _rows(prompts: Sequence[Mapping[str, Any]], split: str,
          anchors: Mapping[tuple[str, str], str]) -> list[MoverRow]:
    return [MoverRow(p["key"], p["label"], p["mean_a"], p["mean_b"], _signed(p["delta"]),
                     f"[{_signed(p['ci_low'])}, {_signed(p['ci_high'])}]", p["n_a"], p["n_b"],
                     p["changed"], anchors.get((split, p["key"])))
            for p in prompts]


def _side(s: Mapping[str, Any], name: str) -> str:
    its = s["iterations"]
    at = f"iteration {its[0]}" if len(its) == 1 else f"iterations {', '.join(map(str, its))}"
    return (f"{name} at {at} ({s['trajectories']:,} trajectories, {s['prompts']:,} "
            f"prompts)")


def change_view(a: str, b: str, anchors: Mapping[tuple[str, str], str],
                names: tuple[str, str] = ("A", "B")) -> ChangeView:
    """The per-prompt change from the run at ``a`` to the run at ``b`` (locations);
    ``anchors``: the page's prompt-table row of each (split, prompt key) it lists; ``names``:
    the runs as the page names them."""
    try:
        split = common_split(a, b)
        if split is None:
            return ChangeView(None, None, "", "The two runs have no split of rollouts in common.",
                              [], [], "")
        d = prompt_change(Side(a, split, ITERATIONS), Side(b, split, ITERATIONS),
                          top=TOP_MOVERS).to_dict()
    except (OSError, ValueError, RlioError) as exc:
        return ChangeView(None, None, "", f"No per-prompt change: {exc}", [], [], "")
    pct = f"{round(100 * d['confidence'])}%"
    if d["matched"]:
        line = (f"{d['verdict']} · mean {_signed(d['mean_delta'])} [{pct} CI "
                f"{_signed(d['ci_low'])}, {_signed(d['ci_high'])}] · {_test_text(d['test'])}")
    else:
        line = f"{d['verdict']} · no prompt on both sides"
    trend = "up" if d["verdict"] == IMPROVED else "down" if d["verdict"] == REGRESSED else ""
    footnote = (
        f"{split}: A is {_side(d['a'], names[0])}, B is {_side(d['b'], names[1])}; "
        f"{d['matched']:,} matched by "
        f"{d['match']} ({d['only_a']:,} only in A, {d['only_b']:,} only in B). Test: "
        f"{_TESTS.get(d['test']['name'], d['test']['name'])} (McNemar when every reward is 0 "
        f"or 1 with one trajectory per prompt and side, else Wilcoxon signed-rank of the "
        f"per-prompt changes), alpha {d['alpha']:g}. Intervals: {pct} percentile bootstrap, "
        f"{d['resamples']:,} resamples, seed {d['seed']} (per prompt: each side's rewards "
        f"resampled; overall: prompts resampled). {d['changed']:,} prompt(s) have an interval "
        f"that excludes 0.")
    return ChangeView(split, d["verdict"], trend, line, _rows(d["improved"], split, anchors),
                      _rows(d["regressed"], split, anchors), footnote)
