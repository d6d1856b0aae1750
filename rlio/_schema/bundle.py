"""All shipped schemas as one self-contained document, for tools that know nothing of rlio.

Each schema becomes ``$defs/<name>`` of the bundle, without its own ``$id`` and ``$schema``, and
every reference inside it (``#/$defs/x``, ``#``) is rewritten to point into the bundle, so any
JSON Schema 2020-12 implementation resolves the whole document with no registry and no retrieval.
"""

from __future__ import annotations

from typing import Any, Final

from rlio._schema.loader import SCHEMA_NAMES, load_schema

BUNDLE_ID: Final = "urn:rlio:schema:bundle:1"
_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


def _rewrite(node: Any, prefix: str) -> Any:
    """A copy of ``node`` whose local ``$ref`` values are moved under JSON pointer ``prefix``."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#"):
                out[key] = "#" + prefix + value[1:]
            else:
                out[key] = _rewrite(value, prefix)
        return out
    if isinstance(node, list):
        return [_rewrite(item, prefix) for item in node]
    return node


def bundle_schema(root: str | None = None) -> dict[str, Any]:
    """The bundle: every schema under ``$defs/<name>``; the root accepts anything, or, with
    ``root``, is a ``$ref`` to that schema (a one-file schema for one file type).

    Raises:
        ValueError: ``root`` is not a schema name.
    """
    if root is not None and root not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {root!r}; expected one of {', '.join(SCHEMA_NAMES)}")
    defs: dict[str, Any] = {}
    for name in SCHEMA_NAMES:
        doc = {k: v for k, v in load_schema(name).items() if k not in ("$schema", "$id")}
        doc = _rewrite(doc, f"/$defs/{name}")
        defs[name] = {"$comment": f"shipped as {load_schema(name)['$id']}", **doc}
    bundle: dict[str, Any] = {
        "$schema": _DIALECT,
        "$id": BUNDLE_ID if root is None else f"{BUNDLE_ID}:{root}",
        "title": "rlio run-directory schemas" + ("" if root is None else f" (root: {root})"),
        "description": "Every file type of an rlio run directory (format contract: docs/format.md)"
        ". Validate one file type against #/$defs/<name>; `rlio schema NAME --bundle` puts that "
        "reference at the root.",
    }
    if root is not None:
        bundle["$ref"] = f"#/$defs/{root}"
    bundle["$defs"] = defs
    return bundle
