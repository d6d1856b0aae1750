"""``rlio top`` in a real terminal: tmux at 80×24, keys sent as a person types them, the screen
read back with capture-pane; q leaves the terminal as it was."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("textual")

from rlio.demo import run_demo

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parents[3]
PATIENCE = 30.0


class Tmux:
    """A tmux server of its own (a private socket), one 80×24 window running a shell."""

    def __init__(self) -> None:
        self.socket = f"rlio-test-{uuid.uuid4().hex[:8]}"
        self.tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "24",
                  "env -i PATH=/usr/bin:/bin TERM=xterm-256color HOME=/tmp sh")

    def tmux(self, *args: str) -> str:
        """Run a tmux command on this server; its output."""
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True,
                              capture_output=True, text=True, timeout=10).stdout

    def keys(self, *keys: str) -> None:
        """Send keys (tmux key names) to the window."""
        self.tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        """The window's text."""
        return self.tmux("capture-pane", "-p", "-t", "t")

    def wait(self, ok: Callable[[str], bool], what: str) -> str:
        """The screen once ``ok(screen)`` holds; fails naming ``what`` after PATIENCE."""
        deadline = time.monotonic() + PATIENCE
        while True:
            text = self.screen()
            if ok(text):
                return text
            if time.monotonic() > deadline:
                pytest.fail(f"{what} never showed; the screen:\n{text}")
            time.sleep(0.05)

    def close(self) -> None:
        """Stop this server."""
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=10)


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    """A fresh tmux server, killed after the test."""
    t = Tmux()
    try:
        yield t
    finally:
        t.close()


def test_first_screen_a_transcript_and_back_then_q_restores_the_terminal(
        tmp_path: Path, tmux: Tmux) -> None:
    """In tmux at 80×24 the first screen names the run, its status and iteration and charts
    the reward; i Enter Enter Enter shows a transcript with its roles; Escape four times comes
    back to the run view; q ends the program and the shell's screen is back as it was."""
    run = tmp_path / "demo"
    run_demo(run, iterations=6, seed=0)
    env = f"PYTHONPATH={shlex.quote(str(REPO))}"
    tmux.keys("clear; echo before-top", "Enter")
    tmux.wait(lambda s: "before-top" in s, "the shell")
    tmux.keys(f"{env} {shlex.quote(sys.executable)} -m rlio top {shlex.quote(str(run))}; "
              "echo exit=$?", "Enter")
    head = "demo · finished (final checkpoint) · iteration 5 · checkpoint final"
    first = tmux.wait(lambda s: head in s and "mean reward" in s and "reward  last" in s,
                      "the first screen")
    assert "equal-reward groups" in first
    assert len(first.splitlines()) <= 24 and all(len(ln) <= 80 for ln in first.splitlines())
    tmux.keys("i")
    tmux.wait(lambda s: "iteration  split" in s, "the iterations")
    tmux.keys("Enter")
    tmux.wait(lambda s: "equal-reward groups" in s and "spread" in s, "the groups")
    tmux.keys("Enter")
    tmux.wait(lambda s: "advantage" in s and "traj" in s, "the trajectories")
    tmux.keys("Enter")
    transcript = tmux.wait(lambda s: "── user" in s, "the transcript")
    assert "── system" in transcript and "→ calculator(" in transcript
    for _ in range(4):
        tmux.keys("Escape")
    tmux.wait(lambda s: "mean reward" in s and "reward  last" in s, "the run view again")
    tmux.keys("q")
    after = tmux.wait(lambda s: "exit=0" in s, "the shell after q")
    assert "before-top" in after and "reward  last" not in after
    assert os.path.exists(run / "metrics.jsonl")
