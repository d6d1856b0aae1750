"""``rlio top`` driven with Textual's pilot at 80×24: the first screens, the drill-down to a
transcript and back, search, sort, help, a live run written by another process, and never a
byte written to a run."""

from __future__ import annotations

import asyncio
import hashlib
import io
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("textual")

from rich.console import Console

from rlio.demo import run_demo
from rlio.tui.dashboard import TopApp
from rlio.tui.screens import (
    GroupsScreen,
    HelpScreen,
    IterationsScreen,
    KeySearch,
    PromptScreen,
    RunScreen,
    RunsScreen,
    TrajectoriesScreen,
    TranscriptScreen,
)

#: An upper bound on waiting for a background read, so a bug fails instead of hanging.
PATIENCE = 30.0


def screen_text(app: Any) -> str:
    """The characters on the app's screen, as a terminal shows them."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(
        full=True, screen_stack=app._background_screens))
    return console.export_text()


async def until(pilot: Any, ok: Callable[[], bool], what: str) -> None:
    """Let the app run until ``ok()`` holds (fail naming ``what`` after PATIENCE seconds)."""
    deadline = time.monotonic() + PATIENCE
    while not ok():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} never came; the screen shows:\n{screen_text(pilot.app)}")
        await pilot.pause(0.05)


def table_rows(app: Any) -> list[list[str]]:
    """The runs view's rows as shown (runs named a and b), split into cells."""
    return [ln.split() for ln in screen_text(app).splitlines() if ln.startswith((" a ", " b "))]


def hashes(root: Path) -> dict[str, str]:
    """Every file under ``root`` by relative path, with its SHA-256."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def drive(app: TopApp, script: Callable[[Any], Awaitable[None]],
          size: tuple[int, int] = (80, 24)) -> None:
    """Run ``app`` headless at ``size`` through ``script(pilot)``, then quit with q."""
    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await script(pilot)
            await pilot.press("q")
            await pilot.pause()
    try:
        asyncio.run(main())
    finally:
        for feed in app.feeds:
            feed.stop()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-iteration demo run (tool calls, thinking, an evaluator, checkpoints)."""
    root = tmp_path_factory.mktemp("top") / "demo"
    run_demo(root, iterations=4, seed=0)
    return root


def _app(*runs: Path, **kw: Any) -> TopApp:
    return TopApp([(p.name, str(p)) for p in runs], poll=0.05, slow=0.1, **kw)


def test_one_run_opens_on_its_run_view_and_drills_down_to_a_transcript_and_back(
        demo: Path) -> None:
    """The first screen of one run names its status, iteration, the latest rewards and GRPO's
    equal-reward share, and charts the usual keys; i → Enter → Enter → Enter reaches the first
    trajectory's transcript (roles, a tool call, thinking folded, then unfolded with t), and
    Escape walks back to the run view; nothing in the run changed."""
    before = hashes(demo)
    app = _app(demo)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: all(part in screen_text(app) for part in (
            "mean reward", "iteration 3 · checkpoint", "equal-reward groups", "entropy")),
            "the first screen (each panel fills on its own tick)")
        text = screen_text(app)
        assert "demo · finished (final checkpoint) · iteration 3 · checkpoint final" in text
        assert "iteration 3 · 16 trajectories · 4 groups" in text
        assert "equal-reward groups" in text
        assert "reward  last 0.8138" in text and "entropy" in text
        await pilot.press("i")
        assert isinstance(app.screen, IterationsScreen)
        await until(pilot, lambda: "3          train" in screen_text(app), "iteration rows")
        await pilot.press("enter")
        assert isinstance(app.screen, GroupsScreen)
        await until(pilot, lambda: bool(app.screen.groups), "the groups")
        assert "equal-reward groups" in screen_text(app)
        await pilot.press("enter")
        assert isinstance(app.screen, TrajectoriesScreen)
        assert "advantage" in screen_text(app)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        await until(pilot, lambda: "── user" in screen_text(app), "the transcript")
        text = screen_text(app)
        assert "iteration 3 · group 0 · trajectory 0 · reward 0.0252 · advantage -0.7373" in text
        assert "→ calculator(" in text and "▸ thinking" in text
        await pilot.press("t")
        assert "I should multiply" in screen_text(app)
        await pilot.press("p")
        assert isinstance(app.screen, PromptScreen)
        await until(pilot, lambda: "trajectories · Enter" in screen_text(app), "prompt rows")
        assert app.screen.rows[0][0] == 3
        for back in (TranscriptScreen, TrajectoriesScreen, GroupsScreen, IterationsScreen,
                     RunScreen, RunScreen):
            await pilot.press("escape")
            assert isinstance(app.screen, back)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "rlio top — keys" in screen_text(app)
        await pilot.press("escape")
        assert isinstance(app.screen, RunScreen)

    drive(app, script)
    assert app.return_code in (0, None)
    assert hashes(demo) == before


