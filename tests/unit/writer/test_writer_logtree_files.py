"""A logtree's two files: compact JSON, the JSON renamed before its HTML twin, three syncs."""

from __future__ import annotations

import os
import pathlib
from typing import Any

import orjson
import pytest

from rlio import RunWriter, validate_run


def build(run: RunWriter, iteration: int) -> None:
    with run.logtree(iteration, title=f"RL Iteration {iteration}") as lt, \
            lt.section("Group Rollout"):
        for i in range(3):
            lt.conversation([{"role": "user", "content": f"q{i}"},
                             {"role": "assistant", "content": f"a{i}"}])
        lt.table({"reward": 1.0}, caption="Reward components")


def test_logtree_json_is_compact_and_validates(tmp_path: pathlib.Path) -> None:
    """The JSON is one compact document (no indentation), the same document as indented, and
    the run validates clean."""
    with RunWriter(tmp_path) as run:
        run.write_config({"lr": 1e-5})
        build(run, 0)
        run.log_metrics({"env/all/reward/total": 1.0}, step=0)
    raw = (tmp_path / "train_iteration_000000_logtree.json").read_bytes()
    assert b"\n" not in raw and b": " not in raw
    assert raw == orjson.dumps(orjson.loads(raw))
    report = validate_run(str(tmp_path))
    assert report.ok, report.findings


def test_logtree_files_take_three_syncs_json_renamed_first(tmp_path: pathlib.Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Two file fsyncs and one directory fsync, and the JSON is renamed before its HTML."""
    run = RunWriter(tmp_path)
    syncs: list[int] = []
    renames: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        syncs.append(fd)
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        renames.append(os.path.basename(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    build(run, 3)
    monkeypatch.undo()
    run.close()
    assert len(syncs) == 3
    assert renames == ["train_iteration_000003_logtree.json", "train_iteration_000003.html"]
