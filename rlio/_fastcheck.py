"""Compile a JSON Schema into a fast Python predicate: the validity verdict of rlio's hot paths.

``compile_schema`` generates specialised Python source for one schema (exact ``type(x) is dict``
tests, required keys fetched in one ``try``, non-recursive ``$ref`` targets inlined, one function
per recursive ``$defs`` entry) and ``exec``s it once. The verdict matches python-jsonschema's
``is_valid`` for the draft the schema declares (06, 07, 2019-09, 2020-12; 2020-12 when absent).

Two slow paths keep it exact without slowing the common case: values that are not plain JSON types
(subclasses, ``Decimal``, tuples) and documents nested past the interpreter's recursion limit are
judged by an iterative interpreter (``_interp``) that walks the schema with an explicit stack.
Objects with ``patternProperties`` get one compiled function per key layout seen twice (metrics
lines repeat their keys), so no regex runs on the hot path. jsonschema is never imported here.
"""

from __future__ import annotations

import functools
import itertools
import numbers
import re
import threading
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Final
from urllib.parse import unquote

_DRAFTS: Final = {
    "http://json-schema.org/draft-06/schema": 6,
    "http://json-schema.org/draft-07/schema": 7,
    "https://json-schema.org/draft/2019-09/schema": 2019,
    "https://json-schema.org/draft/2020-12/schema": 2020,
}
_CORE: Final = frozenset(
    "$ref type enum const minimum maximum exclusiveMinimum exclusiveMaximum multipleOf minLength "
    "maxLength pattern minItems maxItems uniqueItems items contains properties required "
    "additionalProperties patternProperties propertyNames minProperties maxProperties allOf "
    "anyOf oneOf not".split()
)
_COND: Final = frozenset({"if", "then", "else"})
_NEW: Final = frozenset({"dependentRequired", "dependentSchemas", "minContains", "maxContains"})
_KEYWORDS: Final = {
    6: _CORE | {"additionalItems", "dependencies"},
    7: _CORE | _COND | {"additionalItems", "dependencies"},
    2019: _CORE | _COND | _NEW | {"additionalItems"},
    2020: _CORE | _COND | _NEW | {"prefixItems"},
}
#: Keywords that never change a verdict (annotations, containers, identifiers).
_ANNOTATIONS: Final = frozenset(
    "title description $id $schema $comment default examples format readOnly writeOnly deprecated "
    "contentMediaType contentEncoding contentSchema $defs definitions $anchor $vocabulary "
    "$dynamicAnchor $recursiveAnchor".split()
)
#: Keywords that do nothing on their own (read by a sibling: if, contains).
_NOOP: Final = _ANNOTATIONS | {"then", "else", "minContains", "maxContains"}
_TYPES: Final = ("object", "array", "string", "integer", "number", "boolean", "null")
#: The exact Python types a JSON parser produces; anything else takes the interpreter.
_JT: Final = frozenset({dict, list, str, int, float, bool, type(None)})
_EXACT: Final = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
_MISSING: Final = object()
_INLINE_MAX: Final = 60  # subschema nodes; a larger non-recursive $ref target becomes a call
_DEPTH_MAX: Final = 12  # nesting of inlined blocks before a call (CPython allows 20 static blocks)
_LAYOUTS_MAX: Final = 64  # compiled key layouts per patternProperties object
_SEEN_MAX: Final = 4096


