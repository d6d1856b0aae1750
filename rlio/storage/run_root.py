"""Opening a location as a run: the one check every reading command makes (``rlio.layout.
is_run_root``) and the one "no run found" error, in the same words everywhere, with a hint.

A location that is not a run raises ``NotARunError`` whose message (``strerror``) is one line:
``no run found at 'PATH': WHY`` where WHY says what is there instead (nothing, a file, an empty
folder, a folder without run files) and, inside a run, where the run is ("this is iteration 3
of run 'runs/exp1'").
"""

from __future__ import annotations

import errno
import os

from rlio import layout
from rlio.errors import NotARunError, RunNotFoundError, StorageUnavailableError
from rlio.storage.base import HIDDEN_PREFIXES, Storage
from rlio.storage.opener import open_storage


def open_run_storage(location: str | os.PathLike[str] | Storage) -> Storage:
    """The storage of the run at ``location``, checked to be a run.

    Raises:
        NotARunError: ``location`` does not exist or is not a run (message: ``no_run``).
        RunNotFoundError: the run cannot be listed (permission, I/O).
    """
    if isinstance(location, Storage):
        storage, shown = location, location.root
    else:
        shown = os.fspath(location)
        try:
            storage = open_storage(shown)
        except RunNotFoundError:
            raise no_run(shown) from None
        if storage.is_local and not os.path.isdir(storage.root):
            raise no_run(shown)
    if not layout.is_run_root(top_level_names(storage, shown)):
        raise no_run(shown)
    return storage


def top_level_names(storage: Storage, shown: str) -> set[str]:
    """The names directly at the root of ``storage`` (rlio's hidden files left out).

    Raises:
        RunNotFoundError: the root cannot be listed.
    """
    try:
        if storage.is_local:
            if not os.access(storage.root, os.R_OK | os.X_OK):
                raise RunNotFoundError(errno.EACCES, f"cannot read run {shown!r}: "
                                       f"{os.strerror(errno.EACCES)} (the folder cannot be "
                                       "listed)", shown)
            return {n for n in os.listdir(storage.root) if not (n + "/").startswith(
                HIDDEN_PREFIXES)}
        return {e.path.partition("/")[0] for e in storage.walk()}
    except (RunNotFoundError, StorageUnavailableError):
        raise  # said already; an unreachable store is not "cannot read the run"
    except OSError as exc:
        raise RunNotFoundError(exc.errno or errno.EIO, f"cannot read run {shown!r}: "
                               f"{exc.strerror or exc}", shown) from exc


def no_run(location: str) -> NotARunError:
    """The "no run found" error for ``location``: what is there, and a hint when it lies inside
    a run (a local path; a URI says only what a run holds)."""
    return NotARunError(errno.ENOENT, f"no run found at {location!r}: {_why(location)}", location)


def _why(location: str) -> str:
    expected = f"a run holds {layout.RUN_DEFINITION}"
    if "://" in location and not location.startswith("file://"):
        return f"nothing there is a run ({expected})"
    path = location[len("file://"):] if location.startswith("file://") else location
    if not os.path.lexists(path):
        return "no such file or directory"
    norm = os.path.normpath(path)
    name = os.path.basename(os.path.abspath(path))
    parent = os.path.dirname(norm) if os.path.basename(norm) not in ("", ".", "..") else ""
    parent = parent or os.path.dirname(os.path.abspath(path))
    inside = _is_run(parent)
    if not os.path.isdir(path):
        where = f" of run {parent!r}" if inside else ""
        return f"it is a file{where}, not a run directory"
    if inside and layout.is_iteration_dir(name):
        return f"this is iteration {int(name.rpartition('_')[2])} of run {parent!r}"
    try:
        empty = not os.listdir(path)
    except OSError as exc:
        return f"the folder cannot be listed ({exc.strerror or exc})"
    return "the folder is empty" if empty else f"this folder holds no run files ({expected})"


def _is_run(folder: str) -> bool:
    try:
        return layout.is_run_root(os.listdir(folder))
    except OSError:
        return False
