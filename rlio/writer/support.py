"""What the writer does to a run besides encoding records: torn-tail repair, ``git diff``,
finding an existing run's layout, refusing symbolic links, and the metrics schema's verdict on a
``step`` alone. Kept apart from ``writer`` to keep both modules small; ``git_diff`` and
``repair_torn_tail`` are re-exported by ``rlio.writer``.
"""

from __future__ import annotations

import functools
import operator
import os
import subprocess
from collections.abc import Callable
from typing import Any

from rlio import layout as L
from rlio._schema.loader import load_schema
from rlio.errors import UnsafeStorageError
from rlio.storage.base import Storage

_GIT_TIMEOUT = 30.0

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


def detect_layout(storage: Storage) -> L.Layout | None:
    """The layout of the first per-iteration file found, or None for a run with none."""
    if not storage.exists():
        return None
    for entry in storage.walk():
        found = L.parse_path(entry.path).layout
        if found is not None:
            return found
    return None


@functools.cache
def metrics_step_check() -> Callable[[Any], bool] | None:
    """The metrics schema's verdict on a ``step`` value alone, or None when it has none.

    Derived from the schema document: when it judges a line key by key, a line is valid exactly
    when its metrics are and this predicate holds for its step (``compile_key_check``).
    """
    from rlio._schema.blocks import compile_key_check

    return compile_key_check(load_schema("metrics-line"), "step")


def iteration_number(value: Any) -> int:
    """``value`` as an iteration number: an int >= 0 (bools and floats refused).

    Raises:
        ValueError: naming the value.
    """
    if isinstance(value, bool):
        raise ValueError(f"iteration must be an int >= 0, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"iteration must be an int >= 0, got {value!r}") from None
    if n < 0:
        raise ValueError(f"iteration must be >= 0, got {n}")
    return n


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
