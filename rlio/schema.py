"""The JSON Schemas of schemas/ as package data: loading, fast verdicts, explanations.

A record's validity is decided by a compiled fast check (``is_valid``); python-jsonschema is
imported only to explain a record that failed (``explain``), so hot paths never pay for it.

Severity (``rlio._schema.severity``): a subschema annotated ``"x-rlio-severity": "warning"`` is
an expectation. ``fast_check``/``is_valid`` judge the error-level rules only (what the writer
refuses and the validator reports as an error); ``full_check`` judges every rule (a record it
accepts gives no finding); ``explain(..., level="full")`` explains a warning.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, TypeAlias

from rlio._schema import severity
from rlio._schema.bundle import BUNDLE_ID, bundle_schema
from rlio._schema.checker import compile_check
from rlio._schema.loader import (
    KIND_SCHEMA,
    SCHEMA_NAMES,
    load_schema,
    schema_bytes,
    schema_dir,
)

__all__ = ["BUNDLE_ID", "KIND_SCHEMA", "SCHEMA_NAMES", "bundle_schema", "definition",
           "definition_check", "error_schema", "explain", "fast_check", "full_check", "is_valid",
           "load_schema", "schema_bytes", "schema_dir"]

Level: TypeAlias = Literal["error", "full"]


@functools.cache
def error_schema(name: str) -> dict[str, Any]:
    """Schema ``name`` without its warning-level subschemas: its error-level rules (cached)."""
    doc: dict[str, Any] = severity.error_level(load_schema(name))
    return doc


def _level_schema(name: str, level: Level) -> dict[str, Any]:
    return error_schema(name) if level == "error" else load_schema(name)


@functools.cache
def fast_check(name: str) -> Callable[[Any], bool]:
    """A compiled predicate: True exactly when an instance passes the error-level rules of
    schema ``name`` (every rule, for a schema without warning-level parts)."""
    return compile_check(error_schema(name))


@functools.cache
def full_check(name: str) -> Callable[[Any], bool]:
    """A compiled predicate of every rule of schema ``name``, warning-level ones included (the
    same function as ``fast_check`` when the schema has none)."""
    if error_schema(name) is load_schema(name):
        return fast_check(name)
    return compile_check(load_schema(name))


@functools.cache
def definition(name: str, part: str) -> dict[str, Any]:
    """A schema whose instances are those of ``$defs/<part>`` of schema ``name`` (its other
    definitions kept, so references resolve): one message of a logtree conversation, say."""
    root = load_schema(name)
    return {"$schema": root["$schema"], "$defs": root["$defs"], "$ref": f"#/$defs/{part}"}


@functools.cache
def definition_check(name: str, part: str) -> Callable[[Any], bool]:
    """The checker of ``$defs/<part>`` of schema ``name`` (see ``definition``)."""
    return compile_check(severity.error_level(definition(name, part)))


def is_valid(name: str, instance: Any) -> bool:
    """Whether ``instance`` satisfies schema ``name`` (fast path, no jsonschema import)."""
    return fast_check(name)(instance)


@functools.cache
def _validator(name: str, level: Level = "error") -> Any:
    import jsonschema

    schema = _level_schema(name, level)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=None)


def explain(name: str, instance: Any, *, level: Level = "error",
            part: str | None = None) -> tuple[str, str] | None:
    """The best error for an invalid instance as ``(json_pointer, message)``; None when valid.

    ``level="full"`` judges warning-level rules too (explains a warning); ``part`` explains an
    instance of one definition (see ``definition``). Uses python-jsonschema's ``best_match``;
    imported on first use.
    """
    import jsonschema

    from rlio.findings import pointer_of

    validator = _validator(name, level) if part is None else _part_validator(name, part)
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    except RecursionError:
        return "", "record is nested too deeply to explain"
    if error is None:
        return None
    pointer = pointer_of(error.absolute_path)
    return pointer, _one_line(error)


@functools.cache
def _part_validator(name: str, part: str) -> Any:
    import jsonschema

    schema = severity.error_level(definition(name, part))
    return jsonschema.validators.validator_for(schema)(schema, format_checker=None)


def _one_line(error: Any) -> str:
    msg = str(error.message)
    if error.validator == "not" and isinstance(error.schema, dict) and error.schema.get(
            "description"):  # "x should not be valid under {}" says nothing: the schema says why
        msg = str(error.schema["description"])
    if len(msg) > 300:
        msg = msg[:297] + "..."
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where + ': ' if where else ''}{msg}".replace("\n", " ")
