"""rlio's exceptions. Each is also the builtin a caller would naturally catch."""

from __future__ import annotations


class RlioError(Exception):
    """Base class of every error rlio raises on purpose."""


class RlioWarning(UserWarning):
    """Something rlio wrote or read that is probably not what the caller meant (a metrics step
    that goes backwards, a config value written as text); the write still happened."""


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
    """An optional dependency a feature needs is not installed; names the ``pip install`` line
    that works for how rlio was installed (``install_line``).

    Each URI scheme's library comes with its extra (gs://: ``rlio[gcs]``, s3://: ``rlio[s3]``,
    az://: ``rlio[azure]``), which the base install leaves out (most runs are local).
    """


def install_line(extra: str) -> str:
    """The command that installs rlio's extra ``extra`` into the running interpreter, in the form
    that works for how rlio was installed: from a checkout (this package sits beside its
    ``pyproject.toml``) ``python -m pip install -e '/path/to/checkout[gcs]'``; from a local
    folder, that folder; from a package index ``python -m pip install 'rlio[gcs]'``."""
    import shlex
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "rlio" / "errors.py").is_file():
        target = f"-e {shlex.quote(f'{root}[{extra}]')}"
    else:
        source = _installed_from()
        target = shlex.quote(f"{source}[{extra}]" if source else f"rlio[{extra}]")
    python = shlex.quote(sys.executable) if sys.executable else "python3"
    return f"{python} -m pip install {target}"


def _installed_from() -> str | None:
    """The local folder rlio was installed from (its ``direct_url.json``), if it still exists."""
    import json
    import os
    from importlib import metadata
    from urllib.parse import unquote, urlsplit

    try:
        text = metadata.distribution("rlio").read_text("direct_url.json")
        url = json.loads(text)["url"] if text else ""
    except (metadata.PackageNotFoundError, ValueError, KeyError, TypeError, OSError):
        return None
    parts = urlsplit(url)
    path = unquote(parts.path)
    return path if parts.scheme == "file" and os.path.isdir(path) else None


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
