"""The shipped JSON Schemas: their names, where they live (wheel or repository), loading."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Final

from rlio.layout import FILE_KINDS

#: Schema names, one per file type of docs/format.md.
SCHEMA_NAMES: Final = (
    "capture-line",
    "capture-sample-line",
    "capture-train-op-line",
    "checkpoint-line",
    "config",
    "logtree",
    "metrics-line",
    "rollout-summary-line",
    "timing-spans-line",
    "trace-event-line",
)

#: Which schema judges each file kind of ``layout.RunPath.kind`` (JSONL kinds: per line).
KIND_SCHEMA: Final[dict[str, str]] = {
    k.kind: k.schema for k in FILE_KINDS if k.schema is not None
}


def schema_dir() -> Path:
    """Folder holding the ``*.schema.json`` files: inside the wheel, or the repository's."""
    return Path(_schema_folder())


@functools.cache
def _schema_folder() -> str:
    # by the package's own path, not importlib.resources (which costs a whole command's start):
    # rlio ships as files (the wheel is not zip-safe), its schemas/ next to its modules
    packaged = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "schemas")
    if os.path.isdir(packaged):
        return packaged
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.realpath(__file__)))), "schemas")


def _check_name(name: str) -> None:
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; expected one of {', '.join(SCHEMA_NAMES)}")


def schema_bytes(name: str) -> bytes:
    """The schema document exactly as shipped."""
    _check_name(name)
    with open(os.path.join(_schema_folder(), f"{name}.schema.json"), "rb") as f:
        return f.read()


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema ``name`` (cached; do not mutate)."""
    import orjson

    doc: dict[str, Any] = orjson.loads(schema_bytes(name))
    return doc
