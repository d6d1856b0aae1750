"""`rlio show` and `rlio diff`: a run at a glance, two runs side by side, terminal-safe text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import cli, cookbook_run, jsonl, metrics_line, write, write_json

from rlio import layout
from rlio.reader import open_run
from rlio.reader.summary import config_diff, render_diff, render_show, sparkline


def test_show_lists_what_a_user_looks_at_first(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """show prints layout, iterations, evaluators, metrics, trend, checkpoints, resume, verdict."""
    root = cookbook_run(tmp_path / "run", 4, layout_name="nested")
    code, out, _ = cli(capsys, "show", str(root))
    assert code == 0
    assert "layout       nested" in out
    assert "iterations   4 (0-3); evaluators: test" in out
    assert "metrics      5 line(s), 9 key(s)" in out
    assert "checkpoints  3 (last 'final', batch 4)" in out
    assert ("resume       restart at batch 4 from checkpoint 'final' (checkpoints.jsonl "
            "line 3)") in out
    assert "validation   ok: 0 error(s)" in out
    assert "last metrics (step 3):" in out and "  env/all/reward/total      0.5" in out
    assert "reward trend (env/all/reward/total, steps 0-3):" in out


def test_show_reports_a_torn_tail_and_no_checkpoint(tmp_path: Path) -> None:
    """A torn metrics tail is noted; a run without a ledger restarts at iteration 0."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl(metrics_line(s, **{"env/all/reward/total": s / 10})
                                      for s in range(50)) + '{"st')
    text = render_show(open_run(root), validate=False)
    assert "50 line(s)" in text and "torn last line skipped" in text
    assert "checkpoints  none" in text and "restart begins at iteration 0" in text
    assert "validation" not in text
    trend = text.splitlines()[-1].split()[0]
    assert len(trend) == 40 and trend[0] == "▁" and trend[-1] == "█"


def test_show_escapes_control_characters(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A metric key holding an ESC sequence or a newline reaches the terminal escaped."""
    root = tmp_path / "run"
    write(root, layout.METRICS, json.dumps({"step": 0, "progress/batch": 0,
                                            "evil\x1b[2J\nkey": 1}) + "\n")
    code, out, _ = cli(capsys, "show", str(root), "--no-validate")
    assert code == 0 and "\x1b" not in out and "evil\\x1b[2J\\nkey" in out


def test_show_of_a_missing_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A location that is not a run is exit 2 with one error line."""
    code, out, err = cli(capsys, "show", str(tmp_path))
    assert code == 2 and out == ""
    assert err == f"rlio: error: no run found at '{tmp_path}': the folder is empty\n"


def test_sparkline_scales_to_its_range() -> None:
    """The sparkline spans the lowest to the highest bar and skips NaN."""
    assert sparkline([0.0, 1.0, float("nan"), 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]) == "▁▂▃▄▅▆▇█"
    assert sparkline([1.0, 1.0]) == "▁▁"
    assert sparkline([float("nan")]) == ""
    assert len(sparkline([float(i) for i in range(1000)], width=40)) == 40


def test_config_diff_names_key_paths() -> None:
    """Differences are key paths: changed, only in A, only in B; NaN equals NaN."""
    a = {"lr": 1e-5, "model": {"name": "m", "layers": [1, 2]}, "kl": float("nan"), "x": 1}
    b = {"lr": 4e-5, "model": {"name": "m", "layers": [1, 3]}, "kl": float("nan"), "y": 2}
    assert config_diff(a, b) == [
        ("lr", 1e-5, 4e-5, "changed"), ("model.layers[1]", 2, 3, "changed"),
        ("x", 1, None, "only in A"), ("y", None, 2, "only in B")]


def test_diff_compares_metrics_at_matching_steps(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """diff lists config differences and last/min/max over the steps both runs logged."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_json(a, layout.CONFIG, {"lr": 1e-5, "seed": 0})
    write_json(b, layout.CONFIG, {"lr": 4e-5, "seed": 0})
    write(a, layout.METRICS, jsonl(metrics_line(s, r=float(s)) for s in range(10)))
    write(b, layout.METRICS, jsonl(metrics_line(s, r=10.0 - s) for s in range(5, 20)))
    write(b, layout.METRICS, jsonl({**metrics_line(s, r=10.0 - s), "only_b": 1.0}
                                   for s in range(5, 20)))
    code, out, _ = cli(capsys, "diff", str(a), str(b), "--metric", "r", "--metric", "only_b")
    assert code == 0
    assert "config: 1 difference(s)\n  lr: 1e-05 -> 4e-05" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("r "))
    assert row == ["r", "5", "(5-9)", "9", "1", "5", "1", "9", "5"]
    assert "only_b" in out and "none" in out  # logged by one run: a row saying so
    text = render_diff(open_run(a), open_run(b))
    assert "  optim/lr " in text and "  r " in text  # default: numeric keys both logged


def test_diff_of_a_missing_run_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """diff exits 2 naming the run it cannot read."""
    root = cookbook_run(tmp_path / "run", 1)
    code, _, err = cli(capsys, "diff", str(root), str(tmp_path / "absent"))
    assert code == 2 and "absent" in err


def test_diff_of_a_metric_neither_run_logged_exits_2_naming_the_metrics(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`rlio diff A B --metric nope/key` is one error line naming the key and the metrics both
    runs logged, exit 2, never a "none" row."""
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, layout.METRICS, jsonl(metrics_line(s, r=1.0) for s in range(3)))
    write(b, layout.METRICS, jsonl(metrics_line(s, r=2.0) for s in range(3)))
    code, out, err = cli(capsys, "diff", str(a), str(b), "--metric", "nope/key")
    assert code == 2 and out == ""
    assert err == ("rlio: error: --metric 'nope/key': neither run logged it; metrics both runs "
                   "logged: optim/lr, r\n")
