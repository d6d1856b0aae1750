"""The report, iteration, prompt and compare pages of runs shaped like the cookbook's environments
agree with the numbers their records give (docs/format.md §7: the outcome is total_reward)."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import pytest
from realistic import ENVS, expected, realistic_run

from rlio.report import write_run_report
from rlio.report.sweep import write_comparison

_ROW = re.compile(r'<tr[^>]*data-group="(\d+)" data-traj="(\d+)"[^>]*>(.*?)</tr>', re.S)
_TD = re.compile(r"<td[^>]*>(.*?)</td>", re.S)
_TAG = re.compile(r"<[^>]+>")


def _num(text: str) -> float | None:
    text = html.unescape(_TAG.sub("", text)).strip().lstrip("✗").strip()
    if text in ("—", ""):
        return None
    return math.nan if text == "NaN" else float(text.replace(",", ""))


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 5e-4 * (1 + abs(b))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small run per environment, each with its report written."""
    root = tmp_path_factory.mktemp("realistic")
    out = {}
    for env in ENVS:
        run = realistic_run(root, env, iterations=3)
        write_run_report(run)
        out[env] = run
    return out


def _page(run: Path, split: str, it: int) -> str:
    name = "train" if split == "train" else f"eval_{split.removeprefix('eval/')}"
    return (run / f"{name}_iteration_{it:06d}.html").read_text()


@pytest.mark.parametrize("env", ENVS)
def test_report_lists_the_failing_counts_the_records_give(runs: dict[str, Path], env: str) -> None:
    """Each iteration's failing count in the report's list is the records' (total_reward)."""
    run, exp = runs[env], expected(runs[env])
    page = (run / "report.html").read_text()
    for split, it in exp.records:
        block = page.split(f'class="pages" data-split="{split}"', 1)[1].split("</details>", 1)[0]
        m = re.search(rf'data-iteration="{it}" data-failing="(\d+)"', block)
        assert m is not None and int(m.group(1)) == exp.failing(split, it), (split, it)
    assert sum(exp.failing(*k) for k in exp.records) < sum(map(len, exp.records.values()))