def compile_schema(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """Return a predicate that is True exactly when an instance is valid against ``schema``.

    Raises:
        NotImplementedError: the schema uses a keyword, ``$schema`` or ``$ref`` form this compiler
            does not implement (named in the message) rather than silently ignoring it.
        ValueError: the schema is malformed (bad type name, regex, unresolvable ``$ref``...).
    """
    ctx = _Ctx(schema)
    gen = _Gen(ctx)
    slow = gen.interp(schema)
    if id(schema) in ctx.targets:  # the root is itself recursive: call its function
        body = [f"return {gen.func(schema)}(x)"]
    else:
        body = [*gen.block(schema, "x", 1), "return True"]
    gen.src.append(
        "\n".join(["def _check(x):", "    try:", *_indent(body, 2), "    except RecursionError:",
                   f"        return {slow}(x)"])
    )
    gen.flush()
    check: Callable[[Any], bool] = gen.ns["_check"]
    return check


def compile_iterative(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """The interpreter the compiled predicate falls back on (any depth; slow). For tests."""
    return functools.partial(_interp, _Ctx(schema), schema)


# ----------------------------------------------------------------- JSON semantics (jsonschema's)


def _is_type(x: Any, name: str) -> bool:
    """python-jsonschema's draft-06+ type test: bool is not a number, ``1.0`` is an integer."""
    exact = _EXACT.get(name)
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


def _equal(one: Any, two: Any) -> bool:
    """JSON equality as jsonschema has it: ``1 == 1.0`` but ``True != 1``, recursively."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(map(_equal, one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(k in two and _equal(v, two[k]) for k, v in one.items())
    return bool(_unbool(one) == _unbool(two))


def _enum(members: Iterable[Any], x: Any) -> bool:
    return any(_equal(m, x) for m in members)


def _uniq(items: list[Any]) -> bool:
    """Whether all items differ under ``_equal`` (jsonschema's algorithm: sort, else pairwise)."""
    try:
        ordered = sorted(_unbool(i) for i in items)
        return not any(_equal(a, b) for a, b in itertools.pairwise(ordered))
    except (NotImplementedError, TypeError):
        seen: list[Any] = []
        for item in map(_unbool, items):
            if any(_equal(s, item) for s in seen):
                return False
            seen.append(item)
        return True


def _multiple(x: Any, d: Any) -> bool:
    """Whether ``x`` is a multiple of ``d`` (float quotient first, exact fractions on overflow)."""
    if isinstance(d, float):
        try:
            q = x / d
            try:
                return bool(int(q) == q)
            except OverflowError:
                return (Fraction(x) / Fraction(d)).denominator == 1
        except (OverflowError, ValueError, TypeError):  # inf / nan: jsonschema raises; not a multiple
            return False
    return not x % d


# ---------------------------------------------------------------- schema scan: keywords and refs


class _Ctx:
    """One schema's draft, resolved ``$ref`` targets, compiled regexes and recursion facts."""

    def __init__(self, root: Any) -> None:
        if not isinstance(root, dict | bool):
            raise ValueError(f"a schema must be a JSON object or boolean, got {type(root).__name__}")
        uri = root.get("$schema") if isinstance(root, dict) else None
        draft = 2020 if uri is None else _DRAFTS.get(str(uri).rstrip("#"))
        if draft is None:
            raise NotImplementedError(f"$schema {uri!r} is not supported; expected one of "
                                      f"{', '.join(_DRAFTS)} (draft-06 or later)")
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
        out, stack = set(), [s]
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
        allowed = _KEYWORDS[self.draft]
        for kw in s:
            if kw not in allowed and kw not in _ANNOTATIONS and not kw.startswith("x-"):
                raise NotImplementedError(
                    f"unsupported JSON Schema keyword {kw!r} at {where} (draft {self.draft}); "
                    "rlio's schema compiler implements the draft-07 feature set"
                )
        if where != "#" and not str(s.get("$id", "#")).startswith("#"):
            raise NotImplementedError(f"nested $id at {where} (it would rebase $ref) is unsupported")
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
            if name not in _TYPES:
                raise ValueError(f"unknown type {name!r} at {where}/type; expected one of {_TYPES}")
        for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            v = s.get(kw, 1)
            if isinstance(v, bool) or not isinstance(v, int | float) or (kw == "multipleOf" and v <= 0):
                raise ValueError(f"{kw} at {where} must be a number{' > 0' * (kw == 'multipleOf')}"
                                 f", got {v!r}")
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
        base, hash_, frag = str(ref).partition("#")
        if (base and base != self.base) or (frag and not frag.startswith("/")):
            raise NotImplementedError(f"$ref {ref!r} at {where}: only local JSON-pointer refs "
                                      "('#/$defs/...') are supported")
        node = self.root
        for raw in frag.split("/")[1:]:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise ValueError(f"$ref {ref!r} at {where} does not resolve in this schema")
        self.refs[ref] = node
        return node


def _pure_types(names: list[str]) -> list[type]:
    """The exact Python types that satisfy ``type: names`` whatever their value."""
    pure = [_EXACT[n] for n in names if n in _EXACT]
    if "number" in names:
        pure += [float, int]
    elif "integer" in names:
        pure.append(int)
    return list(dict.fromkeys(pure))


def _trivial(s: Any) -> bool:
    """Whether ``s`` accepts everything (``true`` or only annotations)."""
    return s is True or (isinstance(s, dict) and all(k in _NOOP or k.startswith("x-") for k in s))


# ------------------------------------------------------------- iterative interpreter (slow path)

_Walk = Generator[tuple[Any, Any], Any, bool]


def _interp(ctx: _Ctx, schema: Any, instance: Any) -> bool:
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


def _walk(c: _Ctx, s: Any, x: Any) -> _Walk:
    """One schema node on one value; yields ``(subschema, value)`` and receives its verdict."""
    if s is True or s is False:
        return s
    if "$ref" in s:
        if not (yield c.refs[s["$ref"]], x):
            return False
        if c.draft < 2019:
            return True
    ty = s.get("type")
    if ty is not None and not any(_is_type(x, t) for t in ([ty] if isinstance(ty, str) else ty)):
        return False
    if ("enum" in s and not _enum(s["enum"], x)) or ("const" in s and not _equal(x, s["const"])):
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
    elif _is_type(x, "number"):
        if ("minimum" in s and x < s["minimum"]) or ("maximum" in s and x > s["maximum"]):
            return False
        if "exclusiveMinimum" in s and x <= s["exclusiveMinimum"]:
            return False
        if "exclusiveMaximum" in s and x >= s["exclusiveMaximum"]:
            return False
        if "multipleOf" in s and not _multiple(x, s["multipleOf"]):
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


def _walk_object(c: _Ctx, s: dict[str, Any], x: dict[Any, Any]) -> _Walk:
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
        joined = re.compile("|".join(pats)) if pats else None
        for k, v in x.items():
            if k not in props and not (joined and isinstance(k, str) and joined.search(k)):
                if not (yield s["additionalProperties"], v):
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


def _walk_array(c: _Ctx, s: dict[str, Any], x: list[Any]) -> _Walk:
    n = len(x)
    if n < s.get("minItems", 0) or n > s.get("maxItems", n):
        return False
    if s.get("uniqueItems") and not _uniq(x):
        return False
    prefix, rest = _item_schemas(s)
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


def _item_schemas(s: dict[str, Any]) -> tuple[list[Any], Any]:
    """(per-position schemas, schema for the rest) under the draft's items semantics."""
    items = s.get("items", True)
    if isinstance(items, list):  # draft-06..2019-09 tuple form
        return items, s.get("additionalItems", True)
    return list(s.get("prefixItems", ())), items


# ------------------------------------------------------------------------------ code generator


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    pad = "    " * levels
    return [pad + line for line in lines]


class _Gen:
    """Emits Python source for schema nodes; ``block`` lines ``return False`` on failure."""

    def __init__(self, ctx: _Ctx) -> None:
        self.c = ctx
        self.ns: dict[str, Any] = {"_JT": _JT, "_M": _MISSING, "_equal": _equal, "_enum": _enum,
                                   "_uniq": _uniq, "_mult": _multiple}
        self.src: list[str] = []
        self.funcs: dict[int, str] = {}
        self.consts: dict[tuple[str, int], str] = {}
        self.keep: list[Any] = []  # keeps ids of bound objects unique
        self.n = 0
        self.lock = threading.Lock()

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, obj: Any, prefix: str = "_k") -> str:
        key = (prefix, id(obj))
        if key not in self.consts:
            self.consts[key] = name = self.name(prefix)
            self.ns[name] = obj
            self.keep.append(obj)
        return self.consts[key]

    def interp(self, s: Any) -> str:
        """Name of the interpreter for ``s``: the path for non-JSON types and deep documents."""
        key = ("_i", id(s))
        if key not in self.consts:
            self.consts[key] = name = self.name("_i")
            self.ns[name] = functools.partial(_interp, self.c, s)
            self.keep.append(s)
        return self.consts[key]

    def func(self, s: Any) -> str:
        """Name of a generated function ``f(x) -> bool`` for ``s`` (created once)."""
        if id(s) not in self.funcs:
            self.funcs[id(s)] = name = self.name("_f")
            self.keep.append(s)
            body = [*self.block(s, "x", 1), "return True"]
            self.src.append("\n".join([f"def {name}(x):", *_indent(body)]))
        return self.funcs[id(s)]

    def flush(self) -> None:
        code, self.src = "\n\n".join(self.src), []
        exec(compile(code, "<rlio._fastcheck>", "exec"), self.ns)

    def lit(self, value: Any) -> str:
        """A source literal for a bound (ints, finite floats), else a bound constant's name."""
        if type(value) is int or (type(value) is float and repr(value) not in ("inf", "-inf", "nan")):
            return repr(value)
        return self.const(value)

    def block(self, s: Any, v: str, d: int) -> list[str]:
        """Statements checking the value named ``v`` against ``s`` (``d``: nesting depth)."""
        if _trivial(s):
            return []
        if s is False:
            return ["return False"]
        if d > _DEPTH_MAX:
            return [f"if not {self.func(s)}({v}): return False"]
        out: list[str] = []
        if "$ref" in s:
            target = self.c.refs[s["$ref"]]
            if id(target) in self.c.targets or self.c.size(target) > _INLINE_MAX:
                out.append(f"if not {self.func(target)}({v}): return False")
            else:
                out += self.block(target, v, d)
            if self.c.draft < 2019:
                return out
        out += self.typed(s, v, d)
        if "enum" in s:
            members = list(s["enum"])
            if members and all(type(m) is str for m in members):
                out.append(f"if not ({v} in {self.const(frozenset(members))} if type({v}) is str "
                           f"else _enum({self.const(members)}, {v})): return False")
            else:
                out.append(f"if not _enum({self.const(members)}, {v}): return False")
        if "const" in s:
            out.append(f"if not ({self.equals(s['const'], v)}): return False")
        for sub in s.get("allOf", ()):
            out += self.block(sub, v, d)
        if "anyOf" in s:
            out.append(f"if not ({' or '.join(self.expr(b, v) for b in s['anyOf']) or 'False'}): "
                       "return False")
        if "oneOf" in s:
            hits = " + ".join(f"({self.expr(b, v)})" for b in s["oneOf"]) or "0"
            out.append(f"if {hits} != 1: return False")
        if "not" in s:
            out.append(f"if {self.expr(s['not'], v)}: return False")
        if "if" in s:
            then = self.block(s.get("then", True), v, d + 1) or ["pass"]
            other = self.block(s.get("else", True), v, d + 1) or ["pass"]
            if then != other:
                out += [f"if {self.expr(s['if'], v)}:", *_indent(then), "else:", *_indent(other)]
        return out

    def equals(self, c: Any, v: str) -> str:
        """An expression: ``v`` equals the JSON value ``c``."""
        if type(c) is str:
            return f"{v} == {c!r}"
        if c is None or c is True or c is False:
            return f"{v} is {c!r}"
        if type(c) in (int, float) and self.lit(c) == repr(c):
            return f"{v} is not True and {v} is not False and {v} == {c!r}"
        return f"_equal({v}, {self.const(c)})"

    def expr(self, s: Any, v: str) -> str:
        """An expression for ``v`` is valid against ``s`` (a call unless ``s`` is tiny)."""
        if _trivial(s):
            return "True"
        if s is False:
            return "False"
        keys = {k for k in s if k not in _NOOP}
        if "$ref" in s and (keys == {"$ref"} or self.c.draft < 2019):
            target = self.c.refs[s["$ref"]]
            if id(target) in self.c.targets or not isinstance(target, dict) or "$ref" in target:
                return f"{self.func(target)}({v})"
            return self.expr(target, v)
        if keys == {"type"}:
            exact, inexact = self.type_tests(s["type"], v)
            return f"({' or '.join([*exact, *inexact])} or type({v}) not in _JT and {self.interp(s)}({v}))"
        if keys == {"const"}:
            return f"({self.equals(s['const'], v)})"
        return f"{self.func(s)}({v})"

    def type_tests(self, ty: Any, v: str) -> tuple[list[str], list[str]]:
        """(tests of exact JSON types accepted as is, the integer-valued-float test if any)."""
        names = [ty] if isinstance(ty, str) else list(ty)
        pure = _pure_types(names)
        exact = [f"{v} is None" if t is type(None) else f"type({v}) is {t.__name__}" for t in pure]
        if len(pure) > 2:
            exact = [f"type({v}) in {self.const(frozenset(pure), '_ts')}"]
        floats = "integer" in names and "number" not in names
        return exact, ([f"type({v}) is float and {v}.is_integer()"] if floats else [])

    def each(self, s: Any, items: str, e: str, d: int) -> list[str]:
        """Statements checking every value of the iterable ``items`` against ``s``."""
        body = self.block(s, e, d + 1)
        if not body:
            return []
        loop = [f"for {e} in {items}:", *_indent(body)]
        names = s.get("type") if isinstance(s, dict) and s.keys() - _NOOP == {"type"} else None
        if names is None or ("integer" in names and "number" not in names):
            return loop
        # Type-only schema: one C-level pass over the types; the loop runs only on a mismatch.
        superset = self.const(frozenset(_pure_types(names)).issuperset, "_sup")
        return [f"if not {superset}(map(type, {items})):", *_indent(loop)]

    def typed(self, s: dict[str, Any], v: str, d: int) -> list[str]:
        """The ``type`` test and the keywords that apply to one JSON type, dispatched by type."""
        names = None if "type" not in s else ([s["type"]] if isinstance(s["type"], str) else s["type"])
        bodies = {"object": self.object(s, v, d + 1), "array": self.array(s, v, d + 1),
                  "string": self.string(s, v), "number": self.number(s, v)}
        allowed = set(_TYPES if names is None else names)
        ok = allowed.__contains__
        cases: list[tuple[str, list[str]]] = []
        for jt, py in (("object", "dict"), ("array", "list"), ("string", "str")):
            if ok(jt) and bodies[jt]:
                cases.append((f"type({v}) is {py}", bodies[jt]))
        if (ok("number") or ok("integer")) and bodies["number"]:
            exact, floats = self.type_tests(["number"] if ok("number") else ["integer"], v)
            cases.append((" or ".join(exact + floats), bodies["number"]))
        if names is None:
            if not cases:
                return []
            tail = [f"elif type({v}) not in _JT and not {self.interp(s)}({v}): return False"]
        else:
            rest = [n for n in names if not (bodies.get("number" if n == "integer" else n))]
            exact, floats = self.type_tests(rest, v) if rest else ([], [])
            if exact or floats:
                cases.append((" or ".join(exact + floats), []))
            tail = [f"elif type({v}) in _JT or not {self.interp(s)}({v}): return False"]
            if len(cases) == 1 and not cases[0][1]:
                return [f"if not ({cases[0][0]}) and (type({v}) in _JT or not "
                        f"{self.interp(s)}({v})): return False"]
        out: list[str] = []
        for i, (cond, body) in enumerate(cases):
            out += [f"{'el' if i else ''}if {cond}:", *_indent(body or ["pass"])]
        if not cases:
            return [f"if type({v}) in _JT or not {self.interp(s)}({v}): return False"]
        return out + tail

    def number(self, s: dict[str, Any], v: str) -> list[str]:
        out = [f"if {v} {op} {self.lit(s[kw])}: return False" for kw, op in (
            ("minimum", "<"), ("maximum", ">"), ("exclusiveMinimum", "<="),
            ("exclusiveMaximum", ">=")) if kw in s]
        if "multipleOf" in s:
            out.append(f"if not _mult({v}, {self.lit(s['multipleOf'])}): return False")
        return out

    def string(self, s: dict[str, Any], v: str) -> list[str]:
        out = []
        if "minLength" in s:
            out.append(f"if len({v}) < {self.lit(s['minLength'])}: return False")
        if "maxLength" in s:
            out.append(f"if len({v}) > {self.lit(s['maxLength'])}: return False")
        if "pattern" in s:
            search = self.const(self.c.rx[s["pattern"]].search, "_re")
            out.append(f"if {search}({v}) is None: return False")
        return out

    def array(self, s: dict[str, Any], v: str, d: int) -> list[str]:
        out = []
        if "minItems" in s:
            out.append(f"if len({v}) < {self.lit(s['minItems'])}: return False")
        if "maxItems" in s:
            out.append(f"if len({v}) > {self.lit(s['maxItems'])}: return False")
        if s.get("uniqueItems"):
            out.append(f"if not _uniq({v}): return False")
        prefix, rest = _item_schemas(s)
        e = self.name("e")
        for i, sub in enumerate(prefix):
            body = self.block(sub, e, d + 1)
            if body:
                out += [f"if len({v}) > {i}:", f"    {e} = {v}[{i}]", *_indent(body)]
        if rest is False:
            out.append(f"if len({v}) > {len(prefix)}: return False")
        else:
            out += self.each(rest, f"{v}[{len(prefix)}:]" if prefix else v, e, d)
        if "contains" in s:
            hits = self.name("n")
            out += [f"{hits} = 0", f"for {e} in {v}:",
                    f"    if {self.expr(s['contains'], e)}: {hits} += 1",
                    f"if {hits} < {self.lit(s.get('minContains', 1))}: return False"]
            if "maxContains" in s:
                out.append(f"if {hits} > {self.lit(s['maxContains'])}: return False")
        return out

    def object(self, s: dict[str, Any], v: str, d: int) -> list[str]:
        props: dict[str, Any] = s.get("properties", {})
        required = list(dict.fromkeys(s.get("required", ())))
        ap = s.get("additionalProperties", True)
        out = []
        if "minProperties" in s:
            out.append(f"if len({v}) < {self.lit(s['minProperties'])}: return False")
        if "maxProperties" in s:
            out.append(f"if len({v}) > {self.lit(s['maxProperties'])}: return False")
        if "patternProperties" in s:
            if required:
                out.append(f"if not {v}.keys() >= {self.const(frozenset(required))}: return False")
            keyed = _Keyed(self, s)
            f = self.name("g")
            out += [f"{f} = {self.const(keyed.layouts, '_lay')}.get(tuple({v}))",
                    f"if {f} is None:",
                    f"    if not {self.const(keyed.miss, '_miss')}({v}): return False",
                    f"elif not {f}({v}): return False"]
        else:
            closed = ap is False
            if closed and not set(required) <= set(props):
                return ["return False"]
            if closed and set(required) == set(props):
                out.append(f"if len({v}) != {len(props)}: return False")
            elif closed:
                out.append(f"if not {v}.keys() <= {self.const(frozenset(props))}: return False")
            names = {k: self.name("p") for k in required if not _trivial(props.get(k, True))}
            if required:
                fetch = [f"{names[k]} = {v}[{k!r}]" if k in names else f"{v}[{k!r}]"
                         for k in required]
                out += ["try:", *_indent(fetch), "except KeyError:", "    return False"]
            for k, sub in props.items():
                if k in names:
                    out += self.block(sub, names[k], d)
                elif k not in required and (body := self.block(sub, (w := self.name("p")), d + 1)):
                    out += [f"{w} = {v}.get({k!r}, _M)", f"if {w} is not _M:", *_indent(body)]
            w, k = self.name("w"), self.name("k")
            if not closed and not props:
                out += self.each(ap, f"{v}.values()", w, d)
            elif not closed and (body := self.block(ap, w, d + 1)):
                out += [f"for {k}, {w} in {v}.items():",
                        f"    if {k} not in {self.const(frozenset(props))}:", *_indent(body, 2)]
        if "propertyNames" in s and (body := self.block(s["propertyNames"], (k := self.name("k")),
                                                        d + 1)):
            out += [f"for {k} in {v}:", *_indent(body)]
        for kw in ("dependencies", "dependentRequired", "dependentSchemas"):
            for key, dep in s.get(kw, {}).items():
                body = ([f"if not {v}.keys() >= {self.const(frozenset(dep))}: return False"]
                        if isinstance(dep, list) else self.block(dep, v, d + 1))
                if body:
                    out += [f"if {key!r} in {v}:", *_indent(body)]
        return out


class _Keyed:
    """properties/patternProperties/additionalProperties of one object schema, per key layout.

    A layout (the keys in order) seen twice gets a straight-line function; others are checked key
    by key with per-key cached lists of compiled checks.
    """

    def __init__(self, gen: _Gen, s: dict[str, Any]) -> None:
        self.gen = gen
        self.props: dict[str, Any] = s.get("properties", {})
        pats: dict[str, Any] = s["patternProperties"]
        self.pats = [(gen.c.rx[p].search, sub) for p, sub in pats.items()]
        joined = "|".join(pats)  # jsonschema joins the patterns to find additional properties
        try:
            self.joined = re.compile(joined).search if joined else None
        except re.error as exc:
            raise ValueError(f"patternProperties {list(pats)} do not join into one regex: {exc}")
        self.ap = s.get("additionalProperties", True)
        self.layouts: dict[tuple[Any, ...], Callable[[Any], bool]] = {}
        self.seen: dict[tuple[Any, ...], int] = {}
        self.checks: dict[Any, tuple[Callable[[Any], bool], ...]] = {}
        for sub in [*self.props.values(), *pats.values(), self.ap]:
            gen.func(sub)

    def subschemas(self, key: Any) -> list[Any]:
        """The schemas that judge the value at ``key`` (jsonschema's additionalProperties rule)."""
        text = isinstance(key, str)
        out = [self.props[key]] if key in self.props else []
        out += [sub for search, sub in self.pats if text and search(key)]
        if key not in self.props and not (self.joined and text and self.joined(key)):
            out.append(self.ap)
        return [sub for sub in out if not _trivial(sub)]

    def miss(self, v: dict[Any, Any]) -> bool:
        layout = tuple(v)
        seen = self.seen.get(layout, 0) + 1
        if seen >= 2 and len(self.layouts) < _LAYOUTS_MAX and len(layout) <= 1024:
            return self.compile(layout)(v)
        if len(self.seen) < _SEEN_MAX:
            self.seen[layout] = seen
        for k, w in v.items():
            checks = self.checks.get(k)
            if checks is None:
                checks = tuple(self.gen.ns[self.gen.funcs[id(sub)]] for sub in self.subschemas(k))
                if len(self.checks) < _SEEN_MAX:
                    self.checks[k] = checks
            for check in checks:
                if not check(w):
                    return False
        return True

    def compile(self, layout: tuple[Any, ...]) -> Callable[[Any], bool]:
        g = self.gen
        with g.lock:
            if layout not in self.layouts:
                name, names = g.name("_layout"), [g.name("a") for _ in layout]
                body = [f"{', '.join(names)}, = v.values()"] if layout else []
                body = ["try:", *_indent(body or ["pass"]), "except ValueError:",
                        f"    return {g.const(self.miss, '_miss')}(v)"]
                for key, a in zip(layout, names, strict=True):
                    for sub in self.subschemas(key):
                        body += g.block(sub, a, 1)
                g.src.append("\n".join([f"def {name}(v):", *_indent([*body, "return True"])]))
                g.flush()
                self.layouts[layout] = g.ns[name]
            return self.layouts[layout]
