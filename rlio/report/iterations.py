"""The report's iteration pages: which exist, where rlio's page of each goes, and writing them.

Where a page goes (docs/format.md §11): when the report is the run's own ``report.html``, a page
rlio wrote (its head names rlio as generator) and that has its JSON twin is rewritten in place,
with the full navigation and the trajectory table. Every other iteration (a page another producer
wrote, such as the cookbook's, or one with only a JSON twin or only rollout summaries) gets rlio's
page at ``<report stem>/<run-relative page path>`` beside the report (``report/`` for
``report.html``), linking to the producer's page. Every link between these pages is relative, so
the folder can be moved or served as it is.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from rlio import layout
from rlio.logtree.iteration_page import Nav, Trajectory, find_transcripts, render_iteration_page
from rlio.report.reading import read_logtree, read_trajectories, written_by_rlio
from rlio.report.trajectories import split_order
from rlio.storage.base import Storage


@dataclass
class Sources:
    """The run files of one (split, iteration)."""

    html: str | None = None
    logtree: str | None = None
    rollouts: str | None = None


_SOURCES = {"html": "html", "logtree": "logtree", "rollout_summaries": "rollouts"}


@dataclass
class RunIndex:
    """Per-iteration files by split, timing pages, and how many files the run holds."""

    splits: dict[str, dict[int, Sources]] = field(default_factory=dict)
    timing: dict[int, str] = field(default_factory=dict)
    layout: str | None = None
    files: int = 0


def index_run(storage: Storage) -> RunIndex:
    """One walk of the run: every per-iteration file, classified by the naming contract."""
    idx = RunIndex()
    paths = []
    for entry in storage.walk():
        if entry.kind != "file":
            continue
        idx.files += 1
        rp = layout.parse_path(entry.path)
        if rp.iteration is None:
            continue
        paths.append(entry.path)
        if rp.kind == "timing_gantt":
            idx.timing[rp.iteration] = entry.path
            continue
        src = idx.splits.setdefault(rp.split, {}).setdefault(rp.iteration, Sources())
        setattr(src, _SOURCES[rp.kind], entry.path)  # the artifacts: html, logtree, rollouts
    idx.layout = layout.detect_layout(paths)
    return idx


@dataclass(frozen=True)
class Placement:
    """Where rlio's page of one iteration is, relative to the report's folder."""

    split: str
    iteration: int
    location: str
    in_place: bool
    sources: Sources


def _canonical(split: str, iteration: int, src: Sources, run_layout: str | None) -> str:
    if src.html is not None:
        return src.html
    base = src.logtree or src.rollouts
    if base is not None:
        return layout.twin_path(layout.parse_path(base), "html")
    lay: layout.Layout = "nested" if run_layout == "nested" else "flat"
    label = None if split == "train" else split.removeprefix("eval/")
    return layout.iteration_path(lay, iteration, "html", label=label)


def place_pages(storage: Storage, idx: RunIndex, folder: str,
                at_run_root: bool) -> dict[tuple[str, int], Placement]:
    """Where each iteration's page goes (see the module docstring); ``folder``: the report's."""
    out: dict[tuple[str, int], Placement] = {}
    for split, its in idx.splits.items():
        for it, src in its.items():
            in_place = (at_run_root and src.html is not None and src.logtree is not None
                        and written_by_rlio(storage, src.html))
            canon = _canonical(split, it, src, idx.layout)
            loc = canon if in_place else f"{folder}/{canon}"
            out[(split, it)] = Placement(split, it, loc, in_place, src)
    return out


_NO_LOGTREE = ("This run kept no logtree JSON for this iteration: its transcripts are on the "
               "producer's page.")


def _rel(target: str, page: str) -> str:
    return quote(posixpath.relpath(target, posixpath.dirname(page) or "."))


def _nav(p: Placement, prev: Placement | None, nxt: Placement | None, here: list[Placement],
         report_name: str, run_href: Callable[[str], str], note: str) -> Nav:
    """Links from ``p``: report, previous/next page of the same split, the pages of this
    iteration (``here``), and the producer's own page when rlio's is a copy beside the report."""
    loc = p.location
    original = None
    if not p.in_place and p.sources.html is not None:
        href = run_href(p.sources.html)
        original = href if "://" in href else quote(posixpath.relpath(
            posixpath.normpath(unquote(href)), posixpath.dirname(loc) or "."))
    return Nav(
        report=_rel(report_name, loc),
        prev=None if prev is None else (f"iteration {prev.iteration}", _rel(prev.location, loc)),
        next=None if nxt is None else (f"iteration {nxt.iteration}", _rel(nxt.location, loc)),
        splits=[(o.split, None if o is p else _rel(o.location, loc)) for o in here],
        original=original, note=note,
    )


def iterate(storage: Storage, places: dict[tuple[str, int], Placement], report_name: str,
            run_href: Callable[[str], str], write: Callable[[str, bytes], None] | None,
            ) -> Iterator[tuple[Placement, list[Trajectory] | None, dict[tuple[int, int], Any]]]:
    """Read every iteration once: its placement, rollout rows and transcripts by (group, traj);
    with ``write``, render and write its page as it goes."""
    order = [places[k] for k in sorted(places, key=lambda k: (split_order(k[0]), k[1]))]
    by_iteration: dict[int, list[Placement]] = {}
    for p in order:
        by_iteration.setdefault(p.iteration, []).append(p)
    for j, p in enumerate(order):
        trajs = read_trajectories(storage, p.sources.rollouts, p.split, p.iteration)
        doc = read_logtree(storage, p.sources.logtree)
        rows = [(t.group, t.traj) for t in trajs or ()]
        found = find_transcripts(doc.get("root"), rows) if doc is not None else None
        if write is not None:
            title = doc.get("title") if doc is not None else None
            if not isinstance(title, str):
                title = f"{p.split} iteration {p.iteration}"
            prev = order[j - 1] if j > 0 and order[j - 1].split == p.split else None
            nxt = order[j + 1] if j + 1 < len(order) and order[j + 1].split == p.split else None
            note = _NO_LOGTREE if doc is None and p.sources.html is not None else ""
            nav = _nav(p, prev, nxt, by_iteration[p.iteration], report_name, run_href, note)
            wid = doc.get(layout.WRITE_ID_KEY) if doc is not None and p.in_place else None
            # a page that replaces its twin's keeps the twin's write id
            page = render_iteration_page(doc, nav, trajs or [], title=title, found=found,
                                         write_id=wid if isinstance(wid, str) else None)
            write(p.location, page.encode())
        yield p, trajs, found.messages if found is not None else {}
