"""What the writer does besides judging and encoding records: ``git diff``, refusing symbolic
links, refusing a fresh start over an existing run, and building the metrics and checkpoint
records of a call (a checkpoint that resume can restart from).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from typing import Any

from rlio import layout as L
from rlio.errors import RecordError, RunExistsError, UnsafeStorageError
from rlio.rules import resume_problem
from rlio.schema import record_schema
from rlio.storage.base import Storage

_GIT_TIMEOUT = 30.0
#: The documented key order of a checkpoint record (docs/format.md §5), from its schema.
_CHECKPOINT_KEYS = record_schema("checkpoint-line").keys

# --------------------------------------------------------------------------------------------
# code.diff


def git_diff(cwd: str | os.PathLike[str] | None = None, *, timeout: float = _GIT_TIMEOUT) -> bytes:
    """``git diff HEAD`` of the repository at ``cwd``, then the untracked files' names.

    Untracked (not ignored) files are listed after the diff as ``# untracked: <path>`` lines,
    which ``git apply`` ignores. Outside a git repository, or without git, the result is empty.
    """
    where = os.fspath(cwd) if cwd is not None else os.getcwd()
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}

    def run(*args: str) -> bytes | None:
        try:
            proc = subprocess.run(
                ["git", *args], cwd=where, capture_output=True, timeout=timeout, check=False,
                env=env, stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout if proc.returncode == 0 else None

    diff_args = ("diff", "--no-color", "--no-ext-diff")
    diff = run(*diff_args, "HEAD")
    if diff is None:
        diff = run(*diff_args)  # a repository without commits has no HEAD yet
    if diff is None:
        return b""
    untracked = run("ls-files", "--others", "--exclude-standard", "-z") or b""
    names = [n for n in untracked.split(b"\0") if n]
    if names:
        if diff and not diff.endswith(b"\n"):
            diff += b"\n"
        diff += b"".join(b"# untracked: " + n.replace(b"\n", b"\\n") + b"\n" for n in names)
    return diff


def refuse_symlinks(storage: Storage, rel: str) -> None:
    """No write may follow a symbolic link out of (or around) the run directory.

    Raises:
        UnsafeStorageError: a component of ``rel`` is a symbolic link.
    """
    if not storage.is_local:
        return  # object stores have no symbolic links
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        entry = storage.stat("/".join(parts[:i]))
        if entry is not None and entry.kind == "symlink":
            raise UnsafeStorageError(
                f"refusing to write through the symbolic link {storage.display(rel)!r}"
            )


def refuse_fresh_start(storage: Storage, *, has_iteration_files: bool) -> None:
    """A writer opened without ``resume=True`` must not append to a run that holds records.

    Records are a metrics line, a checkpoint record or a per-iteration file; an empty
    ``metrics.jsonl`` (a writer killed right after opening) or a config alone is no record.

    Raises:
        RunExistsError: naming what the run holds; nothing was changed.
    """
    held = [rel for rel in (L.METRICS, L.CHECKPOINTS)
            if (e := storage.stat(rel)) is not None and e.kind == "file" and e.size > 0]
    if has_iteration_files:
        held.append("per-iteration files")
    if held:
        raise RunExistsError(
            f"run {storage.display('')!r} already holds records ({', '.join(held)}); pass "
            "resume=True to continue it, or pick a new log_path for a fresh run"
        )


def metrics_call(step: Any) -> str:
    """How errors name a ``log_metrics`` call: ``log_metrics(..., step=3)``."""
    return "log_metrics(...)" if step is None else f"log_metrics(..., step={step!r:.40})"


def metrics_record(metrics: Mapping[str, Any], step: Any, index: int,
                   call: str = "log_metrics(...)") -> Mapping[str, Any]:
    """The metrics line of ``log_metrics(metrics, step)``: ``step`` first, then the metrics.

    Raises:
        TypeError: ``metrics`` is not a mapping.
        RecordError: ``step`` conflicts with a ``"step"`` key in ``metrics``.
    """
    if type(metrics) is not dict and not isinstance(metrics, Mapping):
        raise TypeError(f"log_metrics(metrics=...) takes a dict of metric name to value, such as "
                        f"{{'loss': 0.5}}; got {type(metrics).__name__} {metrics!r:.80}")
    if step is None:
        if "step" not in metrics or (type(metrics) is dict and next(iter(metrics)) == "step"):
            return metrics
        return {"step": metrics["step"], **metrics}
    if "step" in metrics and not _same(metrics["step"], step):
        raise RecordError(
            f"{call} at /step: step={step!r} is given as an argument but the "
            f"metrics hold step={metrics['step']!r}", index=index, pointer="/step",
        )
    return {"step": step, **metrics}


def _same(one: Any, two: Any) -> bool:
    """Whether two step values are equal (a value whose ``==`` raises, a numpy array: not)."""
    try:
        return one is two or bool(one == two)
    except Exception:
        return False


def checkpoint_record(name: str, fields: tuple[tuple[str, Any], ...],
                      extra: dict[str, Any]) -> dict[str, Any]:
    """A checkpoint record: its documented keys in the schema's order (``fields`` that are None
    omitted), then ``extra``'s other keys in call order.

    ``state_path`` and ``sampler_path`` given as ``os.PathLike`` are written as strings.
    """
    given: dict[str, Any] = {"name": name}
    for key, value in fields:
        if value is not None:
            given[key] = os.fspath(value) if isinstance(value, os.PathLike) else value
    given.update(extra)
    record = {k: given[k] for k in _CHECKPOINT_KEYS if k in given}
    record.update((k, v) for k, v in given.items() if k not in record)
    return record


def refuse_unresumable(record: dict[str, Any], index: int) -> None:
    """A record carrying the resume key must carry what a restart needs (docs/format.md §5, RL501).

    Raises:
        RecordError: naming the record and what it lacks; nothing is written.
    """
    problem = resume_problem(record)
    if problem is not None:
        raise RecordError(f"checkpoint record {index} ({record.get('name')!r}) {problem}; "
                          "pass batch=<the iteration to restart at>", index=index,
                          pointer="/batch")
