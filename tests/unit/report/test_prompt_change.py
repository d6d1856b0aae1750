"""Per-prompt change with statistics (``rlio.report.prompt_change``, ``rlio compare --prompts``)
on runs built with a known effect and with none: the verdicts, the intervals, the movers."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from factories import cli, group_prompt, group_run

from rlio.report.prompt_change import IMPROVED, REGRESSED, UNCHANGED, Side, prompt_change

N_PROMPTS = 20


def evals(root: Path, solved: set[int]) -> Path:
    """An evaluator's run: one iteration, one trajectory per prompt, reward 1 when solved."""
    rewards = [[[1.0 if g in solved else 0.0] for g in range(N_PROMPTS)]]
    return group_run(root, rewards, evaluator="test")


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Runs of 0/1 rewards: a baseline, one that solves 12 more prompts, one that trades 3 for 4,
    and one identical to the baseline."""
    base = tmp_path_factory.mktemp("binary")
    return {"base": evals(base / "base", set(range(15, 20))),
            "better": evals(base / "better", set(range(0, 12)) | set(range(15, 20))),
            "noise": evals(base / "noise", {0, 1, 2, 3} | set(range(18, 20))),
            "same": evals(base / "same", set(range(15, 20)))}


def test_mcnemar_finds_a_real_gain(binary: dict[str, Path]) -> None:
    """12 prompts gained, none lost: McNemar exact p = 2/4096, improved; those 12 are the movers."""
    change = prompt_change(Side(binary["base"], "test"), Side(binary["better"], "test"))
    assert change.test.name == "mcnemar-exact"
    assert (change.test.detail, change.test.p_value) == ({"b": 0, "c": 12}, 2 / 4096)
    assert change.verdict == IMPROVED and change.matched == N_PROMPTS
    assert change.mean_delta == pytest.approx(12 / 20)
    assert change.ci_low is not None and change.ci_low > 0
    assert {p.label for p in change.improved} <= {group_prompt(g) for g in range(12)}
    assert len(change.improved) == 10 and change.regressed == []
    assert all(p.delta == 1.0 for p in change.improved)


def test_mcnemar_no_effect_and_noise(binary: dict[str, Path]) -> None:
    """Identical runs: p = 1; 4 gained and 3 lost: p = 1; neither is significant."""
    same = prompt_change(Side(binary["base"], "test"), Side(binary["same"], "test"))
    assert (same.test.p_value, same.verdict, same.mean_delta) == (1.0, UNCHANGED, 0.0)
    noise = prompt_change(Side(binary["base"], "test"), Side(binary["noise"], "test"))
    assert noise.test.detail == {"b": 3, "c": 4}
    assert noise.verdict == UNCHANGED and noise.test.p_value == 1.0
    assert len(noise.regressed) == 3 and len(noise.improved) == 4


def graded(root: Path, shift: float, seed: int) -> Path:
    """One run, iterations 0 and 1, 12 prompts x 4 graded samples; at iteration 1 prompt g's
    rewards move by ``shift`` (with small noise) or, with shift 0, are a reshuffle of iteration
    0's own rewards (no effect)."""
    rng = random.Random(seed)
    first = [[round(rng.uniform(0, 0.2), 3) for _ in range(4)] for _ in range(12)]
    if shift:
        second = [[round(r + shift + rng.uniform(-0.05, 0.05), 3) for r in g] for g in first]
    else:
        second = [rng.sample(g, len(g)) for g in first]
    return group_run(root, [first, second])


def test_wilcoxon_verdicts_on_graded_rewards(tmp_path: Path) -> None:
    """A shift of +0.3 on every prompt is improved, -0.3 regressed (exact p = 2/4096); a
    reshuffle is no change (every prompt's mean equal)."""
    up = prompt_change(Side(graded(tmp_path / "up", 0.3, 1), iterations=(0,)),
                       Side(tmp_path / "up", iterations=(1,)))
    assert up.test.name == "wilcoxon-exact" and up.verdict == IMPROVED
    assert up.test.p_value == pytest.approx(2 / 4096)
    assert all(p.changed and p.ci_low > 0 for p in up.prompts)
    down = prompt_change(Side(graded(tmp_path / "down", -0.3, 2), iterations="first"),
                         Side(tmp_path / "down", iterations="last"))
    assert down.verdict == REGRESSED and down.mean_delta == pytest.approx(-0.3, abs=0.05)
    flat = prompt_change(Side(graded(tmp_path / "flat", 0.0, 3), iterations="first"),
                         Side(tmp_path / "flat", iterations="last"))
    assert flat.verdict == UNCHANGED and flat.test.p_value == 1.0
    assert not any(p.changed for p in flat.prompts)
    assert all(p.ci_low < 0 < p.ci_high for p in flat.prompts if p.ci_low != p.ci_high)


def test_same_seed_same_numbers_and_checkpoint_sides(tmp_path: Path) -> None:
    """A seed fixes every interval; ckpt:NAME reads the trajectories sampled with it."""
    run = graded(tmp_path / "r", 0.3, 4)
    one = prompt_change(Side(run, checkpoint="000001"), Side(run, iterations=(0,)), seed=7)
    two = prompt_change(Side(run, checkpoint="000001"), Side(run, iterations=(0,)), seed=7)
    assert one.to_dict() == two.to_dict()
    assert one.a.iterations == [1] and one.verdict == REGRESSED
    with pytest.raises(ValueError, match="no checkpoint named 'nope'"):
        prompt_change(Side(run, checkpoint="nope"), Side(run))


def test_match_by_example_id(tmp_path: Path) -> None:
    """Prompts worded differently in two runs match by the example id both logged."""
    ids = lambda i, g, t: {"example_id": f"ex-{g}"}  # noqa: E731
    a = group_run(tmp_path / "a", [[[0.0], [0.0], [1.0]]], metrics=ids)
    b = group_run(tmp_path / "b", [[[1.0], [1.0], [1.0]]], metrics=ids,
                  prompt=lambda i, g: f"Reworded {g}")
    by_text = prompt_change(Side(a), Side(b))
    assert by_text.matched == 0 and by_text.only_a == 3
    by_id = prompt_change(Side(a), Side(b), match="example_id")
    assert by_id.matched == 3 and by_id.test.detail == {"b": 0, "c": 2}


def test_cli_text_and_json(binary: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """rlio compare --prompts prints the verdict and movers, or the same data as JSON."""
    code, out, err = cli(capsys, "compare", "--prompts", str(binary["base"]),
                         str(binary["better"]), "--split", "test", "--top", "3")
    assert code == 0, err
    assert "McNemar exact: 12 prompt(s) 0 -> 1, 0 1 -> 0, p = 0.0004883" in out
    assert "verdict: improved" in out and out.count("+1.000 [+1.000, +1.000]") == 3
    code, out, err = cli(capsys, "compare", "--prompts", str(binary["base"]),
                         str(binary["noise"]), "--split", "test", "--format", "json")
    doc = json.loads(out)
    assert doc["verdict"] == UNCHANGED and doc["test"]["detail"] == {"b": 3, "c": 4}
    assert len(doc["prompts"]) == 20 and doc["prompts"][0]["changed"] in (True, False)
    code, out, err = cli(capsys, "compare", "--prompts", str(binary["base"]), "--a", "x-y")
    assert code == 2 and "first, last, N" in err
