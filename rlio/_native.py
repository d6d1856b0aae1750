"""The optional C extension built from ``rlio/_accel.c``, or None: not built (no C compiler,
``RLIO_BUILD_PURE=1``) or turned off with ``RLIO_PURE_PYTHON=1`` (the tests compare the two).

Every use has a pure-Python path that is the reference; the extension only does the same work in
fewer interpreter steps, with its rules read from the schemas by the Python side.
"""

from __future__ import annotations

import os
from types import ModuleType

try:
    from rlio import _accel as _module
except ImportError:
    _module = None  # type: ignore[assignment]

__all__ = ["PURE_ENV", "native"]

PURE_ENV = "RLIO_PURE_PYTHON"


def native() -> ModuleType | None:
    """The extension module when it is built and not turned off (read at each call)."""
    if _module is None or os.environ.get(PURE_ENV, "") == "1":
        return None
    return _module
