"""The JSON Schema model behind ``rlio._schema.compiler``: dialects, semantics, scan, interpreter.

``Context`` scans one schema (keywords allowed by its draft, local ``$ref`` targets, regexes,
which targets are recursive). ``interpret`` judges an instance with an explicit stack of
generator walkers, so it is exact at any nesting depth and for any Python type; the compiled
predicate uses it for non-JSON types and for documents nested past the recursion limit. The
semantics follow python-jsonschema's ``is_valid`` keyword by keyword (it is never imported here).
"""

from __future__ import annotations

import itertools
import numbers
import re
from collections.abc import Generator, Iterable, Mapping, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, TypeAlias

DRAFTS: Final = {
    "http://json-schema.org/draft-06/schema": 6,
    "http://json-schema.org/draft-07/schema": 7,
    "https://json-schema.org/draft/2019-09/schema": 2019,
    "https://json-schema.org/draft/2020-12/schema": 2020,
}
_CORE: Final = frozenset(
    {
        "$ref", "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "minItems",
        "maxItems", "uniqueItems", "items", "contains", "properties", "required",
        "additionalProperties", "patternProperties", "propertyNames", "minProperties",
        "maxProperties", "allOf", "anyOf", "oneOf", "not",
    }
)
_COND: Final = frozenset({"if", "then", "else"})
_NEW: Final = frozenset({"dependentRequired", "dependentSchemas", "minContains", "maxContains"})
KEYWORDS: Final = {
    6: _CORE | {"additionalItems", "dependencies"},
    7: _CORE | _COND | {"additionalItems", "dependencies"},
    2019: _CORE | _COND | _NEW | {"additionalItems"},
    2020: _CORE | _COND | _NEW | {"prefixItems"},
}
#: Keywords that never change a verdict (annotations, containers, identifiers).
ANNOTATIONS: Final = frozenset(
    {
        "title", "description", "$id", "$schema", "$comment", "default", "examples",
        "format", "readOnly", "writeOnly", "deprecated", "contentMediaType",
        "contentEncoding", "contentSchema", "$defs", "definitions", "$anchor",
        "$vocabulary", "$dynamicAnchor", "$recursiveAnchor",
    }
)
#: Keywords that do nothing on their own (read by a sibling: if, contains).
NOOP: Final = ANNOTATIONS | {"then", "else", "minContains", "maxContains"}
TYPES: Final = ("object", "array", "string", "integer", "number", "boolean", "null")
#: The exact Python types a JSON parser produces; anything else takes the interpreter.
JSON_TYPES: Final = frozenset({dict, list, str, int, float, bool, type(None)})
EXACT: Final = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
SEEN_MAX: Final = 4096  # bound of every per-value cache


# ----------------------------------------------------------------- JSON semantics (jsonschema's)


def is_type(x: Any, name: str) -> bool:
    """python-jsonschema's draft-06+ type test: bool is not a number, ``1.0`` is an integer."""
    exact = EXACT.get(name)
    if exact is not None:
        return x is None if exact is type(None) else isinstance(x, exact)
    if isinstance(x, bool):
        return False
    if name == "integer":
        return isinstance(x, int) or (isinstance(x, float) and x.is_integer())
    return isinstance(x, numbers.Number)


_TRUE, _FALSE = object(), object()


def _unbool(x: Any) -> Any:
    return _TRUE if x is True else _FALSE if x is False else x


