"""An iteration's page: navigation, the trajectory table, then the logtree with groups collapsed.

The page is still one self-contained document (no script, no network, the strict CSP of
``rlio.logtree.html``). The table comes from the rollout summaries (docs/format.md §6), one row
a trajectory; a failing trajectory (``rlio.outcome``: total reward <= 0, NaN or null, or never
done) carries the class ``fail`` and a visible marker. Rows link to the trajectory's transcript
where the tree logged one: the k-th top-level section whose heading starts with "Group" is group
k (the cookbook logs the first ``num_groups_to_log`` groups in order), and inside it a section
headed ``Trajectory <i> ...`` is trajectory i (else the i-th conversation is). The first
conversation of a trajectory gets the anchor ``traj-<group>-<traj>``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlio import layout
from rlio.logtree.html import GroupSummary, Mark, page_context, tree_events
from rlio.outcome import (
    FAILING_RULE,
    GroupStats,
    IterationStats,
    Trajectory,
    group_stats,
    iteration_stats,
    trajectory,
)
from rlio.templating import fmt, render

__all__ = ["Nav", "Trajectory", "Transcripts", "find_transcripts", "fmt", "render_iteration_page",
           "trajectory", "written_nav"]

_TRAJ_HEADING = re.compile(r"\s*(?:trajectory|completion)\s+(\d+)\b", re.IGNORECASE)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_TAGS = re.compile(r"<[^>]*>")


# --- the tree: groups, transcripts, prompts --------------------------------------------------


@dataclass
class Transcripts:
    """What the tree logged per trajectory: {(group, traj): messages}, and the group sections."""

    messages: dict[tuple[int, int], list[Mapping[str, Any]]] = field(default_factory=dict)
    marks: dict[int, Mark] = field(default_factory=dict)
    groups: list[Mapping[str, Any]] = field(default_factory=list)


def _heading_text(node: Mapping[str, Any]) -> str:
    kids = node.get("children")
    if not isinstance(kids, list) or not kids or not isinstance(kids[0], Mapping):
        return ""
    head = kids[0]
    if head.get("tag") not in _HEADINGS:
        return ""
    parts = head.get("children")
    text = "".join(p for p in parts if isinstance(p, str)) if isinstance(parts, list) else ""
    return _TAGS.sub("", text).strip()


def _is_mapping(node: Any) -> bool:
    """``isinstance(node, Mapping)``, with the usual dict and str nodes told without the ABC."""
    t = type(node)
    return t is dict or (t is not str and isinstance(node, Mapping))


def _is_section(node: Any) -> bool:
    return _is_mapping(node) and node.get("tag") in ("section", "div", "details")


def _conversations(section: Any) -> Iterator[tuple[Any, int | None]]:
    """Each conversation node under ``section`` in document order, with the trajectory index a
    ``Trajectory <i>`` (or ``Completion <i>``) heading above it names (else None)."""
    stack: list[tuple[Any, int | None]] = [(section, None)]
    while stack:
        node, traj = stack.pop()
        if not _is_mapping(node):
            continue
        data = node.get("data")
        if isinstance(data, Mapping) and data.get("type") == "conversation":
            yield node, traj
            continue
        if node is not section and _is_section(node):
            m = _TRAJ_HEADING.match(_heading_text(node))
            if m:
                traj = int(m.group(1))
        children = node.get("children")
        if isinstance(children, list):
            stack.extend((c, traj) for c in reversed(children))


def _take(found: Transcripts, key: tuple[int, int], node: Mapping[str, Any]) -> None:
    """File ``node``'s messages under ``key``; the first conversation of a key gets its anchor."""
    if key not in found.messages:
        found.marks[id(node)] = Mark(id=f"traj-{key[0]}-{key[1]}")
        found.messages[key] = []
    msgs = node.get("data", {}).get("messages")
    if isinstance(msgs, list):
        found.messages[key].extend(m for m in msgs if isinstance(m, Mapping))


def find_transcripts(root: Any, rows: Sequence[tuple[int, int]] = ()) -> Transcripts:
    """The group sections and each trajectory's conversation messages (iterative walk).

    In a group, conversations under a ``Trajectory <i>`` or ``Completion <i>`` heading are
    trajectory i's, and conversations outside such headings (a shared prompt) lead each of
    them; without such headings the i-th conversation is trajectory i.
    A tree without any Group section (an evaluator's samples): the k-th top-level section that
    holds a conversation is the k-th trajectory of ``rows`` (the rollout summaries' (group,
    traj) in file order), else (k, 0).
    """
    found = Transcripts()
    kids = root.get("children") if isinstance(root, Mapping) else None
    tops = [n for n in (kids if isinstance(kids, list) else []) if _is_section(n)]
    found.groups = [n for n in tops if _heading_text(n).lower().startswith("group")]
    for g, section in enumerate(found.groups):
        found.marks[id(section)] = Mark(id=f"group-{g}", collapsible=True)
        convs = list(_conversations(section))
        if all(traj is None for _, traj in convs):
            for ordinal, (node, _) in enumerate(convs):
                _take(found, (g, ordinal), node)
            continue
        # headed conversations are the trajectories; the others (a group's shared prompt, as
        # the preference environment logs it) lead each trajectory's messages
        shared = [m for node, traj in convs if traj is None
                  for m in node.get("data", {}).get("messages", ()) if isinstance(m, Mapping)]
        for node, traj in convs:
            if traj is not None:
                if (g, traj) not in found.messages:
                    found.messages[(g, traj)] = list(shared)
                    found.marks[id(node)] = Mark(id=f"traj-{g}-{traj}")
                _take(found, (g, traj), node)
    if not found.groups:
        k = 0
        for section in tops:
            for node, _ in _conversations(section):
                _take(found, rows[k] if k < len(rows) else (k, 0), node)
            k += any(True for _ in _conversations(section))
    return found


