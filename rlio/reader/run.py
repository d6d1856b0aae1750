"""``open_run`` and ``Run``: a typed, lazy, read-only view of one run directory.

Everything is read through ``rlio.storage`` (local folder or URI) with the validator's own line
readers and decoder (``rlio.reader.source``), in both layouts, so ``NaN`` tokens, torn tails,
blank or damaged lines and resume sidecars mean what docs/format.md says. A ``Run`` never writes
and never repairs: a torn line stays on disk and is skipped, ``metrics.jsonl.superseded``,
``.torn`` and ``metrics.jsonl.pre_resume_*`` are never read as metrics. Large files are streamed
(``iter_metrics``, ``rollouts``): memory does not grow with their size.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from rlio import layout
from rlio.errors import NotARunError
from rlio.layout import Artifact
from rlio.reader.conversations import Conversation, iter_conversations
from rlio.reader.records import (
    CaptureRecord,
    CheckpointRecord,
    LogtreeDocument,
    MetricsRecord,
    RolloutSummary,
    TimingSpansRecord,
)
from rlio.reader.source import LineStats, iter_records, read_document
from rlio.resume import ResumeState, read_resume_state
from rlio.storage.base import Storage
from rlio.storage.run_root import open_run_storage

if TYPE_CHECKING:
    from rlio.reader.dataset import Selection
    from rlio.reader.frames import Backend

__all__ = ["IterationInfo", "Run", "open_run", "run_status"]

_ITERATION_KINDS = frozenset({"html", "logtree", "rollout_summaries", "timing_gantt"})
_LAYOUTS: tuple[layout.Layout, ...] = ("flat", "nested")


@dataclass(frozen=True, slots=True)
class IterationInfo:
    """What one iteration left on disk.

    Attributes:
        index: the 0-based iteration (training batch index).
        evaluators: the evaluator labels with a file in this iteration, sorted.
        files: run-relative paths of the iteration's files (pages, logtrees, rollout
            summaries, timing charts; both layouts), sorted.
    """

    index: int
    evaluators: tuple[str, ...]
    files: tuple[str, ...]


def open_run(location: str | os.PathLike[str] | Storage, *, wait: float | None = None,
             poll: float = 0.5) -> Run:
    """Open the run at ``location`` (a local folder, ``gs://bucket/run``, ``memory://...``) to read.

    Args:
        wait: seconds to wait for the run to appear (a follower started before the trainer:
            ``open_run(path, wait=600).follow_metrics()``); None: do not wait.
        poll: seconds between looks while waiting.

    Raises:
        NotARunError: the location does not exist or is not a run (``rlio.layout.is_run_root``,
            docs/format.md §1: what counts as a run), after ``wait`` seconds when given.
        RunNotFoundError: it cannot be listed.
    """
    if wait is not None and not wait >= 0:
        raise ValueError(f"wait must be None or seconds >= 0, got {wait!r}")
    if not poll >= 0:
        raise ValueError(f"poll must be seconds >= 0, got {poll!r}")
    deadline = None if wait is None else time.monotonic() + wait
    while True:
        try:
            storage = open_run_storage(location)
            break
        except NotARunError:
            left = 0.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise
            time.sleep(min(poll, left))
    shown = storage.root if isinstance(location, Storage) else os.fspath(location)
    return Run(storage, shown)


def run_status(checkpoints: Iterable[Mapping[str, Any]]) -> str:
    """``finished`` when a checkpoint record is the final one (named ``final``, or with
    ``final: true``), else ``incomplete`` (still running, or stopped before its end)."""
    done = any(c.get("name") == "final" or c.get("final") is True for c in checkpoints)
    return "finished" if done else "incomplete"


class Run:
    """One run directory, read lazily. Build it with ``open_run``.

    Every method reads the files anew, so a run that is still being written shows what is on
    disk at the call (``follow_metrics`` tails ``metrics.jsonl`` as it grows).
    """

    def __init__(self, storage: Storage, location: str) -> None:
        self._storage = storage
        self.location = location
        self._layout: layout.Layout | Literal["mixed"] | None = None

    def __repr__(self) -> str:
        return f"Run({self.location!r})"

    @property
    def storage(self) -> Storage:
        """The storage backend the run is read through."""
        return self._storage

    @property
    def name(self) -> str:
        """The run's folder name (the last part of its path or URI)."""
        return self.location.rstrip("/").rsplit("/", 1)[-1] or self.location

    # -- top-level files -------------------------------------------------------------------

    @property
    def layout(self) -> layout.Layout | Literal["mixed"] | None:
        """``"flat"``, ``"nested"``, ``"mixed"`` (both: a warning) or None (no iteration yet)."""
        if self._layout is None:
            self._layout = layout.detect_layout(e.path for e in self._files())
        return self._layout

    def config(self) -> dict[str, Any] | None:
        """``config.json`` as a dict (``NaN`` tokens as floats), or None when absent or invalid."""
        value = read_document(self._storage, layout.CONFIG)
        return value if isinstance(value, dict) else None

    def iter_metrics(self, stats: LineStats | None = None) -> Iterator[MetricsRecord]:
        """The records of ``metrics.jsonl`` in file order, streamed (torn tail skipped)."""
        return cast(Iterator[MetricsRecord], iter_records(self._storage, layout.METRICS, stats))

    def metrics(self) -> list[MetricsRecord]:
        """Every record of ``metrics.jsonl`` in file order (torn tail and bad lines skipped)."""
        return list(self.iter_metrics())

    def metrics_frame(self, backend: Backend = "pandas") -> Any:
        """``metrics.jsonl`` as a DataFrame: one row per record, one column per key ever seen.

        Columns come from every record, not from a prefix: a key first logged at line 30,000 is
        a column. Gaps and nulls in numeric columns are float NaN. ``backend`` is ``"pandas"``
        (``pip install 'rlio[pandas]'``) or ``"polars"`` (``'rlio[polars]'``).
        """
        from rlio.reader.frames import jsonl_frame

        return jsonl_frame(self._storage, layout.METRICS, backend)

    def checkpoints(self) -> list[CheckpointRecord]:
        """Every record of ``checkpoints.jsonl`` in file order (torn tail and bad lines skipped)."""
        return cast(list[CheckpointRecord],
                    list(iter_records(self._storage, layout.CHECKPOINTS)))

    def timing_spans(self) -> list[TimingSpansRecord]:
        """Every record of ``timing_spans.jsonl`` in file order."""
        return cast(list[TimingSpansRecord],
                    list(iter_records(self._storage, layout.TIMING_SPANS)))

    def resume_state(self, *, required_key: str = "state_path") -> ResumeState | None:
        """Where a resume would restart: exactly ``rlio.read_resume_state`` of this run."""
        return read_resume_state(self._storage, required_key=required_key)

    # -- the cookbook's token capture (capture/<kind>.jsonl) --------------------------------

    def capture_kinds(self) -> list[str]:
        """The kinds of token-capture records the run holds (``capture/<kind>.jsonl``), sorted."""
        kinds = (layout.capture_kind(e.path) for e in self._files()
                 if e.path.startswith(layout.CAPTURE_DIR + "/"))
        return sorted(k for k in kinds if k is not None)

    def captures(self, kind: str | None = None, *,
                 stats: LineStats | None = None) -> Iterator[CaptureRecord]:
        """Token-capture records (the cookbook 0.6.1's ``capture/<kind>.jsonl``: ``"sample"``,
        ``"train_op"``, ...) in file order, streamed; every kind in turn (sorted) when ``kind``
        is None. A kind the run did not capture yields nothing."""
        if kind is None:
            return self._all_captures(stats)
        rel = layout.capture_path(kind)
        return cast(Iterator[CaptureRecord], iter_records(self._storage, rel, stats))

    def _all_captures(self, stats: LineStats | None) -> Iterator[CaptureRecord]:
        for kind in self.capture_kinds():
            yield from self.captures(kind, stats=stats)

    def captures_frame(self, kind: str | None = None, *, backend: Backend = "pandas") -> Any:
        """Token-capture records as a DataFrame: one row per record, ``scope``,
        ``sampling_params``, ``hyperparams`` and ``metrics`` spread as ``<name>/<key>``
        columns; ``prompt_tokens`` and ``samples`` kept as lists."""
        from rlio.reader.frames import build_frame
        from rlio.reader.table import capture_rows, metrics_table

        return build_frame(metrics_table(capture_rows(self.captures(kind))), backend)

    # -- per-iteration files ---------------------------------------------------------------

    def _files(self) -> Iterator[Any]:
        return (e for e in self._storage.walk() if e.kind == "file")

    def iterations(self) -> list[IterationInfo]:
        """The iterations that have files, in order, with their evaluators and files."""
        found: dict[int, tuple[set[str], list[str]]] = {}
        paths = []
        for entry in self._files():
            rp = layout.parse_path(entry.path)
            if rp.kind not in _ITERATION_KINDS or rp.iteration is None:
                continue
            paths.append(entry.path)
            labels, files = found.setdefault(rp.iteration, (set(), []))
            files.append(entry.path)
            if rp.label is not None:
                labels.add(rp.label)
        self._layout = layout.detect_layout(paths)
        return [IterationInfo(i, tuple(sorted(found[i][0])), tuple(sorted(found[i][1])))
                for i in sorted(found)]

    def _index(self) -> dict[tuple[int, str, str | None], list[str]]:
        """Every per-iteration file by ``(iteration, artifact, label)``: run-relative paths, the
        layout the run mostly uses first (found by listing, never by guessing a name)."""
        index: dict[tuple[int, str, str | None], list[str]] = {}
        for entry in self._files():
            rp = layout.parse_path(entry.path)
            if rp.kind in _ITERATION_KINDS and rp.iteration is not None:
                index.setdefault((rp.iteration, rp.kind, rp.label), []).append(entry.path)
        nested_first = self._layout == "nested"
        for paths in index.values():
            paths.sort(key=lambda p: ("/" in p) != nested_first)
        return index

    def _labels(self, index: dict[tuple[int, str, str | None], list[str]],
                evaluator: str | None) -> tuple[str | None, ...]:
        """The labels files of ``evaluator`` carry in this run (None: training).

        Raises:
            ValueError: no file of the run belongs to ``evaluator``; names the evaluators that
                have files.
        """
        if evaluator is None:
            return (None,)
        if not isinstance(evaluator, str):
            raise TypeError(f"evaluator must be a str (an evaluator's name or label), "
                            f"got {evaluator!r}")
        wanted = layout.label_candidates(evaluator)
        present = {label for (_, _, label) in index if label is not None}
        if not present.intersection(wanted):
            names = ", ".join(repr(x) for x in sorted(present)) or "none"
            raise ValueError(f"no evaluator {evaluator!r} in run {self.location!r}; "
                             f"evaluators with files: {names}")
        return wanted

    def path_of(self, iteration: int, artifact: Artifact, *,
                evaluator: str | None = None) -> str | None:
        """The run-relative path of one per-iteration file in whichever layout holds it, or None.

        ``evaluator`` is the evaluator's name or label (``"test"``); None means the training
        rollouts. Files are found by listing the run (a cookbook's uncut long label too).

        Raises:
            ValueError: the run has no file of ``evaluator`` at all (names those it has).
        """
        index = self._index()
        return self._find(index, layout.iteration_number(iteration), artifact,
                          self._labels(index, evaluator))

    @staticmethod
    def _find(index: dict[tuple[int, str, str | None], list[str]], iteration: int,
              artifact: str, labels: tuple[str | None, ...]) -> str | None:
        for label in labels:
            paths = index.get((iteration, artifact, label))
            if paths:
                return paths[0]
        return None

    def rollouts(self, iteration: int | Iterable[int] | None = None, *,
                 evaluator: str | None = None) -> Iterator[RolloutSummary]:
        """Rollout summaries (one dict per trajectory), streamed line by line.

        Args:
            iteration: one iteration, several, or None for every iteration in order.
            evaluator: an evaluator's name or label for its rollouts (``"test"``); None for the
                training rollouts.

        Raises:
            ValueError: the run has no file of ``evaluator`` at all (names those it has); raised
                at the call, before anything is yielded.
        """
        return self._iter_rollouts(self._rollout_files(iteration, evaluator))

    def _rollout_files(self, iteration: int | Iterable[int] | None,
                       evaluator: str | None) -> list[str]:
        """The rollout summary files of one iteration, several, or all (None), in order."""
        if iteration is None:
            wanted: Iterable[int] | None = None
        elif isinstance(iteration, Iterable):
            wanted = [layout.iteration_number(i) for i in iteration]
        else:  # an int, or any integer type (numpy)
            wanted = [layout.iteration_number(iteration)]
        index = self._index()
        labels = self._labels(index, evaluator)
        if wanted is None:
            wanted = sorted({i for (i, _, _) in index})
        found = (self._find(index, i, "rollout_summaries", labels) for i in wanted)
        return [rel for rel in found if rel is not None]

    def _iter_rollouts(self, rels: list[str]) -> Iterator[RolloutSummary]:
        for rel in rels:
            yield from cast(Iterator[RolloutSummary], iter_records(self._storage, rel))

    def rollouts_frame(self, evaluator: str | None = None,
                       iterations: Iterable[int] | None = None, steps: bool = False,
                       *, backend: Backend = "pandas") -> Any:
        """Rollout summaries as a DataFrame: one row per trajectory, or per step (``steps``).

        Trajectory rows hold the summary's scalar keys, ``n_steps`` and ``trajectory_metrics/<k>``
        columns; step rows hold ``iteration``, ``split``, ``group_idx``, ``traj_idx``, the step's
        keys and ``metrics/<k>``, ``logs/<k>`` columns. A trajectory's outcome is its
        ``total_reward`` column (step rewards plus ``final_reward``; docs/format.md §7), not
        ``final_reward``.
        """
        from rlio.reader.frames import rollout_frame

        return rollout_frame(self._storage, self._rollout_files(iterations, evaluator), backend,
                             steps=steps)

    def dataset(self, selection: Selection | None = None, /,
                **options: Any) -> Iterator[dict[str, Any]]:
        """Training-dataset rows of this run, streamed: one per trajectory (or, with
        ``pairs=True``, one chosen/rejected pair per group) with its conversation as chat
        messages, reward, advantage and provenance (``rlio.reader.dataset``).

        ``options`` are those of ``rlio.reader.dataset.Selection`` (``split="train"``,
        ``iterations``, ``min_reward``, ``min_advantage``, ``top_k``, ``dedupe``, ``pairs``,
        ``min_margin``), or pass a ``Selection``.
        """
        from rlio.reader.dataset import Selection, dataset_batches

        chosen = selection if selection is not None else Selection(**options)
        return (row for rows in dataset_batches(self, chosen) for row in rows)

    def logtree(self, iteration: int, *, evaluator: str | None = None) -> LogtreeDocument | None:
        """The logtree document of an iteration (training, or ``evaluator``'s), or None."""
        rel = self.path_of(iteration, "logtree", evaluator=evaluator)
        if rel is None:
            return None
        value = read_document(self._storage, rel)
        return cast(LogtreeDocument, value) if isinstance(value, dict) else None

    def conversations(self, iteration: int, *,
                      evaluator: str | None = None) -> Iterator[Conversation]:
        """The conversations logged in an iteration's logtree, in document order."""
        return iter_conversations(self.logtree(iteration, evaluator=evaluator))

    def follow_metrics(self, *, poll: float = 1.0, idle_timeout: float | None = None,
                       from_start: bool = True) -> Iterator[MetricsRecord]:
        """Yield ``metrics.jsonl`` records as a live run appends them (see ``rlio.reader.follow``).

        To start following before the trainer has created the run, open it with
        ``open_run(path, wait=seconds)``.

        Args:
            poll: seconds between looks at the file once its end is reached.
            idle_timeout: stop after this many seconds without a new record (None: never).
            from_start: yield the records already there first; else only new ones.
        """
        from rlio.reader.follow import follow_jsonl

        return cast(Iterator[MetricsRecord], follow_jsonl(
            self._storage, layout.METRICS, poll=poll, idle_timeout=idle_timeout,
            from_start=from_start))
