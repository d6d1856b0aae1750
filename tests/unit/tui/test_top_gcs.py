"""``rlio top`` on a gs:// prefix (the enforcing emulator): the runs are found by the fleet's
discovery, read from their tails, and drilled down to a transcript as locally."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from factories import upload_folder
from test_dashboard import drive, screen_text, table_rows, until

from rlio.demo import run_demo
from rlio.storage import open_storage
from rlio.tui.dashboard import TopApp
from rlio.tui.screens import RunScreen, RunsScreen, TranscriptScreen
from rlio.validate.fleet import discover_named

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "storage"))
from gcs_emulator import Emulator, serving

pytestmark = pytest.mark.gcs
BUCKET = "rlio-top"


@pytest.fixture(scope="module")
def gs_env() -> Iterator[Emulator]:
    """The storage tests' enforcing emulator on a free loopback port, for this module."""
    with serving(BUCKET) as emu:
        yield emu


def test_a_gs_prefix_of_two_runs_shows_both_and_opens_a_transcript(gs_env: Emulator,
                                                                   tmp_path: Path) -> None:
    """Two demo runs under a gs:// prefix: one row each (finished, the last iteration), the
    run view from the tail only, a transcript through the drill-down, and nothing written."""
    run_demo(tmp_path / "sweep" / "a", iterations=2, seed=1)
    run_demo(tmp_path / "sweep" / "b", iterations=3, seed=2)
    uri = upload_folder(tmp_path / "sweep", f"gs://{BUCKET}")
    before = {e.path: e.size for e in open_storage(uri).walk()}
    app = TopApp(discover_named([uri]), poll=0.1, slow=0.2)

    async def script(pilot: Any) -> None:
        assert isinstance(app.screen, RunsScreen)
        expected = [["a", "finished", "1", "final"], ["b", "finished", "2", "final"]]
        await until(pilot, lambda: [r[:4] for r in table_rows(app)] == expected, "both rows")
        await pilot.press("enter")
        assert isinstance(app.screen, RunScreen)
        await until(pilot, lambda: "mean reward" in screen_text(app), "the run view")
        assert app.feeds[0].history == "tail only"
        await pilot.press("i")
        await until(pilot, lambda: "iteration  split" in screen_text(app), "the iterations")
        await pilot.press("enter")
        await until(pilot, lambda: bool(getattr(app.screen, "groups", None)), "the groups")
        await pilot.press("enter")
        await until(pilot, lambda: "advantage" in screen_text(app), "the trajectories")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, TranscriptScreen), "the transcript")
        await until(pilot, lambda: "── user" in screen_text(app), "the transcript")

    drive(app, script)
    assert {e.path: e.size for e in open_storage(uri).walk()} == before