# --- the header ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Nav:
    """The page's links, already relative to the page: (label, href) pairs; None where absent."""

    report: str | None
    prev: tuple[str, str] | None = None
    next: tuple[str, str] | None = None
    splits: Sequence[tuple[str, str | None]] = ()  # (split, href or None for this page)
    original: str | None = None  # the producer's own page, when this one is rlio's copy
    note: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the trajectory table: the trajectory, its advantage, whether it links."""

    t: Trajectory
    advantage: float | None
    linked: bool


@dataclass(frozen=True, slots=True)
class TableView:
    """The trajectory table and the groups (``rows`` None: written before the summaries)."""

    rows: Sequence[Row] | None
    failing: int = 0
    rule: str = FAILING_RULE
    groups: Sequence[GroupStats] = ()
    diag: IterationStats | None = None


@dataclass(frozen=True, slots=True)
class HeaderView:
    """What an iteration page shows above its tree."""

    nav: Nav
    table: TableView


def table_view(trajs: Sequence[Trajectory] | None,
               linked: Collection[tuple[int, int]]) -> TableView:
    """The trajectory table of ``trajs`` (None: the page is written before the iteration's
    rollout summaries, by a writer's logtree block; ``rlio report`` rewrites it)."""
    if trajs is None:
        return TableView(None)
    groups = group_stats(trajs)
    adv = {(g.group, t): a for g in groups for t, a in g.advantages.items()}
    rows = [Row(t, adv.get((t.group, t.traj)), (t.group, t.traj) in linked) for t in trajs]
    return TableView(rows, sum(t.failing for t in trajs), FAILING_RULE, groups,
                     iteration_stats(trajs, groups))


def table_html(trajs: Sequence[Trajectory] | None, linked: Collection[tuple[int, int]]) -> str:
    """The trajectory table alone (the page's, for a caller that shows only it)."""
    return render("iteration_table.html.j2", t=table_view(trajs, linked))


def _group_summaries(found: Transcripts, trajs: Sequence[Trajectory]) -> None:
    """Each collapsed group's summary line: its trajectory count, failures, mean and spread."""
    stats = {g.group: g for g in group_stats(trajs)}
    for g, section in enumerate(found.groups):
        st = stats.get(g)
        summary = GroupSummary(g) if st is None else GroupSummary(
            g, st.size, st.mean, st.spread, st.all_equal, st.failing)
        found.marks[id(section)] = Mark(id=f"group-{g}", collapsible=True, summary=summary)


def render_iteration_page(doc: Mapping[str, Any] | None, nav: Nav,
                          trajs: Sequence[Trajectory] | None, *, title: str,
                          found: Transcripts | None = None, write_id: str | None = None) -> str:
    """The whole page of one iteration: nav, trajectory table, then the tree (groups collapsed).

    ``doc`` is the logtree JSON (docs/format.md §7); None draws the header alone (a run that only
    kept the producer's HTML page, linked as ``nav.original``). ``found``: the tree's
    transcripts when the caller already looked them up; ``write_id``: the id its JSON twin
    carries (§7).
    """
    root = doc.get("root") if isinstance(doc, Mapping) else None
    if found is None:
        rows = [(t.group, t.traj) for t in trajs or ()]
        found = find_transcripts(root, rows) if root is not None else Transcripts()
    _group_summaries(found, trajs or ())
    view = HeaderView(nav, table_view(trajs, set(found.messages)))
    events = None if root is None else tree_events(root, marks=found.marks)
    return render("iteration.html.j2", view=view, events=events,
                  **page_context(title, write_id=write_id))


def _rel(target: str, page: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def written_nav(page: str) -> Nav | None:
    """The links a page can carry when a writer writes it (run-relative ``page``), or None for a
    path outside the naming contract.

    Only what the naming contract predicts: the report, the previous and next training
    iteration, and (from an evaluator's page) the training page of the same iteration.
    """
    rp = layout.parse_path(page)
    if rp.iteration is None or rp.layout is None or rp.problem is not None or rp.kind != "html":
        return None
    it, lay = rp.iteration, rp.layout
    train = rp.label is None
    prev = (f"iteration {it - 1}", _rel(layout.iteration_path(lay, it - 1, "html"), page)) \
        if train and it > 0 else None
    nxt = (f"iteration {it + 1}", _rel(layout.iteration_path(lay, it + 1, "html"), page)) \
        if train else None
    splits: list[tuple[str, str | None]] = [(rp.split, None)]
    if not train:
        splits.insert(0, ("train", _rel(layout.iteration_path(lay, it, "html"), page)))
    return Nav(report=_rel(layout.REPORT, page), prev=prev, next=nxt, splits=splits)
