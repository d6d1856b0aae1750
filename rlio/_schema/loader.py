"""The shipped JSON Schemas: their names, where they live (wheel or repository), loading."""

from __future__ import annotations

import functools
import importlib.resources
from pathlib import Path
from typing import Any, Final

import orjson

from rlio.layout import FILE_KINDS

#: Schema names, one per file type of docs/format.md.
SCHEMA_NAMES: Final = (
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
    packaged = importlib.resources.files("rlio") / "schemas"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "schemas"


def _check_name(name: str) -> None:
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; expected one of {', '.join(SCHEMA_NAMES)}")


def schema_bytes(name: str) -> bytes:
    """The schema document exactly as shipped."""
    _check_name(name)
    return (schema_dir() / f"{name}.schema.json").read_bytes()


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema ``name`` (cached; do not mutate)."""
    doc: dict[str, Any] = orjson.loads(schema_bytes(name))
    return doc