def test_any_key_is_charted_by_search(demo: Path) -> None:
    """/ then a part of a key and Enter adds that key's chart to the run view."""
    app = _app(demo)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: "mean reward" in screen_text(app), "the run view")
        await pilot.press("slash")
        assert isinstance(app.screen, KeySearch)
        await pilot.press(*"turns", "enter")
        assert isinstance(app.screen, RunScreen)
        await until(pilot, lambda: "env/all/turns_per_episode" in
                    [k for _, k in app.screen.keys], "the searched chart")

    drive(app, script, size=(200, 50))


def test_runs_view_lists_every_run_and_sorts_by_a_metric(tmp_path: Path) -> None:
    """A folder of two runs: one row each with status, iteration, checkpoint and the reward's
    last and best; s sorts by the next column (the reward's best, best first), Enter opens
    the highlighted run."""
    from rlio.validate.fleet import discover_named

    sweep = tmp_path / "sweep"
    run_demo(sweep / "a", iterations=3, seed=1)
    run_demo(sweep / "b", iterations=5, seed=2)
    app = TopApp(discover_named([str(sweep)]), poll=0.05, slow=0.1)

    async def script(pilot: Any) -> None:
        assert isinstance(app.screen, RunsScreen)
        expected = [["a", "finished", "2", "final"], ["b", "finished", "4", "final"]]
        await until(pilot, lambda: [r[:4] for r in table_rows(app)] == expected, "both rows")
        best = {f.name: f.metrics.best["env/all/reward/total"] for f in app.feeds}
        for _ in range(5):
            await pilot.press("s")
        assert "sorted by reward/total best ↓" in screen_text(app)
        first = max(best, key=lambda k: best[k])
        assert table_rows(app)[0][0] == first
        await pilot.press("enter")
        assert isinstance(app.screen, RunScreen) and app.screen.feed.name == first

    drive(app, script)


WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from rlio import RunWriter
    root, go = sys.argv[1], Path(sys.argv[2])

    def iteration(run, i):
        with run.logtree(i, title=f"RL Iteration {i}") as lt:
            with lt.section("Group Rollout"):
                lt.conversation([{"role": "user", "content": f"q{i}"},
                                 {"role": "assistant", "content": "a"}])
        run.write_rollout_summaries(i, [
            {"group_idx": 0, "traj_idx": t, "tags": [], "sampling_client_step": i,
             "total_reward": float(t), "final_reward": float(t), "trajectory_metrics": {},
             "steps": [{"step_idx": 0, "ob_len": 3, "ac_len": 2, "reward": 0.0,
                        "episode_done": True, "metrics": {}, "logs": {}}],
             "final_ob_len": 5} for t in range(2)])
        run.log_metrics({"progress/batch": i, "env/all/reward/total": i / 10,
                         "optim/lr": 1e-5}, step=i)
        run.record_checkpoint(f"{i + 1:06d}", batch=i + 1, state_path=f"tinker://x/{i + 1}")

    with RunWriter(root) as run:
        run.write_config({"lr": 1e-5})
        for i in range(3):
            iteration(run, i)
        while not go.exists():
            time.sleep(0.02)
        iteration(run, 3)
        while go.exists():  # the reader saw iteration 3 while the writer held the run
            time.sleep(0.02)
        run.record_checkpoint("final", batch=4, state_path="tinker://x/final")
