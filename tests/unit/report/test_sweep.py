"""``rlio compare``: the page of a seeded sweep against a reference computed from the raw files."""

from __future__ import annotations

import json
import os
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import factories
import pytest

from rlio.report.sweep import SortKey, series_points, write_comparison
from rlio.report.sweep_runs import summarize

REWARD, LOSS = "env/all/reward/total", "train/loss"
RUNS = ("lr-1e-4/cookbook", "lr-1e-4/empty", "lr-1e-5/base", "lr-4e-5/regressed")


class _Cells(HTMLParser):
    """Rows of the tables of a page: ``{table class: [(row attrs, {data-col|data-key: text})]}``,
    plus every href."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[dict[str, str], dict[str, str]]]] = {}
        self.hrefs: list[str] = []
        self._table: str | None = None
        self._cell: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        if tag == "table":
            self._table = a.get("class", "")
            self.tables.setdefault(self._table, [])
        elif tag == "tr" and self._table is not None and ("data-run" in a or "data-prompt" in a):
            self.tables[self._table].append((a, {}))
        elif tag == "td" and self._table is not None:
            self._cell = a.get("data-col") or a.get("data-key") or f"#{len(self._row)}"
            self._text = []

    @property
    def _row(self) -> dict[str, str]:
        rows = self.tables.get(self._table or "", [])
        return rows[-1][1] if rows else {}

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self.tables.get(self._table or ""):
            self._row[self._cell] = "".join(self._text).strip()
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)


def _page(tmp_path: Path, *paths: str | Path, **options: Any) -> tuple[str, _Cells]:
    out = tmp_path / "compare.html"
    write_comparison([str(p) for p in paths], str(out), jobs=1, **options)
    html = out.read_text()
    cells = _Cells()
    cells.feed(html)
    return html, cells


def _raw_metrics(run: Path) -> list[dict[str, Any]]:
    path = run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:.4g}"


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """The seeded sweep of ``factories.seeded_sweep``."""
    return factories.seeded_sweep(tmp_path)


def test_runs_table_equals_the_raw_files(tmp_path: Path, sweep: Path) -> None:
    """Every run's row: status, iterations, last checkpoint and each default metric's last, best
    (lowest for a loss) and step of best, as computed from metrics.jsonl and checkpoints.jsonl."""
    _, cells = _page(tmp_path, sweep)
    rows = {a["data-run"]: c for a, c in cells.tables["runs"]}
    assert list(rows) == list(RUNS)
    for name in RUNS:
        raw, row = _raw_metrics(sweep / name), rows[name]
        ckpt = (sweep / name / "checkpoints.jsonl")
        last_ck = json.loads(ckpt.read_text().splitlines()[-1]) if ckpt.exists() else None
        assert row["status"] == ("finished" if last_ck and last_ck["name"] == "final"
                                 else "incomplete")
        assert row["iterations"] == str(len(raw))
        assert row["checkpoint"] == ("" if last_ck is None else
                                     f"{last_ck['name']} (batch {last_ck['batch']})")
        for key, pick in ((REWARD, max), (LOSS, min)):
            if not raw:
                assert row[f"{key}|last"] == row[f"{key}|best"] == ""
                continue
            best = pick(r[key] for r in raw)
            assert row[f"{key}|last"] == _fmt(raw[-1][key])
            assert row[f"{key}|best"] == _fmt(best)
            assert row[f"{key}|best_step"] == str(next(r["step"] for r in raw if r[key] == best))


def test_config_table_holds_only_differing_keys(tmp_path: Path, sweep: Path) -> None:
    """The config table has exactly the flattened keys whose values differ (a key one run lacks
    counts), each cell the run's value or 'absent'."""
    _, cells = _page(tmp_path, sweep)
    rows = {a["data-run"]: c for a, c in cells.tables["config-diff"]}
    configs = {n: json.loads((sweep / n / "config.json").read_text()) for n in RUNS}
    flat = {n: {**{k: v for k, v in c.items() if k != "sampling"},
                **{f"sampling.{k}": v for k, v in c["sampling"].items()}}
            for n, c in configs.items()}
    keys = {k for f in flat.values() for k in f}
    differ = {k for k in keys if len({json.dumps(f.get(k, "absent!")) for f in flat.values()}) > 1}
    assert differ == {"learning_rate", "sampling.temperature", "seed", "extra"}
    for name in RUNS:
        shown = {k: v for k, v in rows[name].items() if not k.startswith("#")}
        assert set(shown) == differ
        for k in differ:
            text = unescape(shown[k])
            if k not in flat[name]:
                assert text == "absent"
            else:
                assert json.loads(text) == flat[name][k], (name, k)


@pytest.mark.parametrize(("axis", "drawn", "no_axis"), [
    ("step", 3, []), ("tokens", 3, []), ("time", 3, []), ("cost", 2, ["lr-1e-4/cookbook"])])
