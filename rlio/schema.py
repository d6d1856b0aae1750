"""The JSON Schemas of schemas/ as package data: loading, fast verdicts, explanations.

A record's validity is decided by a compiled fast check (``is_valid``); python-jsonschema is
imported only to explain a record that failed (``explain``), so hot paths never pay for it.
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import orjson

#: Schema names, one per file type of SPEC.md.
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
    "metrics": "metrics-line",
    "config": "config",
    "checkpoints": "checkpoint-line",
    "rollout_summaries": "rollout-summary-line",
    "logtree": "logtree",
    "timing_spans": "timing-spans-line",
    "trace_events": "trace-event-line",
}


def schema_dir() -> Path:
    """Folder holding the ``*.schema.json`` files: inside the wheel, or the repository's."""
    packaged = importlib.resources.files("rlio") / "schemas"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parent.parent / "schemas"


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


@functools.cache
def fast_check(name: str) -> Callable[[Any], bool]:
    """A compiled predicate: True exactly when an instance is valid against schema ``name``."""
    from ._fastcheck import compile_schema

    return compile_schema(load_schema(name))


def is_valid(name: str, instance: Any) -> bool:
    """Whether ``instance`` satisfies schema ``name`` (fast path, no jsonschema import)."""
    return fast_check(name)(instance)


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=None)


def explain(name: str, instance: Any) -> tuple[str, str] | None:
    """The best error for an invalid instance as ``(json_pointer, message)``; None when valid.

    Uses python-jsonschema's ``best_match``; imported on first use.
    """
    import jsonschema

    from .findings import pointer_of

    try:
        error = jsonschema.exceptions.best_match(_validator(name).iter_errors(instance))
    except RecursionError:
        return "", "record is nested too deeply to explain"
    if error is None:
        return None
    pointer = pointer_of(error.absolute_path)
    return pointer, _one_line(error)


def _one_line(error: Any) -> str:
    msg = str(error.message)
    if len(msg) > 300:
        msg = msg[:297] + "..."
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where + ': ' if where else ''}{msg}".replace("\n", " ")