""")


def test_a_live_run_written_by_another_process_shows_each_new_iteration(
        tmp_path: Path) -> None:
    """A RunWriter in a subprocess: the run view shows it running at iteration 2, then
    iteration 3 with its rewards as it is written, then finished; the follower read each step
    once."""
    import subprocess

    root, go = tmp_path / "live", tmp_path / "go"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(go)])
    try:
        deadline = time.monotonic() + PATIENCE
        while not (root / "metrics.jsonl").exists() or \
                (root / "metrics.jsonl").read_bytes().count(b"\n") < 3:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.02)
        app = _app(root)

        async def script(pilot: Any) -> None:
            await until(pilot, lambda: "live · running (pid" in screen_text(app)
                        and "iteration 2 ·" in screen_text(app), "the running run")
            await until(pilot, lambda: "iteration 2 · 2 trajectories" in screen_text(app),
                        "iteration 2's rewards")
            go.touch()
            await until(pilot, lambda: "iteration 3 · 2 trajectories" in screen_text(app),
                        "iteration 3, written live")
            await until(pilot, lambda: "· iteration 3 · checkpoint" in screen_text(app),
                        "the header's iteration 3 (its metrics line comes on its own tick)")
            go.unlink()
            await until(pilot, lambda: "finished (final checkpoint)" in screen_text(app),
                        "the end of the run")

        drive(app, script)
        assert proc.wait(PATIENCE) == 0
        feed = app.feeds[0]
        assert feed.metrics.series["env/all/reward/total"].xs == [0, 1, 2, 3]
    finally:
        proc.kill()
        proc.wait()


def test_a_transcript_not_in_a_group_section_shows_the_logtrees_conversations(
        tmp_path: Path) -> None:
    """An evaluator-style logtree (a conversation outside any Group section): the trajectory's
    screen shows the conversation the logtree holds."""
    from rlio import RunWriter

    root = tmp_path / "eval"
    with RunWriter(root) as run:
        with run.logtree(0, title="Evaluation") as lt:
            lt.conversation([{"role": "user", "content": "capital of France?"},
                             {"role": "assistant", "content": "Paris"}])
        run.write_rollout_summaries(0, [
            {"group_idx": 0, "traj_idx": 0, "tags": [], "sampling_client_step": 0,
             "total_reward": 1.0, "final_reward": 1.0, "trajectory_metrics": {},
             "steps": [{"step_idx": 0, "ob_len": 3, "ac_len": 2, "reward": 0.0,
                        "episode_done": True, "metrics": {}, "logs": {}}],
             "final_ob_len": 5}])
        run.log_metrics({"progress/batch": 0, "env/all/reward/total": 1.0}, step=0)
    app = _app(root)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: "mean reward 1" in screen_text(app), "the run view")
        await pilot.press("i")
        await until(pilot, lambda: "0          train" in screen_text(app), "the iteration")
        await pilot.press("enter")
        await until(pilot, lambda: bool(app.screen.groups), "the groups")
        await pilot.press("enter")
        await until(pilot, lambda: "advantage" in screen_text(app), "the trajectories")
        await pilot.press("enter")
        await until(pilot, lambda: "Paris" in screen_text(app), "the logtree's conversation")

    drive(app, script)


def test_a_cookbook_run_with_every_quirk_is_shown_without_error(tmp_path: Path) -> None:
    """The cookbook's quirks (NaN metrics, an HTML-only iteration, a 0-byte evaluator file,
    rolling checkpoints, an eval-only line at the end): the run view, every iteration and every
    group open without an error, and nothing in the run changes."""
    from factories import cookbook_run

    root = cookbook_run(tmp_path / "quirky", iterations=3)
    before = hashes(root)
    app = _app(root)

    async def script(pilot: Any) -> None:
        await until(pilot, lambda: "iteration 2 · checkpoint final" in screen_text(app)
                    and "mean reward" in screen_text(app), "the run view")
        await pilot.press("i")
        await until(pilot, lambda: len(app.screen.shown) == 3, "the iterations")
        for row in range(3):
            if row:
                await pilot.press("escape")
                await until(pilot, lambda: isinstance(app.screen, IterationsScreen),
                            "the iterations again")
                await pilot.press("down")
            await pilot.press("enter")
            assert isinstance(app.screen, GroupsScreen)
            await until(pilot, lambda: "groups · equal-reward" in screen_text(app),
                        "an iteration's groups")
        assert app.feeds[0].error is None and app.feeds[0].look_error is None

    drive(app, script)
    assert hashes(root) == before
