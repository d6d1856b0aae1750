"""Large rollout files split across a helper process report exactly what one process reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import NAN, cookbook_run, jsonl, trajectory, write

import rlio.validate.engine as validate_mod
from rlio import layout
from rlio.validate import validate_run
from rlio.validate.checks.rollout_lines import PairOrder
from rlio.validate.parallel import RangeTask

PATH = layout.iteration_path("flat", 1, "rollout_summaries")


def defective_file(run: Path) -> None:
    """A summaries file with defects in both halves and across the split point."""
    recs = [trajectory(1, g, t) for g in range(40) for t in range(4)]
    recs[3]["iteration"] = 2
    recs[150]["iteration"] = 3
    recs[120]["trajectory_metrics"]["kl"] = NAN
    recs[155]["group_idx"], recs[155]["traj_idx"] = 0, 1  # repeats line 2, in the second half
    recs[100]["steps"][0]["reward"] = "bad"
    for r in recs[60:80]:
        r["split"] = "eval/x"
    data = jsonl(recs)
    write(run, PATH, data[:-40])  # and a cut last line


def report_rows(run: Path, **kw: object) -> list[tuple[str, str, str, int | None, str]]:
    """Comparable rows of a report (messages included)."""
    return [(f.code, str(f.severity), f.file, f.line, f.pointer + " " + f.message)
            for f in validate_run(run, **kw).findings]  # type: ignore[arg-type]


def test_split_scan_equals_single_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """jobs=2 (a real helper process) and jobs=1 give identical findings and line numbers."""
    run = cookbook_run(tmp_path / "run")
    defective_file(run)
    single = report_rows(run, jobs=1, max_findings_per_code=5)
    monkeypatch.setattr(validate_mod, "PARALLEL_MIN_BYTES", 1)
    local: list[RangeTask] = []
    real_scan = validate_mod.scan_range
    monkeypatch.setattr(validate_mod, "scan_range",
                        lambda task, storage=None: local.append(task) or real_scan(task, storage))
    split = report_rows(run, jobs=2, max_findings_per_code=5)
    assert [t.start for t in local if t.rel == PATH] == [0]  # the other half ran in the helper
    three = report_rows(run, jobs=3, max_findings_per_code=5)
    assert split == single
    assert three == single
    codes = {r[0] for r in single if r[2] == PATH}
    assert {"RL401", "RL402", "RL403", "RL201", "RL104", "RL113", "RL112"} <= codes


def test_helper_failure_falls_back_to_local_scan(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """When the helper process cannot start, the range is scanned locally: same findings."""
    run = cookbook_run(tmp_path / "run")
    defective_file(run)
    single = report_rows(run, jobs=1)
    monkeypatch.setattr(validate_mod, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr("sys.executable", str(tmp_path / "no-such-python"))
    assert report_rows(run, jobs=2) == single


def test_pair_order_across_ranges() -> None:
    """Ordered ranges stay ordered only when the second starts after the first ends."""
    a = PairOrder(True, (0, 0), (3, 1))
    assert a.then(PairOrder(True, (3, 2), (5, 0))).ordered
    assert not a.then(PairOrder(True, (3, 1), (5, 0))).ordered
    assert not a.then(PairOrder(False, (4, 0), (5, 0))).ordered
    assert a.then(PairOrder()) == a
    assert PairOrder().then(a) == a
