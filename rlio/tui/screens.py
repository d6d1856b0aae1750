"""The screens of ``rlio top``: runs, one run, its iterations, a group, a trajectory's
transcript, the same prompt across iterations, key search and help. Each screen reads through a
``RunFeed`` (live) or on a worker thread (a drill-down's one-off reads); none writes."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Input, OptionList, Static

from rlio import layout
from rlio.findings import Severity
from rlio.outcome import trajectory
from rlio.tui.chat_text import clean, transcript_text
from rlio.tui.feeds import RunFeed, lower_is_better
from rlio.tui.group_stats import GroupRow, IterationRows, TrajectoryRow, iteration_rows
from rlio.tui.panels import (
    chart_text,
    checkpoint_lines,
    distribution_text,
    findings_text,
    fmt,
    usual_keys,
)

if TYPE_CHECKING:
    from rlio.reader.run import Run

#: Conversations shown when a trajectory's own transcript is not linked in the logtree.
MAX_OTHER_CONVERSATIONS = 20

HELP = """\
rlio top — keys
  ↑ ↓ PgUp PgDn   move          Enter   open the row
  Esc / Backspace back          q       quit (the terminal is restored)
  ?               this help

runs view      s  sort by the next column    r  reverse the order
run view       /  chart any metric key       i  iterations (drill-down)
               f  all findings
iteration      Enter on a group → its trajectories → a transcript
transcript     t  unfold / fold thinking     p  the prompt in other iterations

outcome = total_reward (the step rewards plus final_reward)
advantage = outcome − its group's mean (equal-reward groups: no signal)
rlio top only reads: it never writes to a run.
"""


class Base(Screen[None]):
    """What every screen shares: back, help, quit."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,backspace", "back", "back"),
        Binding("question_mark", "app.help", "help"),
        Binding("q", "app.quit", "quit"),
    ]

    #: Set once the screen's widgets are mounted: the app's tick waits for it.
    ready = False

    def action_back(self) -> None:
        """Leave this screen (the first screen stays)."""
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def tick(self) -> None:
        """Show what changed in the feeds (called five times a second; cheap when nothing did)."""


def _table(*columns: str, widths: Mapping[str, int] | None = None) -> DataTable[Any]:
    """A row-cursor table; ``widths`` fixes a column's width where its values have a known
    longest form (auto-sized columns can be laid out before their widest value arrives)."""
    table: DataTable[Any] = DataTable(cursor_type="row", zebra_stripes=True)
    for name in columns:
        table.add_column(name, width=(widths or {}).get(name))
    return table


#: The runs table's status column fits its longest word ("finished", "stopped", "running").
STATUS_WIDTH = 8


def _sort_value(v: float | str | None) -> tuple[int, Any]:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return (1, 0)
    return (0, v)


# -- runs -------------------------------------------------------------------------------------