def equal(one: Any, two: Any) -> bool:
    """JSON equality as jsonschema has it: ``1 == 1.0`` but ``True != 1``, recursively."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(map(equal, one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(k in two and equal(v, two[k]) for k, v in one.items())
    return bool(_unbool(one) == _unbool(two))


def enum_has(members: Iterable[Any], x: Any) -> bool:
    return any(equal(m, x) for m in members)


def unique(items: list[Any]) -> bool:
    """Whether all items differ under ``equal`` (jsonschema's algorithm: sort, else pairwise)."""
    try:
        ordered = sorted(_unbool(i) for i in items)
        return not any(equal(a, b) for a, b in itertools.pairwise(ordered))
    except (NotImplementedError, TypeError):
        seen: list[Any] = []
        for item in map(_unbool, items):
            if any(equal(s, item) for s in seen):
                return False
            seen.append(item)
        return True


def _unquote(text: str) -> str:
    """URL-unquote a ``$ref`` fragment part (``urllib.parse`` only for one that has a ``%``)."""
    if "%" not in text:
        return text
    from urllib.parse import unquote

    return unquote(text)


def multiple_of(x: Any, d: Any) -> bool:
    """Whether ``x`` is a multiple of ``d`` (float quotient first, exact fractions on overflow)."""
    if isinstance(d, float):
        try:
            q = x / d
            try:
                return bool(int(q) == q)
            except OverflowError:
                from fractions import Fraction

                return (Fraction(x) / Fraction(d)).denominator == 1
        except (OverflowError, ValueError, TypeError):  # inf, nan: jsonschema raises; say no
            return False
    return not x % d


# ---------------------------------------------------------------- schema scan: keywords and refs


class Context:
    """One schema's draft, resolved ``$ref`` targets, compiled regexes and recursion facts."""

    def __init__(self, root: Any) -> None:
        if not isinstance(root, dict | bool):
            raise ValueError(f"a schema must be a JSON object or boolean, not {root!r:.80}")
        uri = root.get("$schema") if isinstance(root, dict) else None
        draft = 2020 if uri is None else DRAFTS.get(str(uri).rstrip("#"))
        if draft is None:
            raise NotImplementedError(f"$schema {uri!r} is not supported; expected one of "
                                      f"{', '.join(DRAFTS)} (draft-06 or later)")
        self.draft: int = draft
        self.root = root
        self.base = str(root.get("$id", "")).rstrip("#") if isinstance(root, dict) else ""
        self.refs: dict[str, Any] = {}
        self.rx: dict[str, re.Pattern[str]] = {}
        self.kids: dict[int, tuple[list[Any], list[Any]]] = {}  # id -> (subschemas, ref targets)
        self.targets: set[int] = set()  # ids of ref targets that can reach themselves
        todo: list[tuple[Any, str]] = [(root, "#")]
        while todo:
            s, where = todo.pop()
            if id(s) not in self.kids:
                subs, refs = self._scan(s, where)
                self.kids[id(s)] = ([c for c, _ in subs], refs)
                todo.extend(subs)
                todo.extend((t, f"{where}/$ref") for t in refs)
        direct = {id(t): self._reach(t) for t in self.refs.values()}
        for key in direct:
            seen, stack = set(), list(direct[key])
            while stack:
                k = stack.pop()
                if k == key:
                    self.targets.add(key)
                    break
                if k not in seen:
                    seen.add(k)
                    stack.extend(direct.get(k, ()))

    def _reach(self, s: Any) -> set[int]:
        """Ids of the ``$ref`` targets named inside ``s`` (not following refs)."""
        out: set[int] = set()
        stack = [s]
        while stack:
            subs, refs = self.kids[id(stack.pop())]
            out.update(id(t) for t in refs)
            stack.extend(subs)
        return out

    def size(self, s: Any) -> int:
        """Subschema nodes inside ``s`` (not following refs): the inlining cost."""
        n, stack = 0, [s]
        while stack:
            n += 1
            stack.extend(self.kids[id(stack.pop())][0])
        return n

    def _scan(self, s: Any, where: str) -> tuple[list[tuple[Any, str]], list[Any]]:
        if isinstance(s, bool):
            return [], []
        if not isinstance(s, dict):
            raise ValueError(f"schema at {where} must be an object or boolean, got {s!r}")
        if "$ref" in s and self.draft < 2019:  # draft-06/07: siblings of $ref are ignored
            return [], [self._resolve(s["$ref"], where)]
        allowed = KEYWORDS[self.draft]
        for kw in s:
            if kw not in allowed and kw not in ANNOTATIONS and not kw.startswith("x-"):
                raise NotImplementedError(
                    f"unsupported JSON Schema keyword {kw!r} at {where} (draft {self.draft}); "
                    "rlio's schema compiler implements the draft-07 feature set"
                )
        if where != "#" and not str(s.get("$id", "#")).startswith("#"):
            raise NotImplementedError(f"unsupported nested $id at {where} (it rebases $ref)")
        self._check_values(s, where)
        subs: list[tuple[Any, str]] = []
        for kw in ("additionalProperties", "additionalItems", "contains", "propertyNames", "not",
                   "if", "then", "else"):
            if kw in s:
                subs.append((s[kw], f"{where}/{kw}"))
        for kw in ("properties", "patternProperties", "dependentSchemas", "dependencies"):
            for k, sub in s.get(kw, {}).items():
                if kw != "dependencies" or not isinstance(sub, list):
                    subs.append((sub, f"{where}/{kw}/{k}"))
        items = s.get("items")
        for kw, seq in (("items", items if isinstance(items, list) else None),
                        ("prefixItems", s.get("prefixItems")), ("allOf", s.get("allOf")),
                        ("anyOf", s.get("anyOf")), ("oneOf", s.get("oneOf"))):
            subs.extend((sub, f"{where}/{kw}/{i}") for i, sub in enumerate(seq or ()))
        if items is not None and not isinstance(items, list):
            subs.append((items, f"{where}/items"))
        refs = [self._resolve(s["$ref"], where)] if "$ref" in s else []
        return subs, refs

    def _check_values(self, s: dict[str, Any], where: str) -> None:
        ty = s.get("type", "object")
        for name in [ty] if isinstance(ty, str) else ty:
            if name not in TYPES:
                raise ValueError(f"unknown type {name!r} at {where}/type; expected one of {TYPES}")
        for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            v = s.get(kw, 1)
            bad = isinstance(v, bool) or not isinstance(v, int | float)
            if bad or (kw == "multipleOf" and v <= 0):
                raise ValueError(f"{kw} at {where} must be a number{' > 0' * (kw == 'multipleOf')}"
                                 f", got {v!r}")
        if self.draft == 2020 and isinstance(s.get("items"), list):
            raise ValueError(f"items at {where} is an array: in draft 2020-12 use prefixItems")
        if not all(isinstance(k, str) for k in s.get("required", [])):
            raise ValueError(f"required at {where} must list strings, got {s['required']!r}")
        for p in [s.get("pattern", ""), *s.get("patternProperties", {})]:
            try:
                self.rx[p] = re.compile(p)
            except (re.error, TypeError) as exc:
                raise ValueError(f"bad regex {p!r} at {where}: {exc}") from None

    def _resolve(self, ref: Any, where: str) -> Any:
        if ref in self.refs:
            return self.refs[ref]
        base, _, frag = str(ref).partition("#")
        if (base and base != self.base) or (frag and not frag.startswith("/")):
            raise NotImplementedError(f"unsupported $ref {ref!r} at {where}: only local "
                                      "JSON-pointer refs ('#/$defs/...') are implemented")
        node = self.root
        for raw in frag.split("/")[1:]:
            part = _unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif (isinstance(node, list) and part.isascii() and part.isdigit()
                  and int(part) < len(node)):
                node = node[int(part)]
            else:
                raise ValueError(f"$ref {ref!r} at {where} does not resolve in this schema")
        self.refs[ref] = node
        return node


def pure_types(names: list[str]) -> list[type]:
    """The exact Python types that satisfy ``type: names`` whatever their value."""
    pure = [EXACT[n] for n in names if n in EXACT]
    if "number" in names:
        pure += [float, int]
    elif "integer" in names:
        pure.append(int)
    return list(dict.fromkeys(pure))


def trivial(s: Any) -> bool:
    """Whether ``s`` accepts everything (``true`` or only annotations)."""
    return s is True or (isinstance(s, dict) and all(k in NOOP or k.startswith("x-") for k in s))


# ------------------------------------------------------------- iterative interpreter (slow path)

_Walk: TypeAlias = "Generator[tuple[Any, Any], Any, bool]"


def interpret(ctx: Context, schema: Any, instance: Any) -> bool:
    """Judge ``instance`` with an explicit stack of walkers: exact at any nesting depth."""
    stack: list[_Walk] = [_walk(ctx, schema, instance)]
    value: Any = None
    while True:
        try:
            sub, x = stack[-1].send(value)
        except StopIteration as stop:
            stack.pop()
            value = bool(stop.value)
            if not stack:
                return bool(value)
            continue
        stack.append(_walk(ctx, sub, x))
        value = None


def _walk(c: Context, s: Any, x: Any) -> _Walk:
    """One schema node on one value; yields ``(subschema, value)`` and receives its verdict."""
    if s is True or s is False:
        return s
    if "$ref" in s:
        if not (yield c.refs[s["$ref"]], x):
            return False
        if c.draft < 2019:
            return True
    ty = s.get("type")
    if ty is not None and not any(is_type(x, t) for t in ([ty] if isinstance(ty, str) else ty)):
        return False
    if ("enum" in s and not enum_has(s["enum"], x)) or ("const" in s and not equal(x, s["const"])):
        return False
    if isinstance(x, dict):
        if not (yield from _walk_object(c, s, x)):
            return False
    elif isinstance(x, list):
        if not (yield from _walk_array(c, s, x)):
            return False
    elif isinstance(x, str):
        if len(x) < s.get("minLength", 0) or len(x) > s.get("maxLength", len(x)):
            return False
        if "pattern" in s and not c.rx[s["pattern"]].search(x):
            return False
    elif is_type(x, "number"):
        if ("minimum" in s and x < s["minimum"]) or ("maximum" in s and x > s["maximum"]):
            return False
        if "exclusiveMinimum" in s and x <= s["exclusiveMinimum"]:
            return False
        if "exclusiveMaximum" in s and x >= s["exclusiveMaximum"]:
            return False
        if "multipleOf" in s and not multiple_of(x, s["multipleOf"]):
            return False
    for sub in s.get("allOf", ()):
        if not (yield sub, x):
            return False
    if "anyOf" in s:
        for sub in s["anyOf"]:
            if (yield sub, x):
                break
        else:
            return False
    if "oneOf" in s:
        hits = 0
        for sub in s["oneOf"]:
            hits += bool((yield sub, x))
        if hits != 1:
            return False
    if "not" in s and (yield s["not"], x):
        return False
    if "if" in s:
        branch = s.get("then" if (yield s["if"], x) else "else", True)
        if not (yield branch, x):
            return False
    return True


def _walk_object(c: Context, s: dict[str, Any], x: dict[Any, Any]) -> _Walk:
    if any(k not in x for k in s.get("required", ())):
        return False
    if len(x) < s.get("minProperties", 0) or len(x) > s.get("maxProperties", len(x)):
        return False
    props = s.get("properties", {})
    for k, sub in props.items():
        if k in x and not (yield sub, x[k]):
            return False
    pats = s.get("patternProperties", {})
    for p, sub in pats.items():
        for k, v in x.items():
            if isinstance(k, str) and c.rx[p].search(k) and not (yield sub, v):
                return False
    if "additionalProperties" in s:
        joined = re.compile("|".join(pats)) if "|".join(pats) else None  # jsonschema's quirk
        for k, v in x.items():
            additional = k not in props and not (joined and isinstance(k, str) and joined.search(k))
            if additional and not (yield s["additionalProperties"], v):
                return False
    if "propertyNames" in s:
        for k in x:
            if not (yield s["propertyNames"], k):
                return False
    for kw in ("dependencies", "dependentRequired", "dependentSchemas"):
        for k, dep in s.get(kw, {}).items():
            if k in x:
                if isinstance(dep, list):
                    if any(d not in x for d in dep):
                        return False
                elif not (yield dep, x):
                    return False
    return True


def _walk_array(c: Context, s: dict[str, Any], x: list[Any]) -> _Walk:
    n = len(x)
    if n < s.get("minItems", 0) or n > s.get("maxItems", n):
        return False
    if s.get("uniqueItems") and not unique(x):
        return False
    prefix, rest = item_schemas(s)
    for sub, e in zip(prefix, x, strict=False):
        if not (yield sub, e):
            return False
    if rest is not True:
        for e in x[len(prefix):]:
            if not (yield rest, e):
                return False
    if "contains" in s:
        hits = 0
        for e in x:
            hits += bool((yield s["contains"], e))
        if hits < s.get("minContains", 1) or hits > s.get("maxContains", n):
            return False
    return True


def item_schemas(s: dict[str, Any]) -> tuple[list[Any], Any]:
    """(per-position schemas, schema for the rest) under the draft's items semantics."""
    items = s.get("items", True)
    if isinstance(items, list):  # draft-06..2019-09 tuple form
        return items, s.get("additionalItems", True)
    return list(s.get("prefixItems", ())), items
