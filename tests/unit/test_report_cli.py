"""``rlio report`` exits 2 with a one-line message when it cannot write the page or a file name
is not UTF-8, instead of a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import cookbook_run, run_cli


@pytest.fixture
def read_only_run(tmp_path: Path) -> Iterator[Path]:
    """A run on a real tmpfs mounted read-only."""
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
                      check=False, capture_output=True).returncode != 0:
        pytest.fail("mounting a tmpfs needs root, which the suite runs as")
    try:
        shutil.copytree(cookbook_run(tmp_path / "src", 2), mnt / "run")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        yield mnt / "run"
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_report_on_a_run_it_cannot_write_into_exits_2(read_only_run: Path) -> None:
    """A read-only run gives exit 2 and a message pointing at -o, no traceback."""
    proc = run_cli("report", str(read_only_run))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("rlio: error: cannot write the report")
    assert "-o FILE" in proc.stderr and "Traceback" not in proc.stderr


def test_report_with_a_non_utf8_file_name_exits_2(tmp_path: Path) -> None:
    """A run whose path holds a non-UTF-8 byte gives exit 2 with a message, no traceback."""
    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/r\xff"))
    cookbook_run(root, 2)
    proc = run_cli("report", os.fsdecode(os.fsencode(root)))
    assert proc.returncode == 2, proc.stderr
    assert "not valid UTF-8" in proc.stderr and "Traceback" not in proc.stderr


def test_report_with_an_unknown_metric_exits_2_naming_the_closest_keys(tmp_path: Path) -> None:
    """``--metric`` with a key the run never logged prints one line naming the closest keys,
    exits 2 and writes nothing."""
    run = cookbook_run(tmp_path / "run", 3, quirks=False)
    proc = run_cli("report", str(run), "--metric", "optim/kl_sample_train")
    assert proc.returncode == 2
    assert "closest: optim/kl_sample_train_v1" in proc.stderr and proc.stderr.count("\n") == 1
    assert not (run / "report.html").exists()
