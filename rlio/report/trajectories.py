"""What the report draws from the rollout summaries (as view models): per-iteration reward boxes,
GRPO's group diagnostics and staleness,
the worst and best trajectories of the run, and the iteration list with each iteration's mean
reward and failure count, every entry linking to its page.

A box holds the finite rewards of one iteration (min, quartiles, max); staleness is
``iteration - sampling_client_step`` (async training samples with an older policy), charted as
its per-iteration maximum where it is ever non-zero.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from rlio.logtree.iteration_page import Trajectory
from rlio.outcome import FAILING_RULE, iteration_stats
from rlio.report import svg as _svg

#: The worst and the best table each list this many trajectories.
TOP_TRAJECTORIES = 15
_Rated = tuple[float, int, Trajectory, str]  # (reward or its negation, arrival, row, link)


def split_title(split: str) -> str:
    """A split as a heading."""
    if split == "train":
        return "Training rollouts"
    return f"Evaluator {split.removeprefix('eval/')}"


def split_order(split: str) -> tuple[bool, str]:
    """Training first, then evaluators by name."""
    return split != "train", split


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (``q`` in 0..1)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def box(iteration: int, rewards: Sequence[float]) -> _svg.Box | None:
    """The box of the finite ``rewards``; None when there are none."""
    xs = sorted(r for r in rewards if math.isfinite(r))
    if not xs:
        return None
    return _svg.Box(iteration, xs[0], quantile(xs, 0.25), quantile(xs, 0.5),
                    quantile(xs, 0.75), xs[-1], len(xs))


@dataclass
class IterationStats:
    """One iteration as the report's list shows it."""

    iteration: int
    href: str
    count: int | None = None  # rollout summary lines; None without the file
    failing: int = 0
    mean: float | None = None
    equal_share: float | None = None  # groups whose rewards are all equal


def _offer(heap: list[_Rated], item: _Rated) -> None:
    """Keep ``item`` in a bounded min-heap of the ``TOP_TRAJECTORIES`` largest."""
    if len(heap) < TOP_TRAJECTORIES:
        heapq.heappush(heap, item)
    elif item[0] > heap[0][0]:
        heapq.heapreplace(heap, item)


class Rollouts:
    """Collects what the sections need while the report reads the iterations."""

    def __init__(self) -> None:
        self.listing: dict[str, list[IterationStats]] = {}
        self.boxes: dict[str, list[_svg.Box]] = {}
        self.stale: list[tuple[int, int]] = []
        #: per split: (iteration, share of all-equal groups, mean sampled tokens per trajectory)
        self.grpo: dict[str, list[tuple[int, float | None, float | None]]] = {}
        self.worst: list[_Rated] = []  # negated rewards
        self.best: list[_Rated] = []
        self.seen = 0

    def add(self, split: str, it: int, trajs: Sequence[Trajectory] | None, href: str,
            linked: Collection[tuple[int, int]] = ()) -> None:
        """One iteration's rows (None without the file); ``href``: its page from the report;
        ``linked``: the (group, traj) pairs whose transcript the page anchors (a row of any
        other links to the page itself, never to a missing ``#traj-G-T``)."""
        st = IterationStats(it, href)
        self.listing.setdefault(split, []).append(st)
        if trajs is None:
            return
        rewards = [r for t in trajs if (r := t.reward) is not None]
        diag = iteration_stats(trajs)
        st.count, st.failing, st.mean = diag.trajectories, diag.failing, diag.mean
        st.equal_share = diag.equal_share
        if trajs:
            self.grpo.setdefault(split, []).append((it, diag.equal_share, diag.ac_tokens))
        b = box(it, rewards)
        if b is not None:
            self.boxes.setdefault(split, []).append(b)
        if split == "train" and diag.staleness_max is not None:
            self.stale.append((it, diag.staleness_max))
        for t in trajs:
            if t.reward is not None and not math.isnan(t.reward):
                self.seen += 1
                link = f"{href}#{t.anchor}" if (t.group, t.traj) in linked else href
                _offer(self.best, (t.reward, self.seen, t, link))
                _offer(self.worst, (-t.reward, self.seen, t, link))


