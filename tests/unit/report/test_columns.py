"""rlio.report.columns: metrics columns downsampled while streaming, read from either parse."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from rlio import layout
from rlio.report import columns, reading
from rlio.report.columns import Column, MetricsScan
from rlio.storage import LocalStorage


def _reference(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Cut-back semantics point by point: a point drops every kept point at or past its x."""
    out: list[tuple[float, float]] = []
    for x, y in points:
        while out and out[-1][0] >= x:
            out.pop()
        out.append((x, y))
    return out


def _feed(col: Column, points: list[tuple[float, float]], block: int) -> None:
    for i in range(0, len(points), block):
        xs = [p[0] for p in points[i:i + block]]
        ys = [p[1] for p in points[i:i + block]]
        col.extend(xs, ys, columns._increasing(xs))


def test_a_short_column_is_exact_with_resumes_cut_back() -> None:
    """Up to thousands of points a column keeps every point; a drop in x cuts back, last wins."""
    rng = random.Random(3)
    pts = [(float(i), rng.random()) for i in range(3000)]
    pts += [(float(i), rng.random()) for i in range(2500, 3500)]  # a resume from step 2500
    col = Column()
    _feed(col, pts, 700)
    xs, ys = col.points()
    assert list(zip(xs, ys, strict=True)) == _reference(pts)
    assert col.total == 3500


def test_a_long_column_stays_bounded_and_keeps_its_extremes_and_ends() -> None:
    """A million points keep a few thousand: strictly increasing x, the global min and max, the
    first and last point, and the exact count."""
    rng = random.Random(5)
    n = 1_000_000
    ys_all = [rng.gauss(0, 1) for _ in range(n)]
    ys_all[123_456], ys_all[777_777] = 50.0, -50.0  # spikes
    col = Column()
    _feed(col, [(float(i), y) for i, y in enumerate(ys_all)], 2048)
    xs, ys = col.points()
    assert len(xs) <= 4 * columns._BUCKETS + 2 * columns._TAIL + 1
    assert all(a < b for a, b in itertools.pairwise(xs))
    assert (max(ys), min(ys)) == (50.0, -50.0)
    assert (xs[0], ys[0]) == (0.0, ys_all[0]) and (xs[-1], ys[-1]) == (n - 1.0, ys_all[-1])
    assert col.total == n
    assert set(zip(xs, ys, strict=True)) <= {(float(i), y) for i, y in enumerate(ys_all)}


def test_a_resume_within_the_exact_tail_of_a_long_column_is_exact() -> None:
    """A resume that goes back fewer points than the exact tail keeps the count and the values."""
    n = 100_000
    pts = [(float(i), float(i % 7)) for i in range(n)] + [(float(i), -1.0) for i in
                                                          range(n - 100, n + 50)]
    col = Column()
    _feed(col, pts, 2048)
    xs, ys = col.points()
    assert col.total == n + 50
    assert xs[-150:] == [float(i) for i in range(n - 100, n + 50)] and set(ys[-150:]) == {-1.0}


def test_a_resume_past_the_exact_tail_drops_every_later_point() -> None:
    """A resume far back (into the folded buckets) leaves no point at or past its x."""
    n = 200_000
    pts = [(float(i), 1.0) for i in range(n)] + [(float(i), 2.0) for i in range(10_000, 10_010)]
    col = Column()
    _feed(col, pts, 2048)
    xs, ys = col.points()
    assert xs[-10:] == [float(i) for i in range(10_000, 10_010)] and ys[-10:] == [2.0] * 10
    assert all(x < 10_000 for x in xs[:-10]) and col.last_x == 10_009.0


def test_observed_records_give_the_same_scan_as_the_reports_own_pass(tmp_path: Path) -> None:
    """The charts read from the validator's parse equal a pass of the report's own reader:
    columns, keys, x label, restarts and skipped-line counts."""
    lines = [b'{"step": %d, "progress/batch": %d, "loss": %d.5}' % (i, i, i) for i in range(5000)]
    lines[10] = b'{"step": 10, "progress/batch": 10, "loss": NaN}'
    lines[11] = b"not json"
    lines[12] = b""
    lines[13] = b"[1, 2]"
    lines += [b'{"step": %d, "progress/batch": %d, "loss": 0.25}' % (i, i)
              for i in range(4000, 4100)]
    lines.append(b'{"step": 4100, "test/env/all/reward/total": 1.0}')
    (tmp_path / layout.METRICS).write_bytes(b"\n".join(lines) + b"\n" + b'{"step": 9')
    (tmp_path / layout.CONFIG).write_bytes(b"{}")
    own = reading.read_metrics(LocalStorage(tmp_path), ["loss"])
    observer = reading.MetricsObserver(LocalStorage(tmp_path), ["loss"])
    reading.validation(str(tmp_path), None, "report", observer)
    seen = observer.scan
    assert seen is not None
    for scan in (own, seen):
        assert scan.columns["loss"].total == 4000 - 4 + 100  # lines 10-13 hold no value
    assert (seen.keys, seen.x_label, seen.restarts, seen.records, seen.last_x) == (
        own.keys, own.x_label, own.restarts, own.records, own.last_x)
    for key in own.columns:
        assert seen.columns[key].points() == own.columns[key].points()
        assert seen.columns[key].skipped == own.columns[key].skipped
    st, so = seen.stats, own.stats
    assert (st.blank, st.bad, st.nonfinite_lines, st.torn) == (so.blank, so.bad,
                                                               so.nonfinite_lines, so.torn)
    assert (so.blank, so.bad, so.nonfinite_lines, so.torn) == (1, 2, 1, True)


