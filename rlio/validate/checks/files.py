"""The semantic checks of SPEC §3, §5-§7 and §9, beyond what one schema can say.

Two kinds, both small and listed here:
- record checks run inside the streaming pass, once per record (``MetricsChecks``,
  ``CheckpointChecks``; rollout summaries in ``rlio._checks_rollout``) or once per document
  (``logtree_checks``);
- cross-file checks run once over a read-only ``RunView`` of facts gathered by the pass
  (``CROSS_FILE_CHECKS``).

Checks only report findings; they never raise for bad data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from . import layout
from ._checks_stream import Sink, short
from .findings import Finding, finding
from .layout import _ARTIFACT_SUFFIX, RunPath
from .schema import load_schema

#: Metrics keys that mark a training line (others are eval or sampler lines, SPEC §3).
TRAINING_KEYS: Final = ("progress/batch", "training_client/step", "progress/done_frac",
                        "progress", "optim/lr")
_OFFSET = re.compile(r"(?:[Zz]|[+-][0-9]{2}(?::?[0-9]{2})?)$")
_TIME = re.compile(r"[T ][0-9]{2}:[0-9]{2}")


def _key_order(schema: str, key: str) -> tuple[str, ...]:
    """A documented key order, read from the schema that owns it."""
    return tuple(load_schema(schema)[key])


# --------------------------------------------------------------------------------------------
# checkpoints.jsonl (SPEC §5): per record.
# --------------------------------------------------------------------------------------------


@dataclass
class CheckpointFacts:
    """What the checkpoint ledger says: resumable records and the steps a resume can restart at."""

    resumable: list[tuple[int, int]] = field(default_factory=list)  # (line, batch)
    restart_steps: set[int] = field(default_factory=set)
    records: int = 0


class CheckpointChecks:
    """Per-record checks of ``checkpoints.jsonl`` (RL501, key order); gathers the facts."""

    _MAX_KEPT: Final = 100_000

    def __init__(self, sink: Sink, *, required_key: str = "state_path") -> None:
        self.sink = sink
        self.required_key = required_key
        self.facts = CheckpointFacts()
        self._order: tuple[str, ...] | None = _key_order("checkpoint-line", "properties")

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        if not isinstance(rec, dict):
            return
        self.facts.records += 1
        if self._order is not None:
            documented = [k for k in rec if k in self._order]
            expected = [k for k in self._order if k in rec]
            # the cookbook's SL loop writes epoch before batch: tolerated
            if documented != expected and _swap(documented, "epoch", "batch") != expected:
                self.sink.add("RL202", f"keys {', '.join(documented)} are out of the documented "
                                       f"order {', '.join(expected)}", line=line)
                self._order = None
        if rec.get(self.required_key) is None:
            return
        batch = rec.get("batch")
        if "batch" not in rec:
            self.sink.add("RL501", f"resumable checkpoint {short(rec.get('name'))} has "
                                   f"{self.required_key} but no batch: the cookbook's resume "
                                   "crashes on it", line=line)
        elif type(batch) is int and len(self.facts.resumable) < self._MAX_KEPT:
            self.facts.resumable.append((line, batch))
            self.facts.restart_steps.add(batch)
        name = rec.get("name")
        if isinstance(name, str) and name.isdigit() and len(name) < 19:
            self.facts.restart_steps.add(int(name))
        step = rec.get("step")
        if type(step) is int:
            self.facts.restart_steps.add(step)


def _swap(keys: list[str], a: str, b: str) -> list[str]:
    return [b if k == a else a if k == b else k for k in keys]


# --------------------------------------------------------------------------------------------
# metrics.jsonl (SPEC §3, §9): step order, per line.
# --------------------------------------------------------------------------------------------


@dataclass
class MetricsFacts:
    """What metrics.jsonl says: the last training step and how many records it holds."""

    last_train_step: int | None = None
    records: int = 0


class MetricsChecks:
    """Step order of ``metrics.jsonl``: normal +1 steps, explained drops (RL407), the rest RL408.

    Lines with a progress key (``TRAINING_KEYS``) are training lines. Once the file has shown one,
    lines without those keys are eval (or sampler) lines: at or before the last training step + 1
    they are info, as async eval lines are. A file without any progress key (loops that log other
    keys) treats every line as a training line: lines are held back (a bounded number) until the
    file shows which kind it is.
    """

    _MAX_HELD: Final = 1000

    def __init__(self, sink: Sink, *, restart_steps: set[int], iterations: set[int],
                 any_iteration_files: bool) -> None:
        self.sink = sink
        self.restart = restart_steps
        self.iterations = iterations
        self.any_files = any_iteration_files
        self.facts = MetricsFacts()
        self._progress_mode: bool | None = None
        self._held: list[tuple[int, int]] = []  # (step, line) of lines before the mode is known
        self._last: int | None = None  # last training step (after drops: where the run went on)
        self._order_reported = False
        self._no_files_reported = False

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        if not isinstance(rec, dict):
            return
        self.facts.records += 1
        if not self._order_reported and "step" in rec and next(iter(rec)) != "step":
            self.sink.add("RL202", "step is not the first key of the metrics line", line=line)
            self._order_reported = True
        s = rec.get("step")
        if type(s) is not int or s < 0:
            return
        if any(k in rec for k in TRAINING_KEYS):
            if self._progress_mode is None:
                self._settle(True)
            self._train_line(s, line)
        elif self._progress_mode is None:
            self._held.append((s, line))
            if len(self._held) >= self._MAX_HELD:
                self._settle(False)
        elif self._progress_mode:
            self._eval_line(s, line)
        else:
            self._train_line(s, line)

    def _settle(self, progress_mode: bool) -> None:
        self._progress_mode = progress_mode
        held, self._held = self._held, []
        for s, line in held:
            if progress_mode:
                self._eval_line(s, line)
            else:
                self._train_line(s, line)

    def finish(self) -> MetricsFacts:
        """Judge lines still held back (a file without progress keys) and return the facts."""
        if self._progress_mode is None:
            self._settle(False)
        return self.facts

    def _train_line(self, s: int, line: int) -> None:
        last = self._last
        if last is not None and s != last + 1:
            self._jump(s, last, line)
        self._last = s
        if self.facts.last_train_step is None or s > self.facts.last_train_step:
            self.facts.last_train_step = s
        self._files(s, line)

    def _eval_line(self, s: int, line: int) -> None:
        last = self._last
        if last is None or s <= last + 1:
            where = "before any training line" if last is None else (
                "one past the last training step" if s == last + 1 else
                f"repeating step {s} (last training step {last})")
            self.sink.add("RL407", f"eval-only line at step {s} {where}: an async eval line",
                          line=line, pointer="/step")
        else:
            self.sink.add("RL408", f"eval-only line at step {s} jumps past the last training step "
                                   f"{last} + 1", line=line, pointer="/step")

    def _jump(self, s: int, last: int, line: int) -> None:
        what = ("repeats" if s == last else "drops back from" if s < last else "jumps from")
        if s in self.restart:
            self.sink.add("RL407", f"step {s} {what} step {last}: a resume from the checkpoint at "
                                   f"batch {s} logs these iterations again", line=line,
                          pointer="/step")
        else:
            self.sink.add("RL408", f"step {s} {what} step {last} (expected {last + 1}); no "
                                   f"checkpoint restarts at {s}", line=line, pointer="/step")

    def _files(self, s: int, line: int) -> None:
        if s in self.iterations:
            return
        if self.any_files:
            self.sink.add("RL412", f"iteration {s} is in metrics but has no per-iteration files "
                                   "(logging can be off)", line=line, pointer="/step")
        elif not self._no_files_reported:
            self.sink.add("RL412", "the run has no per-iteration files at all (logtree and rollout "
                                   "logging off?)", line=line, pointer="/step")
            self._no_files_reported = True


# --------------------------------------------------------------------------------------------
# Logtree documents (SPEC §7).
# --------------------------------------------------------------------------------------------


def known_data_types() -> frozenset[str]:
    """The logtree ``data`` types the schema specifies (``if type == X then ...`` clauses)."""
    data = load_schema("logtree").get("$defs", {}).get("data", {})
    clauses = [data, *data.get("allOf", [])]
    found = set()
    for c in clauses:
        const = c.get("if", {}).get("properties", {}).get("type", {}).get("const")
        if isinstance(const, str):
            found.add(const)
    return frozenset(found)


def logtree_checks(doc: Any, sink: Sink, *, twin: str | None, nested: bool) -> None:
    """RL204 (naive started_at), RL410 (path does not name the HTML twin), RL203 (unknown types)."""
    if not isinstance(doc, dict):
        return
    started = doc.get("started_at")
    if isinstance(started, str) and _TIME.search(started) and not _OFFSET.search(started):
        sink.add("RL204", f"started_at {short(started)} has no UTC offset (naive local time)",
                 pointer="/started_at")
    path = doc.get("path")
    if twin is not None and isinstance(path, str):
        parts = [p for p in re.split(r"[\\/]", path) if p]
        want = twin.split("/") if nested else twin.split("/")[-1:]
        n = max(1, min(len(want), len(parts)))
        if parts[-n:] != want[-n:]:
            sink.add("RL410", f"path {short(path)} does not name the HTML twin {twin!r}",
                     pointer="/path")
    known = known_data_types()
    reported: set[str] = set()
    stack: list[tuple[Any, str]] = [(doc.get("root"), "/root")]
    while stack:
        node, ptr = stack.pop()
        if not isinstance(node, dict):
            continue
        data = node.get("data")
        if isinstance(data, dict):
            kind = data.get("type")
            if isinstance(kind, str) and kind not in known and kind not in reported:
                reported.add(kind)
                sink.add("RL203", f"data type {short(kind)} is not one the schema specifies "
                                  "(consumers ignore it)", pointer=f"{ptr}/data")
        children = node.get("children")
        if isinstance(children, list):
            stack.extend((c, f"{ptr}/children/{i}") for i, c in enumerate(children)
                         if isinstance(c, dict))


# --------------------------------------------------------------------------------------------
# Cross-file checks (SPEC §1, §7, §9) over a read-only view of the run.
# --------------------------------------------------------------------------------------------


@dataclass
class RunView:
    """Facts the per-file pass gathered, for the cross-file checks.

    Attributes:
        layout: ``flat``, ``nested``, ``mixed`` or None.
        files: regular files by run-relative path, with their parsed names.
        present: every path that exists in some form (file, dir, symlink, other).
        display: path -> the name findings show (valid UTF-8).
        metrics: facts from metrics.jsonl, if it was read.
        checkpoints: facts from checkpoints.jsonl, if it was read.
    """

    layout: str | None
    files: dict[str, RunPath]
    present: dict[str, str]
    display: dict[str, str]
    metrics: MetricsFacts | None = None
    checkpoints: CheckpointFacts | None = None


CrossFileCheck = Callable[[RunView], Iterator[Finding]]


def started(view: RunView) -> bool:
    """Whether the run holds any record: a metrics line, a checkpoint or a per-iteration file
    (a ledger that is there but was not read, say a directory or a link, counts as one)."""
    if any(rp.iteration is not None for rp in view.files.values()):
        return True
    for name, facts in ((layout.METRICS, view.metrics), (layout.CHECKPOINTS, view.checkpoints)):
        if name in view.present and (facts is None or facts.records > 0):
            return True
    return False


def required_files(view: RunView) -> Iterator[Finding]:
    """metrics.jsonl and config.json must be regular files of the run (RL109).

    A run that holds no record yet (a writer stopped right after opening it, before its config or
    any metrics line) is not broken: the missing files are info (RL116).
    """
    for name in (layout.METRICS, layout.CONFIG):
        kind = view.present.get(name)
        if kind is None:
            if started(view):
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
    """An HTML report needs its JSON twin (RL411)."""
    for rel, rp in view.files.items():
        if rp.kind != "html":
            continue
        twin = twin_path(rp, "logtree")
        if twin not in view.files:
            yield finding("RL411", f"HTML report without its JSON twin {twin}",
                          file=view.display[rel])


def checkpoint_beyond_metrics(view: RunView) -> Iterator[Finding]:
    """A resumable checkpoint's batch is at most the last metrics step + 1 (RL409)."""
    if view.checkpoints is None or view.metrics is None:
        return
    last = view.metrics.last_train_step
    if last is None:
        return
    for line, batch in view.checkpoints.resumable:
        if batch > last + 1:
            yield finding("RL409", f"batch {batch} is beyond the last metrics step {last} + 1",
                          file=layout.CHECKPOINTS, line=line, pointer="/batch")


#: Every cross-file check, run in this order after the per-file pass.
CROSS_FILE_CHECKS: Final[tuple[CrossFileCheck, ...]] = (
    required_files,
    mixed_layout,
    html_twins,
    checkpoint_beyond_metrics,
)


def twin_path(rp: RunPath, artifact: layout.Artifact) -> str:
    """The run-relative path of ``rp``'s twin artifact (same layout, iteration and label)."""
    if rp.layout is not None and rp.iteration is not None and rp.problem is None:
        try:
            return layout.iteration_path(rp.layout, rp.iteration, artifact, label=rp.label)
        except ValueError:
            pass
    for suffix in _ARTIFACT_SUFFIX.values():
        if rp.path.endswith(suffix):
            return rp.path[: -len(suffix)] + _ARTIFACT_SUFFIX[artifact]
    return rp.path
