"""rlio's exceptions. Each is also the builtin a caller would naturally catch."""

from __future__ import annotations


class RlioError(Exception):
    """Base class of every error rlio raises on purpose."""


class RecordError(RlioError, ValueError):
    """A record cannot be written faithfully; names the record index and JSON pointer."""

    def __init__(self, message: str, *, index: int | None = None, pointer: str = "") -> None:
        super().__init__(message)
        self.index = index
        self.pointer = pointer


class LabelCollisionError(RlioError, ValueError):
    """Two different evaluator names sanitize to the same file label in one run."""


class ResumeError(RlioError, ValueError):
    """The checkpoint ledger cannot give a restart point (e.g. a resumable record has no batch)."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class UnsafeStorageError(RlioError, OSError):
    """An operation rlio refuses because the backend cannot do it safely (remote append mode)."""


class RunNotFoundError(RlioError, FileNotFoundError):
    """The run directory or URI does not exist or cannot be listed."""


class NotARunError(RunNotFoundError):
    """The path exists but is not a run: a file, or a folder without ``metrics.jsonl`` or
    ``config.json`` at its root (``rlio.layout.is_run_root``)."""