def test_a_reader_without_progress_keys_counts_every_line_as_training() -> None:
    """Lines without progress keys are training lines: a drop in their x is a restart."""
    reader = MetricsScan(["loss"])
    for s in [*range(5), *range(2, 4)]:
        reader({"step": s, "loss": 1.0})
    scan = reader.close()
    assert scan.restarts == [2.0] and scan.columns["loss"].points()[0] == [0.0, 1.0, 2.0, 3.0]


def test_a_stand_in_key_is_read_only_until_the_key_it_stands_in_for_shows_up() -> None:
    """A stand-in key (kl v2 for kl v1) keeps its column only in a file without the other key;
    every other column is the same with or without the stand-in."""
    v1, v2 = "optim/kl_sample_train_v1", "optim/kl_sample_train_v2"
    rng = random.Random(2)
    for first_v1 in (None, 0, 3000, 9000):
        readers = MetricsScan(["loss", v1, v2]), MetricsScan(["loss", v1, v2], {v2: v1})
        for s in range(10_000):
            rec = {"step": s, "loss": rng.random(), v2: rng.random(), "": 1}
            if first_v1 is not None and s >= first_v1:
                rec[v1] = rng.random()
            for r in readers:
                r(dict(rec))
        plain, lean = (r.close() for r in readers)
        assert (v2 in lean.columns) == (first_v1 is None)
        assert set(lean.columns) | {v2} == set(plain.columns) | {v2}
        for key, col in plain.columns.items():
            if key != v2 or first_v1 is None:
                assert lean.columns[key].points() == col.points()


def _async_eval_line(step: int, cost: float, elapsed: float, reward: float) -> dict[str, object]:
    """A cookbook 0.6.1 async-eval line: the metric, its snapshot coordinates and aliases."""
    key = "test/env/all/reward/total"
    return {"step": step, key: reward, "eval/snapshot/training_step": step,
            "eval/snapshot/cumulative_cost_usd": cost, "eval/snapshot/elapsed_seconds": elapsed,
            **{f"eval/by_{axis}/{key}": reward for axis in ("step", "cost", "time")}}


def test_async_eval_aliases_are_charted_against_their_own_axes() -> None:
    """eval/by_cost|time|step/* take x from their line's snapshot key, not from step, and are
    not counted among the evaluators."""
    scan = MetricsScan([])
    for i in range(3):
        scan({"step": i, "progress/batch": i, "env/all/reward/total": 0.1})
        scan(_async_eval_line(i, 0.25 * (i + 1), 10.0 * i + 3.0, 0.5 + i))
    scan.close()
    by = "eval/by_{}/test/env/all/reward/total"
    assert scan.columns[by.format("cost")].points() == ([0.25, 0.5, 0.75], [0.5, 1.5, 2.5])
    assert scan.columns[by.format("time")].points() == ([3.0, 13.0, 23.0], [0.5, 1.5, 2.5])
    assert scan.columns[by.format("step")].points()[0] == [0.0, 1.0, 2.0]
    assert scan.axes == {by.format("step"): "training step",
                         by.format("cost"): "cumulative cost (USD)",
                         by.format("time"): "elapsed seconds"}
    assert scan.columns["test/env/all/reward/total"].points()[0] == [0.0, 1.0, 2.0]
    assert "test/env/all/reward/total" not in scan.axes


def test_report_page_names_the_cost_axis(tmp_path: Path) -> None:
    """The run page draws eval/by_cost/* with the cumulative-cost axis label."""
    from factories import jsonl, write

    from rlio.report.run_report import render_run_report

    lines = [_async_eval_line(i, 0.25 * (i + 1), 5.0 * i, 0.5) for i in range(2)]
    write(tmp_path / "run", "metrics.jsonl", jsonl([{"step": 0, "progress/batch": 0}, *lines]))
    page = render_run_report(tmp_path / "run", validate=False)
    chart = page.split('data-metric="eval/by_cost/test/env/all/reward/total"', 1)[1]
    chart = chart.split("</figure>", 1)[0]
    assert "cumulative cost (USD)" in chart and "at cumulative cost (USD) 0.5" in chart
