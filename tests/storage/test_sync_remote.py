"""rlio sync to gs://, s3:// and az:// (emulators): a live run mirrored by `rlio sync --follow`
killed and restarted several times ends byte for byte equal on its logs and validates the same;
a cookbook 0.6.1 run synced reads the same through open_run, query and compare from the bucket."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from factories import cookbook_run, cookbook_two_sessions, findings
from gcs_emulator import Emulator

from rlio import layout, open_run, query, sync
from rlio.cli import main
from rlio.storage import open_storage


@pytest.fixture(autouse=True)
def _sync_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The advisory sync cache of each test in its own folder (and its subprocesses')."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


TRAINER = textwrap.dedent(r"""
    import sys, time
    from rlio import RunWriter
    with RunWriter(sys.argv[1]) as run:
        run.write_config({"lr": 0.1})
        for i in range(80):
            run.log_metrics({"progress/batch": i, "env/all/reward/total": i / 80}, step=i)
            if i % 10 == 9:
                run.record_checkpoint(f"{i + 1:06d}", batch=i + 1, state_path=f"tinker://r/{i}")
            time.sleep(0.01)
""")


def _mirror_equal(run: Path, uri: str) -> None:
    remote = open_storage(uri)
    for rel in (layout.METRICS, layout.CHECKPOINTS, layout.CONFIG):
        assert remote.read_bytes(rel) == (run / rel).read_bytes(), rel
    assert findings(uri) == findings(run)


# sync uses only the Storage interface: gs:// and az:// by default, s3:// under slow (s3:// is
# also mirrored by the every-file-kind and cookbook tests below).
@pytest.mark.parametrize("backend", ["gs", pytest.param("s3", marks=pytest.mark.slow), "az"])
def test_a_live_run_mirrored_by_a_sync_killed_and_restarted(
        backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """A trainer subprocess writes 80 steps while `rlio sync --follow` is SIGKILLed and started
    again four times; a last sync leaves logs equal byte for byte and the same findings; a local
    rewind then replaces the remote log."""
    uri = request.getfixturevalue(f"{backend}_uri")
    run = tmp_path / "run"
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, str(run)])
    try:
        for k in range(4):
            syncer = subprocess.Popen([sys.executable, "-m", "rlio", "sync", str(run), uri,
                                       "--follow", "--poll", "0.05"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.3 + 0.1 * k)
            syncer.send_signal(signal.SIGKILL)
            syncer.wait()
    finally:
        assert trainer.wait(timeout=60) == 0
    stats = sync(run, uri)
    _mirror_equal(run, uri)
    assert sync(run, uri).bytes_sent == 0 and stats.passes == 1
    kept = (run / layout.METRICS).read_bytes().splitlines(keepends=True)[:10]
    (run / layout.METRICS).write_bytes(b"".join(kept))  # a rewind: the remote is no prefix
    assert sync(run, uri).replaced == 1
    _mirror_equal(run, uri)


def test_a_cookbook_run_synced_reads_the_same_from_the_bucket(gs_uri: str,
                                                             tmp_path: Path) -> None:
    """The real cookbook 0.6.1 loop (its own backend, a resume with truncate_metrics) writes a
    run locally; synced to gs://, open_run reads the same metrics, checkpoints and rollouts,
    rlio query the same rows, and rlio compare puts the bucket's copy beside the local run."""
    pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook 0.6.1")
    run = tmp_path / "run"
    cookbook_two_sessions(run, lambda _d: None)
    sync(run, gs_uri)
    remote, local = open_run(gs_uri), open_run(run)
    assert repr(remote.metrics()) == repr(local.metrics())
    assert remote.checkpoints() == local.checkpoints()
    assert repr(list(remote.rollouts(1))) == repr(list(local.rollouts(1)))
    assert findings(gs_uri) == findings(run)
    sql = "SELECT step, \"env/all/reward/total\" AS r FROM metrics ORDER BY step"
    assert query(sql, [gs_uri]).to_pylist() == query(sql, [run]).to_pylist()
    assert main(["compare", gs_uri, str(run), "-o", str(tmp_path / "compare.html")]) == 0
    assert (tmp_path / "compare.html").read_text().lower().startswith("<!doctype html")


def test_an_unchanged_run_synced_again_reads_nothing_back(
        gs_uri: str, emulator: Emulator, tmp_path: Path) -> None:
    """A second one-shot sync of an unchanged run sends nothing and reads nothing back (a log's
    size says it is whole; the advisory cache says which other files the bucket holds); with the
    cache gone it reads those files back to compare them, and still sends nothing."""
    run = cookbook_run(tmp_path / "run", iterations=3)
    sync(run, gs_uri)
    emulator.stats(reset=True)
    assert sync(run, gs_uri).bytes_sent == 0
    assert set(emulator.stats()) == {"list"}
    for cached in (tmp_path / "cache").rglob("*.json"):
        cached.unlink()
    emulator.stats(reset=True)
    assert sync(run, gs_uri).bytes_sent == 0
    assert emulator.stats()["read"]["requests"] > 3  # config, code diff, pages...


@pytest.mark.parametrize("layout_name", ["flat", "nested"])
def test_every_file_kind_synced_validates_the_same(
        layout_name: layout.Layout, s3_uri: str, tmp_path: Path) -> None:
    """A run holding every file kind and cookbook quirk (0-byte summaries, NaN tokens, iteration
    folders) synced to s3:// holds the same bytes in every file and gives the same findings."""
    run = cookbook_run(tmp_path / "run", layout_name=layout_name)
    sync(run, s3_uri)
    remote = open_storage(s3_uri)
    local = {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*")
             if p.is_file()}
    assert {e.path: remote.read_bytes(e.path) for e in remote.walk()} == local
    assert findings(s3_uri) == findings(run)
