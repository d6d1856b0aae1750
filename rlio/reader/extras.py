"""Optional dependencies of the reader, imported on first use with an error naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from rlio.errors import MissingExtraError, install_line

__all__ = ["MissingExtraError", "require"]


def require(module: str, extra: str, *, purpose: str) -> ModuleType:
    """Import ``module``, or raise ``MissingExtraError`` naming the extra's ``install_line``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{purpose} needs {module}, which is not installed (the extra rlio[{extra}]): "
            f"{install_line(extra)}",
            name=module,
        ) from exc
