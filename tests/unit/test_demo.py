"""The demo run: validates clean in both layouts and reads back through cookbook-style readers."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import pytest
from factories import read_jsonl, run_cli

from rlio.demo import run_demo

ITERATIONS = 9


def last_checkpoint(run: pathlib.Path, required_key: str = "state_path") -> dict[str, Any] | None:
    """The cookbook's get_last_checkpoint rule: the last record holding the required key."""
    with_key = [c for c in read_jsonl(run / "checkpoints.jsonl") if required_key in c]
    return with_key[-1] if with_key else None


def nested_iterations(run: pathlib.Path) -> dict[int, dict[str, Any]]:
    """A run-store style scan of iteration_NNNNNN/ directories."""
    out = {}
    for d in sorted(run.iterdir()):
        m = re.fullmatch(r"iteration_(\d+)", d.name)
        if not m:
            continue
        names = {p.name for p in d.iterdir()}
        out[int(m[1])] = {
            "train": "train_rollout_summaries.jsonl" in names,
            "logtree": "train_logtree.json" in names,
            "evals": sorted(n[len("eval_"):-len("_rollout_summaries.jsonl")] for n in names
                            if n.startswith("eval_") and n.endswith("_rollout_summaries.jsonl")),
        }
    return out


@pytest.fixture(scope="module", params=["flat", "nested"])
def demo_run(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[str, pathlib.Path]:
    out = tmp_path_factory.mktemp(f"demo-{request.param}") / "run"
    run_demo(out, layout=request.param, iterations=ITERATIONS, seed=7)
    return request.param, out


def test_demo_validates_with_no_error(demo_run: tuple[str, pathlib.Path]) -> None:
    """rlio's validator finds no error-level finding in the demo run (both layouts)."""
    from rlio import validate_run

    layout, out = demo_run
    report = validate_run(str(out))
    errors = [f for f in report.findings if str(f.severity) == "error"]
    assert errors == []
    assert report.ok
    assert report.layout == layout


def test_demo_reads_back_through_cookbook_readers(demo_run: tuple[str, pathlib.Path]) -> None:
    """json.loads per line and get_last_checkpoint see the counts and resume point rlio sees."""
    from rlio import read_resume_state

    layout, out = demo_run
    metrics = read_jsonl(out / "metrics.jsonl")
    assert [m["step"] for m in metrics] == list(range(ITERATIONS))
    assert sum(1 for m in metrics for v in m.values() if v is None) == 1  # the one NaN metric
    ckpt = last_checkpoint(out)
    state = read_resume_state(str(out))
    assert ckpt is not None and state is not None
    assert ckpt == state.checkpoint
    assert ckpt["name"] == "final" and ckpt["batch"] == ITERATIONS == state.next_batch
    sampler = last_checkpoint(out, "sampler_path")
    assert sampler is not None and sampler["name"] == "final"
    if layout == "nested":
        its = nested_iterations(out)
        assert sorted(its) == list(range(ITERATIONS))
        assert all(i["train"] and i["logtree"] for i in its.values())
        assert [n for n, i in its.items() if i["evals"]] == [0, 3, 6]
        assert all(i["evals"] in ([], ["gsm8k_test_v2"]) for i in its.values())
        train = read_jsonl(out / "iteration_000004" / "train_rollout_summaries.jsonl")
    else:
        train = read_jsonl(out / "train_iteration_000004_rollout_summaries.jsonl")
        evals = sorted(out.glob("eval_*_rollout_summaries.jsonl"))
        assert [p.name for p in evals] == [
            f"eval_gsm8k_test_v2_iteration_{i:06d}_rollout_summaries.jsonl" for i in (0, 3, 6)]
    assert len(train) == 15  # 4 groups of 4, the last one short by one at iteration 4
    for r in train:
        steps = r["steps"]
        assert r["total_reward"] == pytest.approx(sum(s["reward"] for s in steps)
                                                  + r["final_reward"])


def test_demo_checkpoints_are_periodic_rolling_and_final(
        demo_run: tuple[str, pathlib.Path]) -> None:
    """Every 4th checkpoint is periodic (sampler too), the others rolling, then 'final'."""
    _, out = demo_run
    ckpts = read_jsonl(out / "checkpoints.jsonl")
    assert [c["name"] for c in ckpts] == [f"{b:06d}" for b in range(1, ITERATIONS)] + ["final"]
    assert [c["batch"] for c in ckpts] == list(range(1, ITERATIONS + 1))
    periodic = [c["name"] for c in ckpts if "sampler_path" in c and c["name"] != "final"]
    assert periodic == ["000004", "000008"]
    assert all(c.get("rolling") is True for c in ckpts
               if c["name"] not in periodic and c["name"] != "final")
    assert all("final" not in c for c in ckpts)


def test_demo_logtrees_hold_conversations_with_tools_and_escaped_markup(
        demo_run: tuple[str, pathlib.Path]) -> None:
    """Logtrees carry multi-turn conversations (thinking, tool calls); model markup is escaped."""
    layout, out = demo_run
    name = "train_iteration_000002" if layout == "flat" else "iteration_000002/train"
    doc = json.loads((out / f"{name}_logtree.json").read_text())
    convs = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("data", {}).get("type") == "conversation":
                convs.append(node["data"]["messages"])
            for child in node.get("children", []):
                walk(child)

    walk(doc["root"])
    messages = [m for conv in convs for m in conv]
    assert any(m.get("tool_calls") for m in messages)
    assert any(isinstance(m["content"], list) and m["content"][0]["type"] == "thinking"
               for m in messages)
    assert any(m["role"] == "tool" and m.get("tool_call_id") for m in messages)
    html = (out / f"{name}.html").read_text()
    assert "<script>alert(1)</script>" not in html
    assert "Group Rollout" in html and "Trajectory Details" in html


def test_demo_is_deterministic_for_a_seed(tmp_path: pathlib.Path) -> None:
    """Two demo runs with one seed write identical data files (timestamps aside)."""
    a, b = tmp_path / "a", tmp_path / "b"
    run_demo(a, iterations=4, seed=11)
    run_demo(b, iterations=4, seed=11)
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        if name.endswith((".jsonl", ".diff")):
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    ca, cb = (json.loads((d / "config.json").read_text()) for d in (a, b))
    assert {**ca, "log_path": ""} == {**cb, "log_path": ""}
    run_demo(tmp_path / "c", iterations=4, seed=12)
    assert (a / "metrics.jsonl").read_bytes() != (tmp_path / "c" / "metrics.jsonl").read_bytes()


def test_demo_refuses_a_directory_that_holds_files(tmp_path: pathlib.Path) -> None:
    """The demo writes a fresh run: a non-empty target directory is refused untouched."""
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError):
        run_demo(tmp_path, iterations=1)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    with pytest.raises(ValueError, match="iterations"):
        run_demo(tmp_path / "new", iterations=0)