class RunsScreen(Base):
    """One row per run: status, iteration, last checkpoint, last and best of chosen metrics."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sort", "sort"), Binding("r", "reverse", "reverse")]

    def __init__(self, feeds: Sequence[RunFeed], metrics: Sequence[str]) -> None:
        super().__init__()
        self.feeds = list(feeds)
        self.metrics = list(metrics)
        self.columns = ["run", "status", "iter", "checkpoint"]
        self.names = list(self.columns)  # what "sorted by" says
        for m in self.metrics:
            parts = m.rsplit("/", 2)
            short = "/".join(parts[-2:]) if len(parts) > 1 else m
            self.columns += [f"{short} last", "best"]
            self.names += [f"{short} last", f"{short} best"]
        self.sort_col = 0
        self.reverse = False
        self.seen: tuple[int, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield _table(*self.columns, widths={"status": STATUS_WIDTH})
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        self.tick()

    def _row(self, feed: RunFeed) -> list[Any]:
        with feed.lock:
            st = feed.status
            m = feed.metrics
            row: list[Any] = [feed.name, "error" if feed.error else st.state if st else "…",
                              m.batch if m.batch is not None else m.last_step,
                              st.last_checkpoint if st else None]
            for key in self.metrics:
                row += [m.value(key), m.best.get(key)]
        return row

    def tick(self) -> None:
        versions = tuple(f.version for f in self.feeds)
        if versions == self.seen:
            return
        self.seen = versions
        rows = [(f, self._row(f)) for f in self.feeds]
        rows.sort(key=lambda fr: _sort_value(fr[1][self.sort_col]), reverse=self.reverse)
        table = self.query_one(DataTable)
        at = table.cursor_row
        current = None
        if 0 <= at < table.row_count:
            current = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        table.clear()
        for feed, row in rows:
            shown = [clean(v) if isinstance(v, str) else "—" if v is None
                     else fmt(v) if isinstance(v, float) else str(v) for v in row]
            table.add_row(*shown, key=feed.location)
        if current is not None:
            table.move_cursor(row=table.get_row_index(current))
        arrow = "↓" if self.reverse else "↑"
        self.query_one("#title", Static).update(
            f"rlio top · {len(self.feeds)} runs · sorted by {self.names[self.sort_col]} "
            f"{arrow} · Enter opens a run · ? help")

    def action_sort(self) -> None:
        """Sort by the next column."""
        self.sort_col = (self.sort_col + 1) % len(self.columns)
        key = self.metrics[(self.sort_col - 4) // 2] if self.sort_col >= 4 else ""
        self.reverse = self.sort_col >= 4 and not lower_is_better(key)  # the best first
        self.seen = ()
        self.tick()

    def action_reverse(self) -> None:
        """Reverse the order."""
        self.reverse = not self.reverse
        self.seen = ()
        self.tick()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        feed = next(f for f in self.feeds if f.location == event.row_key.value)
        self.app.push_screen(RunScreen(feed, extra=self.metrics))


# -- one run ----------------------------------------------------------------------------------


class Panel(Widget):
    """A widget drawn from a function of its width (redrawn when the feed changes)."""

    DEFAULT_CSS = "Panel { height: auto; }"

    def __init__(self, draw: Any, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.draw = draw

    def render(self) -> Text:
        text: Text = self.draw(max(10, self.size.width or 80))
        return text


class Chart(Panel):
    """One metric's chart."""

    DEFAULT_CSS = "Chart { height: 4; width: 1fr; min-width: 30; }"

    def __init__(self, draw: Any, rows: int) -> None:
        super().__init__(draw)
        self.rows = rows

    def render(self) -> Text:
        text: Text = self.draw(max(10, self.size.width or 80), self.rows)
        return text


