"""A fleet under an object-store prefix is listed once: discovery's listing also gives each run's
entries to its validation, so list requests do not grow with the number of runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import jsonl, metrics_line
from gcs_emulator import Emulator

from rlio import query
from rlio.cli import main
from rlio.storage import open_storage
from rlio.validate.fleet import validate_runs


def test_42_runs_under_a_gs_prefix_cost_one_list_request(
        gs_uri: str, emulator: Emulator, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """validate_runs, rlio validate, rlio.query and rlio compare over a gs:// sweep of 42 runs (in
    folders two deep) each make one list request (fewer than 1,000 objects) besides the reads of
    the runs' files, and read every run."""
    for i in range(42):
        st = open_storage(f"{gs_uri}/g{i % 3}/run{i:02d}", create=True)
        st.replace("config.json", b'{"lr": 0.1}')
        app = st.appender("metrics.jsonl")
        app.append_durable(jsonl(metrics_line(s) for s in range(3)).encode())
        app.close()
    emulator.stats(reset=True)
    fleet = validate_runs([gs_uri + "/"], jobs=1)
    assert len(fleet.runs) == 42 and not fleet.unreadable
    assert all(r.ok for r in fleet.runs)
    assert emulator.stats()["list"]["requests"] == 1
    emulator.stats(reset=True)
    assert main(["validate", gs_uri + "/", "--jobs", "1"]) == 0  # with the runs' statuses
    assert emulator.stats()["list"]["requests"] == 1
    emulator.stats(reset=True)
    assert query("SELECT count(*) AS n FROM metrics", [gs_uri + "/"], jobs=1).to_pylist() == [
        {"n": 42 * 3}]
    assert emulator.stats()["list"]["requests"] == 1
    emulator.stats(reset=True)
    assert main(["compare", gs_uri + "/", "-o", str(tmp_path / "c.html"), "--jobs", "1"]) == 0
    assert emulator.stats()["list"]["requests"] == 1
