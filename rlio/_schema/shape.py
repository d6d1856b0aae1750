"""Specs for the C value checker ``rlio._accel.Shape`` (``rlio/_accel_shape.h``), read from a
schema: which exact Python types a value may have so that the schema accepts it whatever the value
(floats: finite ones where a non-finite float, written as null, is refused), and the bounds an int
is judged by. A spec is a sufficient condition only: a value it does not show valid goes to the
compiled statements, which judge it; so a node with any other keyword has no spec (None).
"""

from __future__ import annotations

from typing import Any, Final

from rlio._schema.metrics_check import int_bounds
from rlio._schema.model import NOOP, pure_types

__all__ = ["K_ANY", "K_CONST", "K_INT", "K_LIST", "K_OBJECTS", "K_SCALARS", "K_TYPES", "Spec",
           "value_spec"]

#: The spec kinds, as ``_accel_shape.h`` numbers them.
K_ANY, K_TYPES, K_INT, K_SCALARS, K_LIST, K_OBJECTS, K_CONST = range(7)
Spec = tuple[Any, ...]
ANY: Final[Spec] = (K_ANY,)
_BOUNDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})


def _keywords(node: dict[str, Any]) -> set[str]:
    return {k for k in node if k not in NOOP and not k.startswith("x-")}


def _safe_types(names: Any) -> tuple[tuple[type, ...], bool] | None:
    """The exact scalar types every value of which ``type: names`` accepts, and whether a float
    must be finite (a number without null: NaN is written as null). Containers are left out (a
    dict or list value goes to the statements)."""
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    types = tuple(t for t in pure_types(sorted(names)) if t not in (dict, list))
    return types, "number" in names and "null" not in names


def value_spec(resolve: Any, node: Any) -> Spec | None:
    """The spec of a schema node (``resolve`` follows ``$ref``), or None when the node judges
    more than types, int bounds, a dict of scalars or a list of such values."""
    node = resolve(node)
    if node is True:
        return ANY
    if not isinstance(node, dict):
        return None
    kw = _keywords(node)
    if not kw:
        return ANY
    if kw == {"const"} and type(node["const"]) in (str, int, bool, type(None)):
        return (K_CONST, node["const"])  # a value of its exact type, equal to it
    if "type" not in kw:
        return None
    found = _safe_types(node["type"])
    if found is None:
        return None
    types, finite = found
    if kw == {"type"}:
        return (K_TYPES, types, finite)
    if kw <= {"type"} | _BOUNDS:
        bounds = int_bounds([node])
        if bounds is None or int not in types:
            return None
        others = tuple(t for t in types if t not in (int, float))  # bounds judge numbers
        return (K_INT, others, False, *bounds)
    if kw == {"type", "additionalProperties"} and node["type"] == "object":
        sub = value_spec(resolve, node["additionalProperties"])
        return (K_SCALARS, sub[1], sub[2]) if sub is not None and sub[0] == K_TYPES else None
    if kw == {"type", "items"} and node["type"] == "array":
        sub = value_spec(resolve, node["items"])
        return None if sub is None else (K_LIST, sub)
    return None