class RunScreen(Base):
    """One run: header, latest iteration's rewards, charts, checkpoints, findings."""

    DEFAULT_CSS = """
    RunScreen #charts { layout: grid; grid-size: 2; grid-gutter: 1 2; grid-rows: 4;
        height: auto; margin-bottom: 1; }
    RunScreen #dist, RunScreen #ckpts { margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "chart a key"), Binding("i", "iterations", "iterations"),
        Binding("f", "findings", "findings")]

    def __init__(self, feed: RunFeed, extra: Sequence[str] = ()) -> None:
        super().__init__()
        self.feed = feed
        self.keys: list[tuple[str, str]] = []
        self.extra = list(extra)
        self.seen = -1

    def compose(self) -> ComposeResult:
        yield Static(id="head")
        with VerticalScroll():
            yield Panel(self._distribution, id="dist")
            yield Widget(id="charts")
            yield Panel(self._checkpoints, id="ckpts")
            yield Panel(self._findings, id="findings")
        yield Footer()

    def on_mount(self) -> None:
        self.feed.open_detail()
        self.ready = True
        self.tick()

    def _distribution(self, width: int) -> Text:
        with self.feed.lock:
            return distribution_text(self.feed.latest, width)

    def _checkpoints(self, width: int) -> Text:
        with self.feed.lock:
            return checkpoint_lines(list(self.feed.checkpoints), self.feed.metrics.last_step,
                                    width)

    def _findings(self, width: int) -> Text:
        with self.feed.lock:
            return findings_text(list(self.feed.findings), self.feed.findings_state, 5)

    def _chart(self, label: str, key: str) -> Any:
        def draw(width: int, rows: int) -> Text:
            with self.feed.lock:
                m = self.feed.metrics
                s = m.series.get(key)
                pts = s.points() if s is not None else []
                return chart_text(label, key, pts, m.value(key), m.best.get(key)
                                  if key in m.best else _best(pts, key), width, rows)
        return draw

    def head_text(self) -> str:
        """The header: name, status, iteration, last checkpoint; what has been read."""
        f = self.feed
        with f.lock:
            m = f.metrics
            st = f.status
            state: str = "reading…" if st is None else st.state
            if st is not None and st.state == "running" and st.holder:
                state += f" (pid {st.holder.get('pid')} on {st.holder.get('host')})"
            elif st is not None and st.finished_by:
                state += f" ({st.finished_by})"
            it = m.batch if m.batch is not None else m.last_step
            it_s = "—" if it is None else str(it)
            ckpt = st.last_checkpoint if st is not None else None
            lines = [f"{clean(f.name)} · {clean(state)} · iteration {it_s} · checkpoint "
                     f"{clean(ckpt) if ckpt is not None else '—'}",
                     f"{len(f.iterations)} iterations on disk · history: {f.history} · "
                     f"findings: {_findings_word(f)} · ? help"]
            for error in (f.error, f.look_error):
                if error:
                    lines.append(f"error: {clean(error)}")
            if not f.loaded:
                lines.append("loading the tail of metrics.jsonl…")
        return "\n".join(lines)

    def tick(self) -> None:
        if self.feed.version == self.seen:
            return
        self.seen = self.feed.version
        self.query_one("#head", Static).update(self.head_text())
        with self.feed.lock:
            keys = usual_keys(self.feed.metrics.series)
        keys += [(k, k) for k in self.extra if k not in (key for _, key in keys)]
        if keys != self.keys:
            self.keys = keys
            charts = self.query_one("#charts")
            charts.remove_children()
            charts.mount_all([Chart(self._chart(label, key), self._rows())
                              for label, key in keys])
            self._fit()
        for w in self.query(Panel):
            w.refresh(layout=True)

    def _rows(self) -> int:
        """Chart rows: 3 on a small terminal, more where there is room."""
        return 3 if self.app.size.height < 40 else 6

    def _fit(self) -> None:
        """Lay the charts out for the terminal's size: 40 columns or more each."""
        charts = self.query_one("#charts")
        charts.styles.grid_size_columns = max(1, min(3, self.app.size.width // 40))
        rows = self._rows()
        charts.styles.grid_rows = str(rows + 1)
        for chart in self.query(Chart):
            chart.rows = rows
            chart.styles.height = rows + 1

    def on_resize(self) -> None:
        self._fit()
        for w in self.query(Panel):
            w.refresh(layout=True)

    def action_search(self) -> None:
        """Pick any logged key to chart."""
        with self.feed.lock:
            keys = sorted(self.feed.metrics.series)

        def picked(key: str | None) -> None:
            if key and key not in self.extra:
                self.extra.append(key)
                self.seen = -1
                self.tick()

        self.app.push_screen(KeySearch(keys), picked)

    def action_iterations(self) -> None:
        """Open the iterations (drill-down)."""
        self.app.push_screen(IterationsScreen(self.feed))

    def action_findings(self) -> None:
        """Every finding so far."""
        with self.feed.lock:
            text = findings_text(list(self.feed.findings), self.feed.findings_state, 500)
        self.app.push_screen(TextScreen("findings", text))


def _findings_word(feed: RunFeed) -> str:
    """``checking``, ``none`` or ``3 (2 errors)``: the count so far."""
    if feed.findings_state in ("not checked", "checking"):
        return feed.findings_state
    if not feed.findings:
        return "none"
    errors = sum(1 for x in feed.findings if x.severity == Severity.ERROR)
    return f"{len(feed.findings)} ({errors} errors)"


def _best(points: Sequence[tuple[float, float]], key: str) -> float | None:
    ys = [y for _, y in points if math.isfinite(y)]
    if not ys:
        return None
    return min(ys) if lower_is_better(key) else max(ys)


class KeySearch(ModalScreen[str | None]):
    """Type to filter the logged keys; Enter charts the highlighted one."""

    DEFAULT_CSS = """
    KeySearch { align: center middle; }
    KeySearch > Vertical { width: 70; max-width: 95%; height: 18; max-height: 95%;
        border: round $accent; background: $surface; }
    KeySearch OptionList { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel"), Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False)]

    def __init__(self, keys: Sequence[str]) -> None:
        super().__init__()
        self.keys = list(keys)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Input(placeholder="part of a key, e.g. kl or reward; ↑ ↓ Enter")
            yield OptionList(*[clean(k) for k in self.keys])

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def action_move(self, by: int) -> None:
        """Move the highlight while typing."""
        options = self.query_one(OptionList)
        if options.option_count:
            at = options.highlighted if options.highlighted is not None else -by
            options.highlighted = max(0, min(options.option_count - 1, at + by))

    def on_input_changed(self, event: Input.Changed) -> None:
        words = event.value.lower().split()
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([clean(k) for k in self.keys
                             if all(w in k.lower() for w in words)])
        if options.option_count:
            options.highlighted = 0

    def on_input_submitted(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None and options.option_count:
            self.dismiss(self._key(options.highlighted))
        else:
            self.dismiss(None)

    def _key(self, index: int) -> str:
        shown = str(self.query_one(OptionList).get_option_at_index(index).prompt)
        return next((k for k in self.keys if clean(k) == shown), shown)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self._key(event.option_index))

    def action_cancel(self) -> None:
        """Close without a key."""
        self.dismiss(None)


class TextScreen(Base):
    """A titled text, scrolled."""

    def __init__(self, title: str, text: Text | str) -> None:
        super().__init__()
        self.title_text = title
        self.body = text

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="head")
        with VerticalScroll():
            yield Static(self.body, id="body")
        yield Footer()


class HelpScreen(ModalScreen[None]):
    """The keys."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark", "close", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP, id="help")

    def action_close(self) -> None:
        """Close the help."""
        self.dismiss(None)


# -- drill-down -------------------------------------------------------------------------------


def _split_rows(feed: RunFeed) -> list[tuple[int, str | None]]:
    """``(iteration, label)`` of every iteration's rollout summaries, newest first."""
    with feed.lock:
        its = list(feed.iterations)
    rows = []
    for info in reversed(its):
        labels = sorted({layout.parse_path(p).label for p in info.files
                         if layout.parse_path(p).kind == "rollout_summaries"},
                        key=lambda x: (x is not None, x or ""))
        rows += [(info.index, label) for label in labels]
    return rows


class IterationsScreen(Base):
    """Every iteration with rollout summaries (training and evaluators), newest first."""

    def __init__(self, feed: RunFeed) -> None:
        super().__init__()
        self.feed = feed
        self.shown: list[tuple[int, str | None]] = []

    def compose(self) -> ComposeResult:
        yield Static(f"{clean(self.feed.name)} · iterations · Enter opens the groups", id="head")
        yield _table("iteration", "split")
        yield Footer()

    def on_mount(self) -> None:
        self.ready = True
        self.tick()

    def tick(self) -> None:
        rows = _split_rows(self.feed)
        if rows == self.shown:
            return
        self.shown = rows
        table = self.query_one(DataTable)
        at = table.cursor_row
        table.clear()
        for i, label in rows:
            table.add_row(str(i), "train" if label is None else clean(label),
                          key=f"{i}:{label or ''}")
        table.move_cursor(row=max(0, at))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        i, label = self.shown[event.cursor_row]
        self.app.push_screen(GroupsScreen(self.feed, i, label))


def _run(feed: RunFeed) -> Run:
    from rlio.reader.run import open_run

    return open_run(feed.location)


class GroupsScreen(Base):
    """The groups of one iteration: mean, spread, range, equal rewards."""

    def __init__(self, feed: RunFeed, iteration: int, label: str | None) -> None:
        super().__init__()
        self.feed = feed
        self.iteration = iteration
        self.label = label
        self.groups: list[GroupRow] = []

    def compose(self) -> ComposeResult:
        yield Static(f"iteration {self.iteration} · reading…", id="head")
        yield _table("group", "n", "mean", "spread", "min", "max", "equal")
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        """Read the iteration's rollout summaries (a worker thread)."""
        run = _run(self.feed)
        rows = iteration_rows(run.rollouts(self.iteration, evaluator=self.label),
                              self.iteration, self.label)
        self.app.call_from_thread(self.show, rows)

    def show(self, rows: IterationRows) -> None:
        """Fill the table."""
        self.groups = rows.groups
        table = self.query_one(DataTable)
        for g in rows.groups:
            st = g.stats
            table.add_row(str(st.group), str(st.size), fmt(st.mean), fmt(st.spread),
                          fmt(g.low), fmt(g.high), "yes" if st.all_equal else "")
        share = rows.stats.equal_share
        split = "train" if self.label is None else clean(self.label)
        self.query_one("#head", Static).update(
            f"{clean(self.feed.name)} · iteration {self.iteration} {split} · {len(rows.groups)} "
            f"groups · equal-reward groups {'—' if share is None else f'{share:.0%}'}")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        group = self.groups[event.cursor_row]
        self.app.push_screen(TrajectoriesScreen(self.feed, self.iteration, self.label, group))


class TrajectoriesScreen(Base):
    """The trajectories of one group: outcome, advantage, final reward, steps, tokens."""

    def __init__(self, feed: RunFeed, iteration: int, label: str | None,
                 group: GroupRow) -> None:
        super().__init__()
        self.feed = feed
        self.iteration = iteration
        self.label = label
        self.group = group

    def compose(self) -> ComposeResult:
        g = self.group
        yield Static(f"{clean(self.feed.name)} · iteration {self.iteration} · group "
                     f"{g.stats.group} · mean {fmt(g.stats.mean)} · Enter: transcript",
                     id="head")
        table = _table("traj", "reward", "advantage", "final", "steps", "ac tok", "done")
        for row in g.trajectories:
            t = row.trajectory
            table.add_row(str(t.traj), fmt(t.reward), fmt(row.advantage), fmt(t.final_reward),
                          str(t.steps), str(t.ac_tokens), "yes" if t.done else "no")
        yield table
        yield Footer()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        t = self.group.trajectories[event.cursor_row]
        self.app.push_screen(TranscriptScreen(self.feed, self.iteration, self.label, t))


def _transcripts(run: Run, iteration: int, label: str | None
                 ) -> dict[tuple[int, int], list[Any]]:
    from rlio.logtree.iteration_page import find_transcripts

    doc = run.logtree(iteration, evaluator=label)
    root = doc.get("root") if isinstance(doc, dict) else None
    if root is None:
        return {}
    return {k: list(v) for k, v in find_transcripts(root).messages.items()}


class TranscriptScreen(Base):
    """One trajectory's conversation from the iteration's logtree."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "thinking", "thinking"), Binding("p", "prompt", "same prompt")]

    def __init__(self, feed: RunFeed, iteration: int, label: str | None,
                 traj: TrajectoryRow) -> None:
        super().__init__()
        self.feed = feed
        self.iteration = iteration
        self.label = label
        self.traj = traj
        self.messages: list[Any] | None = None
        self.others: list[Any] = []
        self.loaded = False
        self.thinking = False

    def compose(self) -> ComposeResult:
        t = self.traj.trajectory
        yield Static(f"iteration {self.iteration} · group {t.group} · trajectory "
                     f"{t.traj} · reward {fmt(t.reward)} · advantage {fmt(self.traj.advantage)}",
                     id="head")
        with VerticalScroll():
            yield Static("reading the logtree…", id="body")
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        """Read the logtree (a worker thread); without this trajectory's transcript, the
        iteration's conversations as logged."""
        run = _run(self.feed)
        found = _transcripts(run, self.iteration, self.label)
        messages = found.get((self.traj.trajectory.group, self.traj.trajectory.traj))
        others = [] if messages is not None else list(
            itertools.islice(run.conversations(self.iteration, evaluator=self.label),
                             MAX_OTHER_CONVERSATIONS))
        self.app.call_from_thread(self.show, messages, others)

    def show(self, messages: list[Any] | None, others: Sequence[Any] = ()) -> None:
        """Show the conversation, or say it was not logged (and what the logtree holds)."""
        self.messages = messages
        self.others = list(others)
        self.loaded = True
        body = self.query_one("#body", Static)
        if messages is not None:
            body.update(transcript_text(messages, thinking=self.thinking))
            return
        text = Text("this trajectory's transcript is not linked in the iteration's logtree (the "
                    "cookbook logs the first few groups only)", style="dim")
        if self.others:
            text.append(f"; the logtree's conversations (up to {MAX_OTHER_CONVERSATIONS}):\n",
                        style="dim")
            for conv in self.others:
                text.append_text(transcript_text(conv.messages, thinking=self.thinking,
                                                 title=" > ".join(conv.path) or "(top)"))
        body.update(text)

    def action_thinking(self) -> None:
        """Unfold or fold the thinking parts."""
        self.thinking = not self.thinking
        if self.loaded:
            self.show(self.messages, self.others)

    def action_prompt(self) -> None:
        """The same prompt in every iteration that logged it."""
        if self.messages:
            self.app.push_screen(PromptScreen(self.feed, self.label, self.messages))


class PromptScreen(Base):
    """Every logged trajectory of one prompt, across iterations, with its reward."""

    def __init__(self, feed: RunFeed, label: str | None, messages: list[Any]) -> None:
        super().__init__()
        self.feed = feed
        self.label = label
        self.messages = messages
        self.rows: list[tuple[int, TrajectoryRow]] = []

    def compose(self) -> ComposeResult:
        yield Static("the same prompt across iterations · reading…", id="head")
        yield _table("iteration", "group", "traj", "reward", "advantage")
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        """Look the prompt up in every iteration's logtree (a worker thread)."""
        from rlio.report.prompts import prompt_key

        key = prompt_key(self.messages)
        run = _run(self.feed)
        for i, label in reversed(_split_rows(self.feed)):
            if label != self.label or self.app is None:
                continue
            found = _transcripts(run, i, label)
            hits = [gt for gt, msgs in found.items() if prompt_key(msgs) == key]
            if not hits:
                continue
            rows = {(t.trajectory.group, t.trajectory.traj): t
                    for g in iteration_rows(run.rollouts(i, evaluator=label), i, label).groups
                    for t in g.trajectories}
            for g, t in sorted(hits):
                row = rows.get((g, t)) or TrajectoryRow(
                    trajectory({"group_idx": g, "traj_idx": t}, layout.split_name(label), i), None)
                self.app.call_from_thread(self.add, i, row)
        self.app.call_from_thread(self.done)

    def add(self, iteration: int, row: TrajectoryRow) -> None:
        """One more trajectory of the prompt."""
        self.rows.append((iteration, row))
        t = row.trajectory
        self.query_one(DataTable).add_row(str(iteration), str(t.group), str(t.traj),
                                          fmt(t.reward), fmt(row.advantage))

    def done(self) -> None:
        """Say how many were found."""
        self.query_one("#head", Static).update(
            f"the same prompt across iterations · {len(self.rows)} trajectories · "
            "Enter: transcript")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        i, row = self.rows[event.cursor_row]
        self.app.push_screen(TranscriptScreen(self.feed, i, self.label, row))
