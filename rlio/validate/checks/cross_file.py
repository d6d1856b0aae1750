"""Cross-file checks (docs/format.md §1, §7, §9): small functions over a read-only view of a run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from rlio import layout
from rlio.findings import Finding, finding
from rlio.layout import twin_path
from rlio.validate.checks.logtree import twin_write_ids
from rlio.validate.checks.view import RunView

CrossFileCheck = Callable[[RunView], Iterator[Finding]]


def started(view: RunView) -> bool:
    """Whether the run holds any record: a metrics line, a checkpoint or a per-iteration file
    (a ledger that is there but was not read, say a directory or a link, counts as one)."""
    ledgers = ((layout.METRICS, view.metrics), (layout.CHECKPOINTS, view.checkpoints))
    return any(rp.iteration is not None for rp in view.files.values()) or any(
        name in view.present and (facts is None or facts.records > 0) for name, facts in ledgers)


def required_files(view: RunView) -> Iterator[Finding]:
    """metrics.jsonl must be a regular file of the run (RL109); so should config.json, but a
    run without one still reads and resumes, and the writer cannot make a loop write its
    config before its first record, so a missing config.json is a warning (RL118).

    A run that holds no record yet (a writer stopped right after opening it, before its config or
    any metrics line) is not broken: the missing files are info (RL116).
    """
    for name in (layout.METRICS, layout.CONFIG):
        kind = view.present.get(name)
        if kind is None:
            if started(view) and name == layout.CONFIG:
                yield finding("RL118", f"{name} is missing: the run's config was never written "
                                       "(write_config)", file=name)
            elif started(view):
                yield finding("RL109", f"required file {name} is missing", file=name)
            else:
                yield finding("RL116", f"{name} is not written yet: the run holds no record "
                                       "(no metrics line, checkpoint or per-iteration file)",
                              file=name)
        elif kind == "symlink":
            yield finding("RL109", f"{name} is a symbolic link (never followed): the run has no "
                                   f"{name} of its own", file=name)


def mixed_layout(view: RunView) -> Iterator[Finding]:
    """Both layouts in one run (RL304)."""
    if view.layout == "mixed":
        flat = sum(1 for rp in view.files.values() if rp.layout == "flat")
        nested = sum(1 for rp in view.files.values() if rp.layout == "nested")
        yield finding("RL304", f"the run mixes the flat layout ({flat} files) and the nested "
                               f"layout ({nested} files)")


def html_twins(view: RunView) -> Iterator[Finding]:
    """An HTML report needs its JSON twin (RL411), once the run has logtree JSON at all.

    A run with HTML reports and no logtree JSON anywhere gets one RL413 for the run, not one
    warning per page: in the flat layout, a release that wrote HTML only (cookbook 0.1.0, its
    train and eval-only runs alike); in the nested layout, a release that writes the JSON after
    the page (cookbook 0.6.1) stopped before its first one (a crash or a kill).
    """
    pages = [(rel, rp) for rel, rp in view.files.items() if rp.kind == "html"]
    if pages and not any(rp.kind == "logtree" for rp in view.files.values()):
        if any(rp.layout == "nested" for _, rp in pages):
            why = ("the nested layout's logtree JSON is written after its page (cookbook 0.6.1), "
                   "so the run stopped (crashed or was killed) before writing its first one")
        else:
            why = "written by a release that wrote HTML only (cookbook 0.1.0)"
        yield finding("RL413", f"the run has {len(pages)} HTML report(s) and no logtree JSON at "
                               f"all: {why}")
        return
    for rel, rp in pages:
        twin = twin_path(rp, "logtree")
        if twin not in view.files:
            yield finding("RL411", f"HTML report without its JSON twin {twin}",
                          file=view.display[rel])


def checkpoint_beyond_metrics(view: RunView) -> Iterator[Finding]:
    """A resumable checkpoint's batch is at most the last metrics step + 1 (RL409)."""
    last = view.metrics.last_train_step if view.metrics is not None else None
    if view.checkpoints is None or last is None:
        return
    for line, batch in view.checkpoints.resumable:
        if batch > last + 1:
            yield finding("RL409", f"batch {batch} is beyond the last metrics step {last} + 1",
                          file=layout.CHECKPOINTS, line=line, pointer="/batch")


#: Every cross-file check, run in this order after the per-file pass.
CROSS_FILE_CHECKS: Final[tuple[CrossFileCheck, ...]] = (
    required_files, mixed_layout, html_twins, twin_write_ids, checkpoint_beyond_metrics)

