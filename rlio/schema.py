"""The JSON Schemas of schemas/ as package data: loading, fast verdicts, explanations.

A record's validity is decided by a compiled fast check (``is_valid``); python-jsonschema is
imported only to explain a record that failed (``explain``), so hot paths never pay for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from rlio._schema.bundle import BUNDLE_ID, bundle_schema
from rlio._schema.loader import (
    KIND_SCHEMA,
    SCHEMA_NAMES,
    load_schema,
    schema_bytes,
    schema_dir,
)

__all__ = ["BUNDLE_ID", "KIND_SCHEMA", "SCHEMA_NAMES", "bundle_schema", "explain", "fast_check",
           "is_valid", "load_schema", "schema_bytes", "schema_dir"]


@functools.cache
def fast_check(name: str) -> Callable[[Any], bool]:
    """A compiled predicate: True exactly when an instance is valid against schema ``name``."""
    from rlio._schema.compiler import compile_schema

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

    from rlio.findings import pointer_of

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