@dataclass(frozen=True, slots=True)
class BoxCard:
    """One split's reward distribution chart."""

    split: str
    title: str
    iterations: int
    chart: _svg.BoxChart


@dataclass(frozen=True, slots=True)
class Card:
    """A line chart with its heading, caption and data attributes."""

    title: str
    stats: str
    chart: _svg.LineChart
    attrs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RewardsView:
    """Reward distributions by split, then staleness (``stale_note``: all current)."""

    boxes: list[BoxCard]
    rule: str = FAILING_RULE
    max_boxes: int = _svg.MAX_BOXES
    staleness: Card | None = None
    stale_note: bool = False


def rewards_view(ro: Rollouts) -> RewardsView:
    """The reward distribution chart of each split, then staleness where it is ever non-zero."""
    boxes = [BoxCard(split, split_title(split), len(ro.boxes[split]), _svg.box_view(
        ro.boxes[split], label=f"reward by iteration, {split}", chart_id=f"rewards-{i}"))
        for i, split in enumerate(sorted(ro.boxes, key=split_order))]
    stale = None
    if any(s for _, s in ro.stale):
        xs = [float(i) for i, _ in ro.stale]
        ys = [float(s) for _, s in ro.stale]
        chart = _svg.line_view(_svg.Series("staleness", xs, ys, len(xs)), x_label="iteration",
                               chart_id="stale-0")
        stale = Card("Staleness", "largest iteration − sampling_client_step per iteration · max "
                     f"{max(ys):.0f}", chart, (("id", "staleness"),))
    return RewardsView(boxes, staleness=stale, stale_note=bool(ro.stale) and stale is None)


def grpo_view(ro: Rollouts) -> list[Card]:
    """GRPO's own diagnostics over training: the share of groups whose rewards are all equal
    (every advantage 0: no learning signal) and the sampled tokens per trajectory."""
    out: list[Card] = []
    for split in sorted(ro.grpo, key=split_order):
        rows = ro.grpo[split]
        for key, what, col in (("equal_share", "Groups with all-equal rewards (share)", 1),
                               ("ac_tokens", "Sampled tokens per trajectory", 2)):
            pts = [(float(r[0]), float(v)) for r in rows if (v := r[col]) is not None]
            if pts:
                xs, ys = [p[0] for p in pts], [p[1] for p in pts]
                chart = _svg.line_view(_svg.Series(key, xs, ys, len(xs)), x_label="iteration",
                                       chart_id=f"grpo-{len(out)}")
                out.append(Card(what, f"{split_title(split)} · last {_svg.fmt(ys[-1])}", chart,
                                (("data-grpo", key), ("data-split", split))))
    return out


@dataclass(frozen=True, slots=True)
class Extreme:
    """One row of the worst or best table."""

    t: Trajectory
    href: str


def extremes_view(ro: Rollouts) -> list[tuple[str, list[Extreme]]]:
    """The worst and best trajectories across the run (empty: none has a reward)."""
    if not ro.seen:
        return []
    return [(name, [Extreme(t, h) for _, _, t, h in sorted(heap, key=lambda i: (-i[0], i[1]))])
            for name, heap in (("Worst", ro.worst), ("Best", ro.best))]


@dataclass(frozen=True, slots=True)
class SplitList:
    """One split's iteration pages, with mean reward, failing count and all-equal share."""

    split: str
    title: str
    open: bool
    failing: int
    iterations: list[IterationStats]


def iterations_view(ro: Rollouts, timing: dict[int, str],
                    href: Callable[[str], str]) -> tuple[list[SplitList], list[tuple[int, str]]]:
    """Every iteration's page per split, and the timing pages."""
    splits = [SplitList(split, split_title(split), split == "train" or len(its) <= 200,
                        sum(s.failing for s in its), its)
              for split in sorted(ro.listing, key=split_order) if (its := ro.listing[split])]
    return splits, [(i, href(timing[i])) for i in sorted(timing)]