def test_chart_series_per_axis(tmp_path: Path, sweep: Path, axis: str, drawn: int,
                               no_axis: list[str]) -> None:
    """One chart per default metric with one series per run that logged it on that axis; a run
    without the axis (no cost keys) is listed as such and not drawn; the config-only run is
    listed as not logging the metric."""
    html, _ = _page(tmp_path, sweep, x=axis)
    figures = re.findall(r'<figure class="card chart-card" data-metric="([^"]+)" '
                         r'data-series="(\d+)">(.*?)</figure>', html, re.S)
    assert [f[0] for f in figures] == [REWARD, LOSS]
    for _, count, body in figures:
        assert int(count) == drawn == len(re.findall(r"<polyline ", body))
        notes = dict(re.findall(r'data-note="(\w+)">([^<]*)<', body))
        assert notes.get("missing") == "not logged: lr-1e-4/empty"
        if no_axis:
            assert notes["axis"] == f"no {axis} axis (not drawn): " + ", ".join(no_axis)
        else:
            assert "axis" not in notes


def test_series_points_follow_the_axis(tmp_path: Path, sweep: Path) -> None:
    """Against cost, a run's points are (cost/cumulative_usd, value) of its lines; against time
    the running sum of time/total."""
    raw = _raw_metrics(sweep / "lr-1e-5" / "base")
    s = summarize(str(sweep / "lr-1e-5" / "base"), "base", (), "cost", False)
    assert s.metrics[REWARD].xs == tuple(r["cost/cumulative_usd"] for r in raw)
    assert s.metrics[REWARD].ys == tuple(r[REWARD] for r in raw)
    t = summarize(str(sweep / "lr-1e-5" / "base"), "base", (), "time", False)
    assert t.metrics[REWARD].xs == tuple(2.0 * (i + 1) for i in range(len(raw)))


def test_prompts_of_two_runs_are_classified(tmp_path: Path, sweep: Path) -> None:
    """Base against regressed: 1 improved, 3 regressed, 2 unchanged, the largest change first,
    each row linking to an existing transcript page of both runs."""
    base, other = sweep / "lr-1e-5" / "base", sweep / "lr-4e-5" / "regressed"
    html, cells = _page(tmp_path, base, other, sort="name:desc")  # the pair keeps PATH order
    counts = re.search(r'data-improved="(\d+)" data-regressed="(\d+)" data-unchanged="(\d+)"',
                       html)
    assert counts is not None and counts.groups() == ("1", "3", "2")
    rows = cells.tables["prompts"]
    changes = [float(unescape(c["#4"]).replace("+", "")) for _, c in rows]
    a, b = factories.SWEEP_PROMPTS["base"], factories.SWEEP_PROMPTS["regressed"]
    want = [y - x for x, y in zip(a, b, strict=True)]
    assert sorted(changes) == sorted(want)
    assert [abs(c) for c in changes] == sorted(map(abs, want), reverse=True)
    links = [h for h in cells.hrefs if "#traj-" in h]
    assert len(links) == 2 * len(rows)
    for href in links:
        path = unquote(href.partition("#")[0])
        assert (tmp_path / path).resolve().is_file(), href


def test_baseline_compares_every_other_run(tmp_path: Path, sweep: Path) -> None:
    """With --baseline, one pair per other run; a run without logtrees shares no prompt."""
    html, _ = _page(tmp_path, sweep, baseline="lr-1e-5/base")
    pairs = re.findall(r'data-base="([^"]+)" data-other="([^"]+)"', html)
    assert pairs == [("lr-1e-5/base", n) for n in RUNS if n != "lr-1e-5/base"]
    counts = re.findall(r'data-improved="(\d+)" data-regressed="(\d+)" data-unchanged="(\d+)"',
                        html)
    assert counts == [("0", "5", "1"), ("0", "0", "0"), ("1", "3", "2")]
    with pytest.raises(ValueError, match="none of the runs"):
        _page(tmp_path, sweep, baseline="nope")


def test_sort_by_a_metric_puts_runs_without_it_last(tmp_path: Path, sweep: Path) -> None:
    """--sort KEY:desc orders by the metric's best value; a run without it comes last."""
    _, cells = _page(tmp_path, sweep, sort=f"{REWARD}:desc")
    order = [a["data-run"] for a, _ in cells.tables["runs"]]
    assert order == ["lr-1e-4/cookbook", "lr-1e-5/base", "lr-4e-5/regressed", "lr-1e-4/empty"]
    assert SortKey.parse("a:b:asc") == SortKey("a:b") and SortKey.parse("x") == SortKey("x")
    _, cells = _page(tmp_path, sweep, sort="tokens/cumulative/sampled:desc")  # not charted
    order = [a["data-run"] for a, _ in cells.tables["runs"]]
    assert order == ["lr-1e-5/base", "lr-4e-5/regressed", "lr-1e-4/cookbook", "lr-1e-4/empty"]
    _, cells = _page(tmp_path, sweep, sort="iterations")
    assert [c["iterations"] for _, c in cells.tables["runs"]] == ["0", "4", "5", "5"]


