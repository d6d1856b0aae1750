"""The report's trajectory sections: worst and best trajectories of the run, and the iteration list
with each iteration's mean reward and failure count, every entry linking to its page."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from rlio.logtree.iteration_page import Trajectory, fmt

#: The worst and the best table each list this many trajectories.
TOP_TRAJECTORIES = 15


def split_title(split: str) -> str:
    """A split as a heading."""
    if split == "train":
        return "Training rollouts"
    if split == "timing":
        return "Timing charts"
    return f"Evaluator {split.removeprefix('eval/')}"


@dataclass
class IterationStats:
    """One iteration as the report's list shows it."""

    iteration: int
    href: str
    count: int | None = None  # rollout summary lines; None without the file
    failing: int = 0
    mean: float | None = None


@dataclass
class Extremes:
    """The lowest and highest rewarded trajectories seen so far (bounded heaps)."""

    worst: list[tuple[float, int, Trajectory, str]] = field(default_factory=list)
    best: list[tuple[float, int, Trajectory, str]] = field(default_factory=list)
    seen: int = 0

    def add(self, trajs: Sequence[Trajectory], href: str) -> None:
        """Offer one iteration's trajectories (``href``: its page, relative to the report)."""
        for t in trajs:
            r = t.reward
            if r is None or math.isnan(r):
                continue
            self.seen += 1
            item = (r, self.seen, t, href)
            if len(self.best) < TOP_TRAJECTORIES:
                heapq.heappush(self.best, item)
            elif r > self.best[0][0]:
                heapq.heapreplace(self.best, item)
            neg = (-r, self.seen, t, href)
            if len(self.worst) < TOP_TRAJECTORIES:
                heapq.heappush(self.worst, neg)
            elif -r > self.worst[0][0]:
                heapq.heapreplace(self.worst, neg)


def stats_of(it: int, trajs: Sequence[Trajectory] | None, href: str) -> IterationStats:
    """The list entry of one iteration."""
    st = IterationStats(it, href)
    if trajs is None:
        return st
    rewards = [r for t in trajs if (r := t.reward) is not None and not math.isnan(r)]
    st.count = len(trajs)
    st.failing = sum(t.failing for t in trajs)
    st.mean = sum(rewards) / len(rewards) if rewards else None
    return st


def _rows(items: list[tuple[float, int, Trajectory, str]]) -> str:
    out = []
    for _r, _n, t, href in items:
        cls = ' class="fail"' if t.failing else ""
        out.append(f'<tr{cls}><td>{escape(t.split)}</td><td>{t.iteration}</td><td>{t.group}</td>'
                   f'<td>{t.traj}</td><td class="num">{fmt(t.total_reward)}</td>'
                   f'<td class="num">{fmt(t.final_reward)}</td><td>{"yes" if t.done else "no"}'
                   f'</td><td><a href="{escape(href)}#traj-{t.group}-{t.traj}">page</a></td></tr>')
    return "".join(out)


def section_extremes(ex: Extremes) -> str:
    """Tables of the worst and best trajectories across the run, each row linking to its page."""
    out = ['<section id="trajectories"><h2>Worst and best trajectories</h2>']
    if not ex.seen:
        out.append('<p class="note">No rewarded trajectory in the rollout summaries.</p>'
                   "</section>")
        return "".join(out)
    head = ("<thead><tr><th>split</th><th>iteration</th><th>group</th><th>traj</th><th>total "
            "reward</th><th>final reward</th><th>done</th><th>link</th></tr></thead>")
    worst = sorted(ex.worst, key=lambda i: (-i[0], i[1]))
    worst = [(-r, n, t, h) for r, n, t, h in worst]
    best = sorted(ex.best, key=lambda i: (-i[0], i[1]))
    out.append('<div class="charts">')
    for name, items in (("Worst", worst), ("Best", best)):
        out.append(f'<div><h3>{name} {len(items)}</h3><div class="scroll"><table '
                   f'class="extremes {name.lower()}">{head}<tbody>{_rows(items)}</tbody></table>'
                   "</div></div>")
    out.append("</div></section>")
    return "".join(out)


def section_iteration_list(splits: dict[str, list[IterationStats]],
                           timing: dict[int, str], href: Callable[[str], str]) -> str:
    """Every iteration's page per split, with mean reward and failing trajectories."""
    out = ['<section id="iterations"><h2>Iterations</h2>']
    if not splits and not timing:
        out.append('<p class="note">No per-iteration pages in this run.</p>')
    for split in sorted(splits, key=lambda s: (s != "train", s)):
        its = splits[split]
        fails = sum(s.failing for s in its)
        opened = " open" if split == "train" or len(its) <= 200 else ""
        out.append(f'<details class="pages" data-split="{escape(split)}"{opened}><summary>'
                   f'{escape(split_title(split))} <span class="count">({len(its):,} pages, '
                   f"{fails:,} failing trajectories)</span></summary><nav class=\"it-list\">")
        for s in its:
            bad = " has-fail" if s.failing else ""
            detail = ("no rollouts" if s.count is None else
                      f"{fmt(s.mean)}" + (f" · {s.failing}✗" if s.failing else ""))
            out.append(f'<a class="it{bad}" href="{escape(s.href)}" data-iteration='
                       f'"{s.iteration}" data-failing="{s.failing}"><b>{s.iteration}</b> '
                       f'<span class="it-detail">{escape(detail)}</span></a>')
        out.append("</nav></details>")
    if timing:
        out.append('<details class="pages" data-split="timing"><summary>Timing charts <span '
                   f'class="count">({len(timing):,} pages)</span></summary><nav class="grid">')
        out.extend(f'<a href="{escape(href(timing[i]))}">{i}</a>' for i in sorted(timing))
        out.append("</nav></details>")
    out.append("</section>")
    return "".join(out)
