"""TEMPORARY placeholder: compile_schema wraps python-jsonschema until the compiled fast path lands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def compile_schema(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """Return a predicate that is True exactly when an instance is valid against ``schema``."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    return validator.is_valid  # type: ignore[no-any-return]
