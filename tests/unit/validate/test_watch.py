"""The watcher (``rlio validate --watch``) across rewinds: no phantom finding, nothing missed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factories import cookbook_run, jsonl, metrics_line, metrics_lines

from rlio import Severity, layout, validate_run
from rlio.storage import open_storage
from rlio.validate.watch import Watcher


def _relog(run: Path, cut_after: int, steps: range, **pad: str) -> None:
    """Move metrics lines past ``cut_after`` aside (as a resume does), then log ``steps``."""
    st = open_storage(run)
    data = (run / layout.METRICS).read_bytes()
    cut = sum(len(x) + 1 for x in data.splitlines()[: cut_after + 1])
    with st.lock(layout.METRICS):
        st.move_tail(layout.METRICS, cut, layout.METRICS + layout.SUPERSEDED_SUFFIX)
    lines = metrics_lines(steps)
    if pad:
        lines = lines.replace("}\n", f', "pad": "{pad["pad"]}"}}\n')
    fd = os.open(run / layout.METRICS, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, lines.encode())
    finally:
        os.close(fd)


def test_a_log_cut_back_and_regrown_past_the_old_offset_gives_no_phantom(
        tmp_path: Path) -> None:
    """metrics.jsonl cut back to step 0 and regrown with longer lines past where the watcher
    had read: no phantom RL102, the run stays clean, as a fresh validation says."""
    run = cookbook_run(tmp_path / "run")
    w = Watcher(run)
    w.check()
    assert w.report is not None and w.report.ok
    n = len((run / layout.METRICS).read_bytes().splitlines())
    _relog(run, 0, range(1, n), pad="p" * 37)
    new = w.check()
    assert not [f for f in new if f.code == "RL102"], new
    assert w.report is not None and w.report.ok
    assert set(w.report.findings) == set(validate_run(run).findings)


def test_a_log_regrown_to_its_old_size_is_judged_again(tmp_path: Path) -> None:
    """A rewind that regrows metrics.jsonl to exactly its old size with a broken line is seen
    (the sidecar grew): the watcher reports the new error."""
    run = cookbook_run(tmp_path / "run")
    w = Watcher(run)
    w.check()
    data = (run / layout.METRICS).read_bytes()
    last = data.splitlines()[-1]
    st = open_storage(run)
    with st.lock(layout.METRICS):
        st.move_tail(layout.METRICS, len(data) - len(last) - 1,
                     layout.METRICS + layout.SUPERSEDED_SUFFIX)
    broken = b'{"step": "x"' + b" " * (len(last) - 13) + b"}"
    assert len(broken) == len(last)
    with open(run / layout.METRICS, "ab") as f:
        f.write(broken + b"\n")
    assert (run / layout.METRICS).stat().st_size == len(data)
    new = w.check()
    assert any(f.severity == Severity.ERROR and f.file == layout.METRICS for f in new), new


def test_rewinds_a_torn_tail_and_a_run_away_for_now_match_a_fresh_validation(
        tmp_path: Path) -> None:
    """After the cookbook's own rewind re-logged byte for byte, a run moved away and back, a torn
    tail and its completion, each check's report equals a fresh validation; a check while the
    run is away gives nothing new instead of failing."""
    stores = pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook 0.6.1")
    run = tmp_path / "run"
    lines = [metrics_line(s) for s in range(30)]
    run.mkdir()
    (run / layout.METRICS).write_text(jsonl(lines))
    w = Watcher(run)

    def same() -> None:
        w.check()
        assert w.report is not None
        assert set(w.report.findings) == set(validate_run(run).findings)

    same()
    stores.TrainingRunStore(stores.LocalStorage(str(run))).truncate_metrics(1)
    with (run / layout.METRICS).open("a") as f:
        f.write(jsonl(lines[1:20]))
    same()
    os.rename(run, tmp_path / "away")
    assert w.check() == []
    os.rename(tmp_path / "away", run)
    same()
    with (run / layout.METRICS).open("a") as f:
        f.write('{"step": 20, "x')
    same()
    assert any(f.code == "RL103" for f in w.report.findings)
    with (run / layout.METRICS).open("a") as f:
        f.write('": 1}\n')
    same()
    assert not any(f.code == "RL103" for f in w.report.findings)
