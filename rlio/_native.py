"""Transitional: the C extension is gone; every caller takes its Python path (to be removed)."""

from __future__ import annotations

from types import ModuleType

__all__ = ["PURE_ENV", "native"]

PURE_ENV = "RLIO_PURE_PYTHON"


def native() -> ModuleType | None:
    """Always None: rlio is pure Python."""
    return None
