"""Module attributes imported on first use: what a package's ``__getattr__``/``__dir__`` share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, table: dict[str, str], namespace: dict[str, Any],
                    exported: list[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: a name in ``table`` is imported from its module
    when first asked for and kept in ``namespace`` (the package's globals), so a command pays
    only for what it touches."""

    def getattr_(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib  # here: importlib (and warnings) would cost every command's start

        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted([*namespace, *exported])

    return getattr_, dir_
