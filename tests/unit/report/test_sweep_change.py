"""The compare page's per-prompt change (``rlio.report.sweep_change``): runs built with a known
effect give the verdict, the movers and the footnote of ``rlio.report.prompt_change``."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from factories import group_prompt, group_run

from rlio.report.prompt_change import Side, prompt_change
from rlio.report.sweep import write_comparison
from rlio.report.sweep_change import common_split

N_PROMPTS = 20


def evals(root: Path, solved: set[int], prompt: str = "") -> Path:
    """An evaluator's run: one trajectory per prompt, reward 1 when solved (``prompt`` is put
    before each user message)."""
    return group_run(root, [[[1.0 if g in solved else 0.0] for g in range(N_PROMPTS)]],
                     evaluator="test", prompt=lambda i, g: prompt + group_prompt(g))


class _Movers(HTMLParser):
    """The rows of the movers tables (``{class: [(data-prompt, href, cells)]}``), the verdict
    line and every element id."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[tuple[str, str | None, list[str]]]] = {}
        self.ids: set[str] = set()
        self.verdict = ""
        self._table: str | None = None
        self._in: str | None = None
        self._cells: list[str] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        cls = a.get("class", "").split()
        if tag == "table" and "movers" in cls:
            self._table = cls[1]
        elif tag == "tr" and self._table and "data-prompt" in a:
            self._row, self._cells, self._href = a["data-prompt"], [], None
        elif tag == "td" and self._table:
            self._cells.append("")
            self._in = "td"
        elif tag == "a" and self._table:
            self._href = a.get("href")
        elif tag == "p" and "verdict" in cls:
            self._in = "verdict"

    def handle_data(self, data: str) -> None:
        if self._in == "td":
            self._cells[-1] += data
        elif self._in == "verdict":
            self.verdict += data

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "p"):
            self._in = None
        elif tag == "tr" and self._table and self._cells:
            self.rows.setdefault(self._table, []).append((self._row, self._href, self._cells))
            self._cells = []
        elif tag == "table":
            self._table = None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A baseline solving prompts 15-19, a run solving 0-11 as well, and a run solving 0-3 and
    18-19 (trades 3 for 4); labels carry markup that must stay text."""
    root = tmp_path_factory.mktemp("change")
    mark = "<b>x</b> & "
    return {"base": evals(root / "base", set(range(15, 20)), mark),
            "better": evals(root / "better", set(range(12)) | set(range(15, 20)), mark),
            "noise": evals(root / "noise", {0, 1, 2, 3, 18, 19}, mark)}


def _page(runs: dict[str, Path], tmp_path: Path, a: str, b: str) -> tuple[str, _Movers]:
    out, _ = write_comparison([str(runs[a]), str(runs[b])], str(tmp_path / "c.html"), jobs=1)
    html = Path(out).read_text()
    parsed = _Movers()
    parsed.feed(html)
    return html, parsed


def test_a_known_gain_is_improved_with_mcnemar_and_its_movers(runs: dict[str, Path],
                                                               tmp_path: Path) -> None:
    """12 prompts gained, none lost: the verdict line says improved, mean +0.6 and McNemar
    exact p = 0.00049 (2/4096) with 12 prompts 0→1; the improved table lists 10 of those 12 at
    0 → 1 with n 1, 1, each linked to its row of the prompt table; none regressed."""
    html, page = _page(runs, tmp_path, "base", "better")
    d = prompt_change(Side(runs["base"], "test", "last"),
                      Side(runs["better"], "test", "last")).to_dict()
    assert page.verdict.startswith("improved · mean +0.6 [95% CI +")
    assert page.verdict.endswith("McNemar exact p = 0.00049 (12 prompts 0→1, 0 1→0)")
    assert f"CI {d['ci_low']:g}".replace("CI ", "CI +") in page.verdict
    assert 'data-verdict="improved"' in html and 'data-split="eval/test"' in html
    improved = page.rows["improved"]
    assert [key for key, _, _ in improved] == [p["key"] for p in d["improved"]]
    assert len(improved) == 10 and "regressed" not in page.rows
    for key, href, cells in improved:
        label, mean_a, mean_b, change, interval, n = cells
        assert re.fullmatch(r"<b>x</b> & Problem (\d+): what is \d+ \* 3\?", label)
        assert int(label.split("Problem ")[1].split(":")[0]) < 12
        assert (mean_a, mean_b, change, interval, n) == ("0", "1", "+1", "[+1, +1]", "1, 1")
        assert href is not None and href[1:] in page.ids and href.endswith(key)
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt; &amp; Problem" in html
    foot = unescape(html.split('class="note footnote">')[1].split("</p>")[0])
    assert "McNemar exact" in foot and "1,000 resamples, seed 0" in foot
    assert "20 matched by prompt" in foot
    assert ("eval/test: A is base at iteration 0 (20 trajectories, 20 prompts), B is better at "
            "iteration 0 (20 trajectories, 20 prompts)") in foot


def test_the_other_way_round_is_regressed(runs: dict[str, Path], tmp_path: Path) -> None:
    """Swapping the runs swaps the verdict and the tables."""
    _, page = _page(runs, tmp_path, "better", "base")
    assert page.verdict.startswith("regressed · mean -0.6 [95% CI -")
    assert len(page.rows["regressed"]) == 10 and "improved" not in page.rows
    assert all(cells[3] == "-1" for _, _, cells in page.rows["regressed"])


def test_noise_is_no_significant_change(runs: dict[str, Path], tmp_path: Path) -> None:
    """4 gained and 3 lost: no significant change, p = 1, both tables filled."""
    _, page = _page(runs, tmp_path, "base", "noise")
    assert page.verdict.startswith("no significant change · mean +0.05")
    assert "McNemar exact p = 1 (4 prompts 0→1, 3 1→0)" in page.verdict
    assert len(page.rows["improved"]) == 4 and len(page.rows["regressed"]) == 3


def test_the_common_split_prefers_an_evaluator(tmp_path: Path) -> None:
    """Two evaluator runs share eval/test; two training runs share train; one of each shares
    nothing, and the page says so instead of a verdict."""
    a = evals(tmp_path / "a", {1})
    b = evals(tmp_path / "b", {2})
    t1 = group_run(tmp_path / "t1", [[[1.0, 0.0]]])
    t2 = group_run(tmp_path / "t2", [[[0.0, 0.0]]])
    assert common_split(str(a), str(b)) == "eval/test"
    assert common_split(str(t1), str(t2)) == "train"
    assert common_split(str(a), str(t1)) is None
    out, _ = write_comparison([str(a), str(t1)], str(tmp_path / "c.html"), jobs=1)
    html = Path(out).read_text()
    assert "no split of rollouts in common" in html and "data-verdict" not in html


def test_a_graded_shift_is_improved_by_wilcoxon(tmp_path: Path) -> None:
    """8 training prompts x 4 graded samples, every reward 0.25 higher in B: each prompt's means
    differ by exactly 0.25, all 8 changes are positive, so the exact signed-rank p is 2/2**8
    (0.0078) and the verdict is improved; both means and n = 4, 4 are in every row."""
    graded = [0.0, 0.25, 0.5, 0.25]
    a = group_run(tmp_path / "a", [[[r + g / 10 for r in graded] for g in range(8)]])
    b = group_run(tmp_path / "b", [[[r + g / 10 + 0.25 for r in graded] for g in range(8)]])
    out, _ = write_comparison([str(a), str(b)], str(tmp_path / "c.html"), jobs=1)
    page = _Movers()
    page.feed(Path(out).read_text())
    assert page.verdict.startswith("improved · mean +0.25 [95% CI +0.25, +0.25]")
    assert page.verdict.endswith("Wilcoxon signed-rank exact p = 0.0078 (W+ = 36, n = 8, 0 "
                                 "unchanged dropped)")
    rows = page.rows["improved"]
    assert len(rows) == 8 and "regressed" not in page.rows
    for _, href, (label, mean_a, mean_b, change, _, n) in rows:
        g = int(label.split("Problem ")[1].split(":")[0])
        assert float(mean_a) == pytest.approx(0.25 + g / 10)
        assert float(mean_b) == pytest.approx(0.5 + g / 10)
        assert (change, n) == ("+0.25", "4, 4") and href is not None
