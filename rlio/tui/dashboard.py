"""The ``rlio top`` application: its feeds (one per run), the first screen, the live tick."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from rlio.tui.feeds import RunFeed
from rlio.tui.screens import Base, HelpScreen, RunScreen, RunsScreen

__all__ = ["DEFAULT_METRICS", "TopApp"]

#: The metrics of the runs view when none are chosen.
DEFAULT_METRICS = ("env/all/reward/total",)


class TopApp(App[None]):
    """A live dashboard of ``runs`` (``(name, location)`` pairs): the runs view, or the run
    view when there is one run."""

    TITLE = "rlio top"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"), Binding("question_mark", "help", "help")]

    def __init__(self, runs: Sequence[tuple[str, str]], *,
                 metrics: Sequence[str] = DEFAULT_METRICS, poll: float = 1.0,
                 slow: float = 3.0) -> None:
        super().__init__()
        self.metrics = list(metrics) or list(DEFAULT_METRICS)
        scans = threading.Semaphore(1)  # one long history is read at a time
        self.feeds = [RunFeed(loc, name, chosen=self.metrics, poll=poll, slow=slow, scans=scans)
                      for name, loc in runs]

    def on_mount(self) -> None:
        if len(self.feeds) == 1:
            self.feeds[0].open_detail()
        for feed in self.feeds:
            feed.start()
        self.push_screen(RunScreen(self.feeds[0], extra=self.metrics[1:])
                         if len(self.feeds) == 1 else RunsScreen(self.feeds, self.metrics))
        self.set_interval(0.2, self.tick)

    def tick(self) -> None:
        """Let the screen show what the feeds read since."""
        screen = self.screen
        if isinstance(screen, Base) and screen.ready:
            screen.tick()

    def action_help(self) -> None:
        """Show the keys."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def on_unmount(self) -> None:
        for feed in self.feeds:
            feed.stop()