def test_cli_demo_then_validate(tmp_path: pathlib.Path) -> None:
    """`rlio demo OUT --layout nested` then `rlio validate OUT` exits 0."""
    out = tmp_path / "cli"
    made = run_cli("demo", str(out), "--layout", "nested", "--iterations", "4", "--seed", "2")
    assert made.returncode == 0, made.stderr
    assert (out / "iteration_000003" / "train_logtree.json").exists()
    checked = run_cli("validate", str(out))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_replace_rewrites_a_demo_run_and_refuses_anything_else(tmp_path: pathlib.Path) -> None:
    """replace=True deletes an earlier demo run first; a non-demo run or other files are kept."""
    out = tmp_path / "demo"
    run_demo(out, iterations=2, seed=1)
    (out / "report.html").write_text("<!doctype html>")  # what `rlio report` adds to a run
    run_demo(out, iterations=1, seed=1, replace=True, layout="nested")
    assert not (out / "report.html").exists()
    assert [m["step"] for m in read_jsonl(out / "metrics.jsonl")] == [0]
    real = tmp_path / "real"
    real.mkdir()
    (real / "metrics.jsonl").write_text('{"step": 0}\n')
    (real / "config.json").write_text('{"model_name": "mine"}')
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    for target in (real, other):
        before = sorted(p.name for p in target.iterdir())
        with pytest.raises(FileExistsError, match="not a demo run"):
            run_demo(target, iterations=1, replace=True)
        assert sorted(p.name for p in target.iterdir()) == before


def test_cli_demo_force_runs_twice_in_a_row(tmp_path: pathlib.Path) -> None:
    """`rlio demo OUT --force` succeeds twice in a row; without --force the second run exits 2."""
    out = str(tmp_path / "demo")
    for _ in range(2):
        made = run_cli("demo", out, "--iterations", "2", "--force")
        assert made.returncode == 0, made.stderr
    again = run_cli("demo", out, "--iterations", "2")
    assert again.returncode == 2 and "--force" in again.stderr
    assert again.stderr.count("\n") == 1


def test_cli_demo_env_math_puts_the_reward_in_the_step(tmp_path: pathlib.Path) -> None:
    """``rlio demo --env math`` writes a clean run whose rewards are step rewards with
    final_reward 0.0, as the cookbook's ProblemEnv does."""
    out = tmp_path / "math"
    proc = run_cli("demo", str(out), "--env", "math", "--iterations", "2")
    assert proc.returncode == 0, proc.stderr
    assert run_cli("validate", str(out)).returncode == 0
    recs = read_jsonl(out / "train_iteration_000001_rollout_summaries.jsonl")
    assert {r["final_reward"] for r in recs} == {0.0}
    assert any(r["total_reward"] == r["steps"][0]["reward"] == 1.0 for r in recs)


@pytest.mark.parametrize("env", ["multiturn", "tools", "preference", "evalonly", "async"])
def test_env_runs_validate_clean(tmp_path: pathlib.Path, env: str) -> None:
    """Every simulated environment writes a run the validator finds no error or warning in."""
    from rlio.validate import validate_run

    run_demo(tmp_path / env, env=env, iterations=2)
    report = validate_run(tmp_path / env)
    assert report.counts["error"] == report.counts["warning"] == 0, report.findings
