"""The read-only view of a run the checks share: its classified files and the facts gathered.

Facts flow one way, in the run order of ``rlio.validate.checks.registry``: the checkpoint ledger
is read first (its restart steps), then metrics.jsonl (which judges step drops by them and by the
iteration set), then every other file, then the cross-file checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rlio.layout import RunPath
from rlio.storage.base import Storage


@dataclass
class CheckpointFacts:
    """What the checkpoint ledger says: resumable records and the steps a resume can restart at."""

    #: (line, batch) of each resumable record
    resumable: list[tuple[int, int]] = field(default_factory=list)
    restart_steps: set[int] = field(default_factory=set)
    records: int = 0


@dataclass
class MetricsFacts:
    """What metrics.jsonl says: the last training step and how many records it holds."""

    last_train_step: int | None = None
    records: int = 0


@dataclass
class RunView:
    """Facts the per-file pass gathered, for the checks that come after.

    Attributes:
        layout: ``flat``, ``nested``, ``mixed`` or None.
        files: regular files by run-relative path, with their parsed names.
        present: every path that exists in some form (file, dir, symlink, other).
        display: path -> the name findings show (valid UTF-8).
        metrics: facts from metrics.jsonl, if it was read.
        checkpoints: facts from checkpoints.jsonl, if it was read.
        storage: the run, for cross-file checks that read a few bytes of a file.
    """

    layout: str | None
    files: dict[str, RunPath]
    present: dict[str, str]
    display: dict[str, str]
    metrics: MetricsFacts | None = None
    checkpoints: CheckpointFacts | None = None
    storage: Storage | None = None

    @property
    def iterations(self) -> frozenset[int]:
        """The iterations that have per-iteration files."""
        return frozenset(rp.iteration for rp in self.files.values() if rp.iteration is not None)

    @property
    def restart_steps(self) -> set[int]:
        """The steps a resume can restart at (empty until the checkpoint ledger was read)."""
        return self.checkpoints.restart_steps if self.checkpoints is not None else set()
