"""The report's new parts: prompt keys, reward boxes, and where iteration pages are written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rlio.demo import run_demo
from rlio.report import write_run_report
from rlio.report.prompts import prompt_key
from rlio.report.trajectories import box, quantile


def test_prompt_key_hashes_system_and_first_user_message() -> None:
    """The key is sha256 of the canonical JSON of system + first user message, 16 hex digits."""
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"},
            {"role": "assistant", "content": "A"}, {"role": "user", "content": "later"}]
    canonical = json.dumps([{"content": "S", "role": "system"}, {"content": "Q", "role": "user"}],
                           separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert prompt_key(msgs) == hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert prompt_key([*msgs[:2], {"role": "assistant", "content": "B"}]) == prompt_key(msgs)
    assert prompt_key([{"role": "system", "content": "S"}]) is None


def test_box_is_min_quartiles_max_of_finite_rewards() -> None:
    """A box holds min, linear quartiles, max; NaN is left out; no finite value, no box."""
    b = box(3, [4.0, 1.0, float("nan"), 3.0, 2.0])
    assert b is not None and (b.lo, b.q1, b.median, b.q3, b.hi, b.n) == (1, 1.75, 2.5, 3.25, 4, 4)
    assert quantile([0.0, 10.0], 0.5) == 5.0
    assert box(0, [float("nan")]) is None


def test_report_rewrites_rlio_pages_in_place_and_writes_prompt_pages(tmp_path: Path) -> None:
    """rlio's own pages get the trajectory table in place; prompt pages go under report/."""
    run = tmp_path / "run"
    run_demo(run, iterations=2, seed=1)
    before = (run / "train_iteration_000001.html").read_text()
    assert '<table class="traj-table">' not in before and '<nav class="it-nav"' in before
    write_run_report(run)
    after = (run / "train_iteration_000001.html").read_text()
    lines = (run / "train_iteration_000001_rollout_summaries.jsonl").read_text().splitlines()
    assert '<table class="traj-table">' in after
    assert after.count("<tr data-group=") + after.count('<tr class="fail"') == len(lines)
    assert list((run / "report" / "prompts").glob("*.html"))
    assert 'id="prompts"' in (run / "report.html").read_text()
