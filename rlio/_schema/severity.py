"""Severity annotations in the shipped schemas: which rules are errors and which are warnings.

A subschema carrying ``"x-rlio-severity": "warning"`` holds an expectation, not a rule: a value
that breaks it is a validator warning (RL205) and the writer accepts it (docs/format.md §3: training
is never stopped for a metric's value). Everything else in a schema is error level. The schema
is the one source of truth; this module only splits it:

``error_level(schema)`` is the schema without its warning-level subschemas (each replaced by
``true``, and dropped from an ``allOf``): what the writer refuses and the validator reports as an
error.

Pure functions over parsed documents; the inputs are never mutated.
"""

from __future__ import annotations

from typing import Any, Final

#: The annotation keyword and its one recognised value.
SEVERITY_KEY: Final = "x-rlio-severity"
WARNING: Final = "warning"


def is_warning(node: Any) -> bool:
    """Whether ``node`` is a subschema annotated as warning level."""
    return isinstance(node, dict) and node.get(SEVERITY_KEY) == WARNING


def has_warnings(schema: Any) -> bool:
    """Whether any subschema of ``schema`` is annotated as warning level."""
    if is_warning(schema):
        return True
    if isinstance(schema, dict):
        return any(has_warnings(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_warnings(v) for v in schema)
    return False


def error_level(schema: Any) -> Any:
    """``schema`` with every warning-level subschema removed (``true`` in its place).

    A warning-level member of ``allOf`` is dropped (an empty ``allOf`` with it); anywhere else
    the subschema becomes ``true``. Returns ``schema`` itself when it has no annotation.
    """
    if not has_warnings(schema):
        return schema
    return _strip(schema)


def _strip(node: Any) -> Any:
    if is_warning(node):
        return True
    if isinstance(node, list):
        return [_strip(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "allOf" and isinstance(value, list):
            kept = [_strip(v) for v in value if not is_warning(v)]
            if kept:
                out[key] = kept
        elif key in ("const", "enum", "default", "examples"):
            out[key] = value  # values, not subschemas
        else:
            out[key] = _strip(value)
    return out
