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


class MissingExtraError(RlioError, ImportError):
    """An optional dependency a feature needs is not installed; names the ``pip install`` line.

    Each URI scheme's library comes with its extra (gs://: ``rlio[gcs]``, s3://: ``rlio[s3]``,
    az://: ``rlio[azure]``), which the base install leaves out (most runs are local).
    """


class StorageUnavailableError(RlioError, OSError):
    """A remote store cannot be used: unreachable (no network, wrong endpoint), no credentials,
    or credentials it refuses. One line naming the store and the problem; the CLI exits 2."""


class RunNotFoundError(RlioError, FileNotFoundError):
    """The run directory or URI does not exist or cannot be listed."""


class RunExistsError(RlioError):
    """A run that already holds records was opened for a fresh start (without ``resume=True``)."""


class RunInUseError(RlioError):
    """Another live writer holds the run's lease; names the holder (host, pid, since when).

    Helpers that log beside the lease holder on purpose join with ``RunWriter(path,
    attach=True)`` instead.
    """

    def __init__(self, message: str, *, host: str | None = None, pid: int | None = None,
                 since: str | None = None) -> None:
        super().__init__(message)
        self.host = host
        self.pid = pid
        self.since = since


class LeaseLostError(RunInUseError):
    """This writer lost the run's lease, or may have (past its expiry, a deleted or replaced
    lease file, a forked child): it acknowledges nothing more; says why.

    Every verb of the writer raises it and writes nothing. A ``RunInUseError``, so code that
    catches a refused start also catches a lost lease.
    """


class AppendError(RlioError, OSError):
    """An append failed (full disk, I/O error, quota, short write); keeps ``errno``, ``filename``.

    The file was cut back to where it stood before the append (or, where that was impossible,
    the next append starts on a new line), so nothing half-written is left to glue onto.
    """


class NotARunError(RunNotFoundError):
    """No run at the path: it is missing, a file, or a folder without ``metrics.jsonl``,
    ``checkpoints.jsonl`` or per-iteration files, or ``config.json`` with ``code.diff``
    (``rlio.layout.is_run_root``). ``strerror`` is the one line every command prints."""


class UnknownMetricError(RlioError, KeyError):
    """A metric asked for by name (``rlio report --metric KEY``) that the run never logged;
    ``closest`` holds the run's keys nearest to it by spelling."""

    def __init__(self, message: str, *, key: str, closest: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.key = key
        self.closest = closest

    def __str__(self) -> str:
        return str(self.args[0])
