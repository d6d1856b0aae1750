"""What the report draws from the rollout summaries: per-iteration reward boxes and staleness,
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
from html import escape

from rlio.logtree.iteration_page import Trajectory, fmt
from rlio.outcome import FAILING_RULE, iteration_stats
from rlio.report import svg as _svg
from rlio.report.page import section, table

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
        steps = [t.iteration - t.sampling_client_step for t in trajs
                 if t.sampling_client_step is not None]
        if split == "train" and steps:
            self.stale.append((it, max(steps)))
        for t in trajs:
            if t.reward is not None and not math.isnan(t.reward):
                self.seen += 1
                link = f"{href}#{t.anchor}" if (t.group, t.traj) in linked else href
                _offer(self.best, (t.reward, self.seen, t, link))
                _offer(self.worst, (-t.reward, self.seen, t, link))


def section_rewards(ro: Rollouts) -> str:
    """The reward distribution chart of each split, then staleness where it is ever non-zero."""
    if not ro.boxes:
        return section("rewards", "Reward distributions",
                       '<p class="note">No rollout summaries in this run.</p>')
    out = ['<p class="note">Per iteration: whisker min–max, box first–third quartile, tick '
           "at the median, over the trajectories' total rewards (step rewards + final reward)."
           f" {escape(FAILING_RULE)}.</p><div class=\"charts\">"]
    for i, split in enumerate(sorted(ro.boxes, key=split_order)):
        bs = ro.boxes[split]
        drawn = f", {_svg.MAX_BOXES:,} drawn" if len(bs) > _svg.MAX_BOXES else ""
        chart = _svg.box_chart(bs, label=f"reward by iteration, {split}", chart_id=f"rewards-{i}")
        out.append(f'<figure class="card chart-card" data-split="{escape(split)}"><figcaption>'
                   f'<h3>{escape(split_title(split))}</h3><p class="stats">{len(bs):,} '
                   f"iterations{drawn}</p></figcaption>{chart}</figure>")
    out.append("</div>")
    if any(s for _, s in ro.stale):
        xs = [float(i) for i, _ in ro.stale]
        ys = [float(s) for _, s in ro.stale]
        chart = _svg.line_chart(_svg.Series("staleness", xs, ys, len(xs)), x_label="iteration",
                                chart_id="stale-0")
        out.append('<figure class="card chart-card" id="staleness"><figcaption><h3>Staleness'
                   "</h3><p class=\"stats\">largest iteration − sampling_client_step per "
                   f"iteration · max {max(ys):.0f}</p></figcaption>{chart}</figure>")
    elif ro.stale:
        out.append('<p class="note">Staleness: every trajectory was sampled by the current '
                   "policy (iteration = sampling_client_step).</p>")
    return section("rewards", "Reward distributions", "".join(out))


def _grpo_chart(split: str, i: int, points: list[tuple[int, float]], key: str,
                what: str) -> str:
    xs, ys = [float(p[0]) for p in points], [float(p[1]) for p in points]
    chart = _svg.line_chart(_svg.Series(key, xs, ys, len(xs)), x_label="iteration",
                            chart_id=f"grpo-{i}")
    return (f'<figure class="card chart-card" data-grpo="{escape(key)}" data-split="'
            f'{escape(split)}"><figcaption><h3>{escape(what)}</h3><p class="stats">'
            f"{escape(split_title(split))} · last {_svg.fmt(ys[-1])}</p></figcaption>{chart}"
            "</figure>")


def section_grpo(ro: Rollouts) -> str:
    """GRPO's own diagnostics over training: the share of groups whose rewards are all equal
    (every advantage 0: no learning signal) and the sampled tokens per trajectory."""
    title = "GRPO signal"
    if not ro.grpo:
        return section("grpo", title, '<p class="note">No rollout summaries in this run.</p>')
    out = ['<p class="note">A group whose trajectories all have the same total reward gives '
           "every one advantage 0 (advantage: total reward minus the group's mean), so it "
           "teaches nothing. Tokens: sampled (ac) tokens per trajectory, mean per iteration."
           '</p><div class="charts">']
    n = 0
    for split in sorted(ro.grpo, key=split_order):
        rows = ro.grpo[split]
        for key, what, col in (("equal_share", "Groups with all-equal rewards (share)", 1),
                               ("ac_tokens", "Sampled tokens per trajectory", 2)):
            pts = [(r[0], v) for r in rows if (v := r[col]) is not None]
            if pts:
                out.append(_grpo_chart(split, n, pts, key, what))
                n += 1
    out.append("</div>")
    return section("grpo", title, "".join(out))


def _row(t: Trajectory, link: str) -> str:
    cls = ' class="fail"' if t.failing else ""
    return (f"<tr{cls}><td>{escape(t.split)}</td><td>{t.iteration}</td><td>{t.group}</td>"
            f'<td>{t.traj}</td><td class="num">{fmt(t.total_reward)}</td><td class="num">'
            f'{fmt(t.final_reward)}</td><td>{"yes" if t.done else "no"}</td><td><a href="'
            f'{escape(link)}">page</a></td></tr>')


def section_extremes(ro: Rollouts) -> str:
    """Tables of the worst and best trajectories across the run, each row linking to its page."""
    title = "Worst and best trajectories"
    if not ro.seen:
        return section("trajectories", title,
                       '<p class="note">No rewarded trajectory in the rollout summaries.</p>')
    heads = ("split", "iteration", "group", "traj", "total reward", "final reward", "done",
             "link")
    out = ['<div class="charts">']
    for name, heap in (("Worst", ro.worst), ("Best", ro.best)):
        rows = [_row(t, h) for _, _, t, h in sorted(heap, key=lambda i: (-i[0], i[1]))]
        out.append(f"<div><h3>{name} {len(rows)}</h3>"
                   f"{table(f'extremes {name.lower()}', heads, rows)}</div>")
    return section("trajectories", title, "".join(out) + "</div>")


def section_iteration_list(ro: Rollouts, timing: dict[int, str],
                           href: Callable[[str], str]) -> str:
    """Every iteration's page per split, with mean reward and failing trajectories."""
    out = [] if ro.listing or timing else [
        '<p class="note">No per-iteration pages in this run.</p>']
    for split in sorted(ro.listing, key=split_order):
        its = ro.listing[split]
        opened = " open" if split == "train" or len(its) <= 200 else ""
        out.append(f'<details class="pages" data-split="{escape(split)}"{opened}><summary>'
                   f'{escape(split_title(split))} <span class="count">({len(its):,} pages, '
                   f"{sum(s.failing for s in its):,} failing trajectories)</span></summary>"
                   '<nav class="it-list">')
        for s in its:
            detail = ("no rollouts" if s.count is None else
                      f"{fmt(s.mean)}" + (f" · {s.failing}✗" if s.failing else "")
                      + (f" · {s.equal_share:.0%} equal" if s.equal_share else ""))
            out.append(f'<a class="it{" has-fail" if s.failing else ""}" href="{escape(s.href)}" '
                       f'data-iteration="{s.iteration}" data-failing="{s.failing}"><b>'
                       f'{s.iteration}</b> <span class="it-detail">{escape(detail)}</span></a>')
        out.append("</nav></details>")
    if timing:
        out.append('<details class="pages" data-split="timing"><summary>Timing charts <span '
                   f'class="count">({len(timing):,} pages)</span></summary><nav class="grid">')
        out.extend(f'<a href="{escape(href(timing[i]))}">{i}</a>' for i in sorted(timing))
        out.append("</nav></details>")
    return section("iterations", "Iterations", "".join(out))
