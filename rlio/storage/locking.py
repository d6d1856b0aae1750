"""Inter-process locks on local files: ``fcntl.flock`` where it exists, ``filelock`` elsewhere.

``flock`` locks belong to an open file description and the OS drops them when the process dies,
so a SIGKILLed holder never blocks anyone. Where ``fcntl`` is missing (Windows, a stripped-down
interpreter) the portable ``filelock`` library locks a separate lock file instead (its own
files are never the data file: ``filelock`` may truncate what it locks). ``filelock`` is imported
only on that path, so ``import rlio`` stays light.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from types import ModuleType
from typing import Any

fcntl: ModuleType | None
try:
    import fcntl
except ImportError:  # no fcntl here: the filelock fallback below
    fcntl = None

#: True where ``fcntl.flock`` is available (every POSIX system rlio is tested on).
HAVE_FLOCK = fcntl is not None


def flock(fd: int, *, blocking: bool = True) -> bool:
    """Lock ``fd`` exclusively with ``flock``; False when ``blocking`` is off and it is held."""
    assert fcntl is not None
    if blocking:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def funlock(fd: int) -> None:
    """Release the ``flock`` on ``fd``."""
    assert fcntl is not None
    fcntl.flock(fd, fcntl.LOCK_UN)


def portable_lock(lock_path: str, *, timeout: float = -1) -> Any:
    """A ``filelock.FileLock`` on ``lock_path`` (its directory created): the fallback lock.

    ``timeout=0`` tries once (``acquire`` raises ``filelock.Timeout`` when it is held).
    """
    import filelock

    os.makedirs(os.path.dirname(lock_path) or ".", exist_ok=True)
    return filelock.FileLock(lock_path, timeout=timeout)


@contextlib.contextmanager
def fallback_lock(lock_path: str) -> Iterator[None]:
    """Hold the ``filelock`` fallback lock on ``lock_path`` for the block."""
    with portable_lock(lock_path):
        yield
