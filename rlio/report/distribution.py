"""Per-iteration reward distributions (min, quartiles, max as SVG boxes) and staleness.

One chart per split (training, then each evaluator): at each iteration a whisker from min to max,
a box from the first to the third quartile and a tick at the median, from the finite rewards of
that iteration's rollout summaries. Staleness is ``iteration - sampling_client_step`` (async
training samples with an older policy), charted as its per-iteration maximum where it is ever
non-zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from rlio.logtree.iteration_page import Trajectory
from rlio.report import svg as _svg

_W, _H = 720, 220
_L, _R, _T, _B = 60, 16, 14, 30
#: At most this many iterations are drawn per chart (evenly sampled, first and last kept).
MAX_BOXES = 300


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile of already sorted values (``q`` in 0..1)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Box:
    """Five numbers of one iteration's rewards."""

    iteration: int
    lo: float
    q1: float
    median: float
    q3: float
    hi: float
    n: int


def box(iteration: int, rewards: Sequence[float]) -> Box | None:
    """The box of the finite ``rewards``; None when there are none."""
    xs = sorted(r for r in rewards if math.isfinite(r))
    if not xs:
        return None
    return Box(iteration, xs[0], quantile(xs, 0.25), quantile(xs, 0.5), quantile(xs, 0.75),
               xs[-1], len(xs))


def _sample(boxes: Sequence[Box]) -> list[Box]:
    if len(boxes) <= MAX_BOXES:
        return list(boxes)
    step = (len(boxes) - 1) / (MAX_BOXES - 1)
    return [boxes[round(i * step)] for i in range(MAX_BOXES)]


def box_chart(boxes: Sequence[Box], *, label: str, chart_id: str) -> str:
    """An inline ``<svg>`` of one box per iteration; each ``<g class="box">`` has a tooltip."""
    drawn = _sample(boxes)
    parts = [f'<svg class="chart boxes" id="{escape(chart_id)}" viewBox="0 0 {_W} {_H}" '
             f'role="img" aria-label="{escape(label)}" data-boxes="{len(drawn)}">']
    pw, ph = _W - _L - _R, _H - _T - _B
    parts.append(f'<rect class="plot" x="{_L}" y="{_T}" width="{pw}" height="{ph}"/>')
    if not drawn:
        parts.append(f'<text class="empty" x="{_L + pw / 2:.0f}" y="{_T + ph / 2:.0f}" '
                     'text-anchor="middle">no finite rewards</text></svg>')
        return "".join(parts)
    y0 = min(b.lo for b in drawn)
    y1 = max(b.hi for b in drawn)
    if y1 <= y0:
        y0, y1 = y0 - 1, y1 + 1
    x0, x1 = drawn[0].iteration, drawn[-1].iteration
    span = max(1, x1 - x0)
    width = max(2.0, min(24.0, pw / (len(drawn) + 1) * 0.7))

    def px(x: float) -> float:
        return _L + width / 2 + (x - x0) / span * (pw - width)

    def py(y: float) -> float:
        return _T + (1 - (y - y0) / (y1 - y0)) * ph

    for t in _svg.nice_ticks(y0, y1, 4):
        if y0 <= t <= y1:
            parts.append(f'<line class="grid" x1="{_L}" x2="{_L + pw}" y1="{py(t):.1f}" '
                         f'y2="{py(t):.1f}"/><text class="tick" x="{_L - 6}" '
                         f'y="{py(t) + 4:.1f}" text-anchor="end">{escape(_svg.tick(t))}</text>')
    for t in _svg.nice_ticks(x0, x1, 6):
        if x0 <= t <= x1 and t == int(t):
            parts.append(f'<text class="tick" x="{px(t):.1f}" y="{_T + ph + 18}" '
                         f'text-anchor="middle">{escape(_svg.tick(t))}</text>')
    for b in drawn:
        x = px(b.iteration)
        tip = (f"iteration {b.iteration}: min {_svg.fmt(b.lo)}, q1 {_svg.fmt(b.q1)}, median "
               f"{_svg.fmt(b.median)}, q3 {_svg.fmt(b.q3)}, max {_svg.fmt(b.hi)} ({b.n} "
               "trajectories)")
        top, bottom = py(b.q3), py(b.q1)
        parts.append(
            f'<g class="box" data-iteration="{b.iteration}"><title>{escape(tip)}</title>'
            f'<line class="whisker" x1="{x:.1f}" x2="{x:.1f}" y1="{py(b.hi):.1f}" '
            f'y2="{py(b.lo):.1f}"/><rect class="iqr" x="{x - width / 2:.1f}" y="{top:.1f}" '
            f'width="{width:.1f}" height="{max(1.0, bottom - top):.1f}"/>'
            f'<line class="median" x1="{x - width / 2:.1f}" x2="{x + width / 2:.1f}" '
            f'y1="{py(b.median):.1f}" y2="{py(b.median):.1f}"/></g>')
    parts.append("</svg>")
    return "".join(parts)


def staleness(trajs: Sequence[Trajectory]) -> int | None:
    """The largest ``iteration - sampling_client_step`` of one iteration, None when not logged."""
    values = [t.iteration - t.sampling_client_step for t in trajs
              if t.sampling_client_step is not None]
    return max(values) if values else None


def section_rewards(boxes: dict[str, list[Box]], stale: list[tuple[int, int]],
                    titles: dict[str, str]) -> str:
    """The reward distribution chart of each split, then staleness where it is ever non-zero."""
    out = ['<section id="rewards"><h2>Reward distributions</h2>']
    if not boxes:
        out.append('<p class="note">No rollout summaries in this run.</p></section>')
        return "".join(out)
    out.append('<p class="note">Per iteration: whisker min–max, box first–third quartile, tick '
               "at the median, over the trajectories' rewards (final reward where logged, else "
               "total reward).</p><div class=\"charts\">")
    for i, split in enumerate(sorted(boxes, key=lambda s: (s != "train", s))):
        bs = boxes[split]
        note = f"{len(bs):,} iterations" + (f", {MAX_BOXES:,} drawn" if len(bs) > MAX_BOXES
                                            else "")
        chart = box_chart(bs, label=f"reward by iteration, {split}", chart_id=f"rewards-{i}")
        out.append(f'<figure class="card chart-card" data-split="{escape(split)}"><figcaption>'
                   f'<h3>{escape(titles.get(split, split))}</h3><p class="stats">{note}</p>'
                   f"</figcaption>{chart}</figure>")
    out.append("</div>")
    if any(s for _, s in stale):
        xs = [float(i) for i, _ in stale]
        ys = [float(s) for _, s in stale]
        series = _svg.Series("staleness", xs, ys, len(xs))
        out.append('<figure class="card chart-card" id="staleness"><figcaption><h3>Staleness'
                   "</h3><p class=\"stats\">largest iteration − sampling_client_step per "
                   f"iteration · max {max(ys):.0f}</p></figcaption>"
                   f"{_svg.line_chart(series, x_label='iteration', chart_id='stale-0')}</figure>")
    elif stale:
        out.append('<p class="note">Staleness: every trajectory was sampled by the current '
                   "policy (iteration = sampling_client_step).</p>")
    out.append("</section>")
    return "".join(out)
