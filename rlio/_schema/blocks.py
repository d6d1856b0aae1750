"""Pieces of a compiled schema check, for hot paths that build their own specialised predicate.

``compile_schema`` judges one whole instance. The writer knows more than that: a metrics line's
``step`` arrives apart from the metrics, and a rollout-summary record in documented key order can
be checked, reordered and cross-checked in one pass. These helpers give such callers the exact
per-node checks of ``rlio._schema.compiler`` (the same generated statements, so the same verdicts as
python-jsonschema) to assemble their own functions from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from rlio._schema.compiler import _Gen, _indent
from rlio._schema.model import NOOP, Context, interpret

__all__ = ["BlockCompiler", "compile_key_check", "indent", "is_per_key", "per_key_subschemas"]

#: Object keywords whose verdict on an object is the conjunction of verdicts on single keys.
_PER_KEY: Final = frozenset({"type", "properties", "patternProperties", "additionalProperties"})


class BlockCompiler:
    """Statements checking one schema node, and a namespace to compile functions made of them.

    ``block(node, var)`` returns Python statements that ``return False`` when the value named
    ``var`` is invalid against ``node`` (a subschema of the root given here) and fall through when
    it is valid; ``define`` compiles a function that uses them.
    """

    def __init__(self, root: dict[str, Any], *, gen: type[_Gen] = _Gen) -> None:
        self.ctx = Context(root)
        self._gen = gen(self.ctx)

    def resolve(self, node: Any) -> Any:
        """``node`` with ``$ref``-only wrappers followed (the schema they point to)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node and all(
            k == "$ref" or k in NOOP for k in node
        ):
            node = self.ctx.refs[node["$ref"]]
            seen += 1
            if seen > 64:
                raise ValueError("$ref chain does not end")
        return node

    def block(self, node: Any, var: str, depth: int = 1) -> list[str]:
        """Statements: ``return False`` unless the value named ``var`` is valid against ``node``.

        ``depth`` is the nesting the statements will sit at (deeper checks become calls, as
        CPython allows 20 nested blocks).
        """
        return self._gen.block(node, var, depth)

    def const(self, obj: Any) -> str:
        """The name under which ``obj`` is visible to the compiled functions."""
        return self._gen.const(obj, "_c")

    def define(self, source: str, name: str) -> Callable[..., Any]:
        """Compile ``source`` (one or more ``def``) in the checks' namespace; return ``name``."""
        self._gen.src.append(source)
        self._gen.flush()
        return self.get(name)

    def get(self, name: str) -> Callable[..., Any]:
        """A function compiled earlier by ``define``."""
        fn: Callable[..., Any] = self._gen.ns[name]
        return fn


def indent(lines: list[str], levels: int = 1) -> list[str]:
    """``lines`` indented by ``levels`` steps of four spaces."""
    return _indent(lines, levels)


def is_per_key(schema: Any) -> bool:
    """Whether ``schema`` judges an object as the conjunction of verdicts on its single keys
    (only ``type: object``, ``properties``, ``patternProperties``, ``additionalProperties``)."""
    return isinstance(schema, dict) and schema.get("type", "object") == "object" and all(
        k in _PER_KEY or k in NOOP or k.startswith("x-") for k in schema
    )


def per_key_subschemas(ctx: Context, schema: dict[str, Any], key: Any) -> list[Any]:
    """The subschemas of a per-key ``schema`` that judge the value at ``key`` (python-jsonschema's
    rule: ``properties``, every matching ``patternProperties``, else ``additionalProperties``)."""
    props: dict[str, Any] = schema.get("properties", {})
    pats: dict[str, Any] = schema.get("patternProperties", {})
    text = isinstance(key, str)
    subs = [props[key]] if key in props else []
    subs += [sub for p, sub in pats.items() if text and ctx.rx[p].search(key)]
    joined = "|".join(pats)  # jsonschema's additionalProperties rule (see _Keyed.subschemas)
    if key not in props and not (joined and text and re.search(joined, key)):
        subs.append(schema.get("additionalProperties", True))
    return subs


def compile_key_check(schema: dict[str, Any], key: str) -> Callable[[Any], bool] | None:
    """A predicate of the value at ``key`` alone, when ``schema`` judges objects key by key.

    For such a schema (only ``type: object``, ``properties``, ``patternProperties`` and
    ``additionalProperties``), a dict ``d`` without ``key`` is valid with ``key: v`` added exactly
    when ``d`` is valid and the predicate holds for ``v``: the writer checks a metrics line's
    ``step`` apart from the metrics, without copying them into a new dict. None for any other
    schema (a ``required``, a ``$ref`` at the root, a ``minProperties``...).
    """
    if not is_per_key(schema):
        return None
    comp = BlockCompiler(schema)
    subs = per_key_subschemas(comp.ctx, schema, key)
    body = [line for sub in subs for line in comp.block(sub, "x", 2)]
    deep = comp.const(lambda x: all(interpret(comp.ctx, sub, x) for sub in subs))
    source = "\n".join(["def _key_check(x):", "    try:", *indent([*body, "return True"], 2),
                        "    except RecursionError:", f"        return {deep}(x)"])
    check: Callable[[Any], bool] = comp.define(source, "_key_check")
    return check