def test_a_missing_path_is_listed_and_the_page_still_written(tmp_path: Path,
                                                            sweep: Path) -> None:
    """A PATH with no run is named on the page and in the returned messages."""
    out, problems = write_comparison([str(sweep), str(tmp_path / "gone")],
                                     str(tmp_path / "c.html"), jobs=1)
    message = f"no run found at '{tmp_path / 'gone'}': no such file or directory"
    assert problems == [message]
    assert "no such file or directory" in Path(out).read_text()


def test_long_series_is_downsampled_keeping_its_extremes(tmp_path: Path) -> None:
    """A 5,000-line run draws at most series_points(1) points, its spike included."""
    run = tmp_path / "long"
    rows = [{"step": i, REWARD: 1.0 if i == 3333 else (i % 7) / 10} for i in range(5000)]
    factories.write_jsonl(run, "metrics.jsonl", rows)
    html, _ = _page(tmp_path, run)
    line = re.search(r'<polyline class="line s0" data-series="0" data-points="(\d+)" '
                     r'data-total="(\d+)" points="([^"]+)"', html)
    assert line is not None
    drawn, total = int(line[1]), int(line[2])
    assert drawn <= series_points(1) and total == 5000
    ys = [float(p.split(",")[1]) for p in line[3].split()]
    assert ys.count(min(ys)) == 1  # the spike (the highest value: the top-most pixel) is drawn


def test_a_resume_keeps_the_latest_values(tmp_path: Path) -> None:
    """Training lines that drop back (a resume) replace the steps at and past the drop."""
    run = tmp_path / "resumed"
    rows = [{"step": s, "progress/batch": s, REWARD: v}
            for s, v in ((0, 0.1), (1, 0.9), (2, 0.3), (1, 0.2), (2, 0.4))]
    factories.write_jsonl(run, "metrics.jsonl", rows)
    s = summarize(str(run), "r", (), "step", False)
    m = s.metrics[REWARD]
    assert (m.xs, m.ys, m.best, m.best_step, s.iterations) == (
        (0.0, 1.0, 2.0), (0.1, 0.2, 0.4), 0.4, 2, 3)


def test_run_text_is_escaped(tmp_path: Path) -> None:
    """A run folder and config values holding markup are escaped on the page."""
    bad = "<img src=x>"
    for i in range(2):
        factories.write_json(tmp_path / "s" / f"{bad}{i}", "config.json", {"k": f"<b>{i}"})
        (tmp_path / "s" / f"{bad}{i}" / "code.diff").write_text("", encoding="utf-8")
    html, _ = _page(tmp_path, tmp_path / "s")
    assert "<img" not in html and "<b>" not in html
    assert "&lt;img src=x&gt;0" in html and "&lt;b&gt;1" in html


def test_cli_compare_writes_the_page(tmp_path: Path, sweep: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`rlio compare PATH -o OUT` writes the page; a PATH without a run makes exit code 2."""
    out = tmp_path / "c.html"
    code, stdout, _ = factories.cli(capsys, "compare", str(sweep), "-o", str(out), "-j", "1")
    assert (code, stdout) == (0, f"wrote {out}\n") and out.is_file()
    code, _, err = factories.cli(capsys, "compare", str(sweep), str(tmp_path / "x"), "-o",
                                 str(out), "-j", "1", "--x", "cost")
    assert code == 2 and "no run found" in err and "no such file or directory" in err
    code, _, err = factories.cli(capsys, "compare", str(sweep), "-o", str(out), "--baseline",
                                 "zzz")
    assert code == 2 and "zzz" in err
    assert os.path.getsize(out) > 0


def test_a_metric_no_run_logged_is_refused_naming_the_closest(tmp_path: Path) -> None:
    """``metrics=`` with a key no run logged raises UnknownMetricError naming the closest key;
    the command says it in one line and exits 2."""
    from rlio.errors import UnknownMetricError
    from rlio.report.sweep import write_comparison

    sweep = factories.seeded_sweep(tmp_path)
    with pytest.raises(UnknownMetricError, match="closest: env/all/reward/total"):
        write_comparison([str(sweep)], str(tmp_path / "c.html"), jobs=1,
                         metrics=["env/all/reward/totl"])
    proc = factories.run_cli("compare", str(sweep), "-o", str(tmp_path / "d.html"),
                             "--metric", "env/all/reward/totl")
    assert proc.returncode == 2 and "closest: env/all/reward/total" in proc.stderr