@pytest.mark.parametrize("env", ENVS)
def test_reward_boxes_and_extremes_match_the_records(runs: dict[str, Path], env: str) -> None:
    """Each box's median and count, and the best and worst tables' rewards, are the records'."""
    run, exp = runs[env], expected(runs[env])
    page = (run / "report.html").read_text()
    for split, it in exp.records:
        chart = page.split(f'data-split="{split}"', 1)[1]
        m = re.search(rf'data-iteration="{it}"><title>([^<]*)</title>', chart)
        assert m is not None, (split, it)
        xs = exp.totals(split, it)
        mid = (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2
        tip = html.unescape(m.group(1))
        assert f"median {mid:.4g}," in tip and f"({len(xs)} trajectories)" in tip, tip
    every = exp.all_totals()
    for name, want in (("best", every[::-1][:15]), ("worst", every[:15])):
        table = page.split(f'class="extremes {name}"', 1)[1].split("</table>", 1)[0]
        shown = [_num(_TD.findall(r)[4]) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
                 if "<td" in r]
        assert len(shown) == len(want)
        assert all(_close(a, b) for a, b in zip(shown, want, strict=True)), (name, shown, want)


@pytest.mark.parametrize("env", ENVS)
def test_iteration_pages_show_totals_advantages_and_failing(runs: dict[str, Path],
                                                            env: str) -> None:
    """Every row's total reward and advantage, and the page's failing count, are the records'."""
    run, exp = runs[env], expected(runs[env])
    for split, it in exp.records:
        page = _page(run, split, it)
        n, fails = len(exp.records[(split, it)]), exp.failing(split, it)
        assert f"({n:,}, {fails:,} failing)" in page
        adv = exp.advantages(split, it)
        rows = _ROW.findall(page)
        assert len(rows) == n
        for g, t, cells in rows:
            tds = _TD.findall(cells)
            assert _close(_num(tds[2]), exp.total_of(split, it, int(g), int(t)))
            assert _close(_num(tds[3]), adv[(int(g), int(t))]), (split, it, g, t)
            linked = f'href="#traj-{g}-{t}"' in cells
            assert linked is (int(g) < 2), (split, it, g, t)  # the two logged groups (samples)


@pytest.mark.parametrize("env", ENVS)
def test_prompt_pages_show_each_samples_total_reward(runs: dict[str, Path], env: str) -> None:
    """Each trajectory on a prompt page shows its record's total reward and failing mark."""
    run, exp = runs[env], expected(runs[env])
    pages = sorted((run / "report" / "prompts").glob("*.html"))
    assert pages
    seen = 0
    for p in pages:
        text = p.read_text()
        for sec in re.findall(r'<section[^>]*data-split="([^"]+)" data-iteration="(\d+)"(.*?)'
                              r"</section>", text, re.S):
            split, it, body = html.unescape(sec[0]), int(sec[1]), sec[2]
            for g, t, reward in re.findall(r"group (\d+) traj (\d+)</span><span>reward ([^<]+)<",
                                           body):
                assert _close(_num(reward), exp.total_of(split, it, int(g), int(t)))
                seen += 1
    assert seen >= 2


@pytest.mark.parametrize("env", ["math", "tools", "preference", "multiturn"])
def test_compare_scores_prompts_by_their_mean_total_reward(tmp_path: Path, runs: dict[str, Path],
                                                           env: str) -> None:
    """Two seeds of one environment share prompts: each score is the mean total reward the
    records give for that prompt's group."""
    other = realistic_run(tmp_path, env, seed=1, iterations=3)
    out = tmp_path / "compare.html"
    write_comparison([runs[env], other], str(out))
    page = out.read_text()
    rows = re.findall(r'<tr id="[^"]+" data-prompt="[^"]+"><td>([^<]*)</td><td>([^<]*)</td>'
                      r'<td class="num">([^<]*)</td><td class="num">([^<]*)</td>', page)
    assert rows
    scores = [_scores(runs[env]), _scores(other)]
    for label, split, a, b in rows:
        key = (html.unescape(split), html.unescape(label))
        assert _close(_num(a), scores[0][key]) and _close(_num(b), scores[1][key]), key


def _scores(run: Path) -> dict[tuple[str, str], float]:
    """(split, prompt label) -> mean finite total reward of its logged group (one per prompt)."""
    import json

    exp = expected(run)
    out = {}
    for (split, it), recs in exp.records.items():
        doc = json.loads((run / f"train_iteration_{it:06d}_logtree.json").read_text())
        groups = [c for c in doc["root"]["children"] if isinstance(c, dict)
                  and "Group" in json.dumps(c["children"][:1])]
        for g, sec in enumerate(groups):
            user = re.search(r'"role": "user", "content": "([^"]*)"', json.dumps(sec))
            assert user is not None
            xs = [r["total_reward"] for r in recs if r["group_idx"] == g]
            out[(split, user.group(1).splitlines()[0])] = sum(xs) / len(xs)
    return out


@pytest.mark.parametrize("env", ENVS)
def test_group_diagnostics_match_the_records(runs: dict[str, Path], env: str) -> None:
    """Each group's mean and all-equal flag, the share of all-equal groups in the report's list
    and the staleness (async) are what the records give."""
    run, exp = runs[env], expected(runs[env])
    report = (run / "report.html").read_text()
    for split, it in exp.records:
        page = _page(run, split, it)
        recs = exp.records[(split, it)]
        groups = re.findall(r'<tr data-group-stats="(\d+)" data-equal="(\w+)">(.*?)</tr>', page,
                            re.S)
        assert len(groups) == len({r["group_idx"] for r in recs})
        for g, equal, cells in groups:
            xs = [r["total_reward"] for r in recs if r["group_idx"] == int(g)]
            fin = [x for x in xs if x is not None and math.isfinite(x)]
            assert _close(_num(_TD.findall(cells)[3]), sum(fin) / len(fin) if fin else None)
            assert (equal == "true") is (len(fin) == len(xs) and len(set(fin)) == 1)
        share = exp.equal_share(split, it)
        block = report.split(f'class="pages" data-split="{split}"', 1)[1]
        detail = re.search(rf'data-iteration="{it}"[^>]*>.*?<span class="it-detail">([^<]*)<',
                           block, re.S)
        assert detail is not None
        assert (f"{share:.0%} equal" in detail.group(1)) is (share > 0), detail.group(1)
        lag = max(it - r["sampling_client_step"] for r in recs)
        assert f"sampling_client_step): max {lag}," in page


@pytest.mark.parametrize("env", ENVS)
def test_every_usual_key_the_run_logged_is_charted(runs: dict[str, Path], env: str) -> None:
    """Reward, KL estimators, entropy, learning rate, tokens, cost, time (and staleness) each get
    a chart under their real names when the run logged them."""
    page = (runs[env] / "report.html").read_text()
    charted = set(map(html.unescape, re.findall(r'data-metric="([^"]+)"', page)))
    if env == "evalonly":
        assert charted == {"gsm8k/env/all/reward/total", "hard/env/all/reward/total"}
        return
    usual = {"env/all/reward/total", "progress/done_frac", "optim/kl_sample_train_v1",
             "optim/kl_sample_train_v2", "optim/entropy", "optim/lr",
             "tokens/cumulative/sampled", "cost/cumulative_usd", "time/total",
             "env/all/by_group/frac_mixed"}
    assert usual <= charted
    assert ("async/staleness_max" in charted) is (env == "async")
