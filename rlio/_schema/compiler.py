"""Compile a JSON Schema into a fast Python predicate: the validity verdict of rlio's hot paths.

``compile_schema`` generates specialised Python source for one schema (exact ``type(x) is dict``
tests, required keys fetched in one ``try``, non-recursive ``$ref`` targets inlined, one function
per recursive ``$defs`` entry) and ``exec``s it once. The verdict matches python-jsonschema's
``is_valid`` for the draft the schema declares (06, 07, 2019-09, 2020-12; 2020-12 when absent).

Two slow paths keep it exact without slowing the common case: values that are not plain JSON types
(subclasses, ``Decimal``, tuples) and documents nested past the interpreter's recursion limit are
judged by ``rlio._schema.model.interpret``, which walks the schema with an explicit stack. Objects
with ``patternProperties`` get one compiled function per key layout seen twice (metrics lines
repeat their keys), and strings known to match a ``pattern`` are memoised, so the hot path runs
no regex. jsonschema is never imported here.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from typing import Any, Final

from rlio._schema.model import (
    JSON_TYPES,
    NOOP,
    SEEN_MAX,
    TYPES,
    Context,
    enum_has,
    equal,
    interpret,
    item_schemas,
    multiple_of,
    pure_types,
    trivial,
    unique,
)

_MISSING: Final = object()
_INLINE_MAX: Final = 60  # subschema nodes; a larger non-recursive $ref target becomes a call
_DEPTH_MAX: Final = 12  # nesting of inlined blocks before a call (CPython allows 20 static blocks)
_LAYOUTS_MAX: Final = 64  # compiled key layouts per patternProperties object


def compile_schema(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """Return a predicate that is True exactly when an instance is valid against ``schema``.

    Raises:
        NotImplementedError: the schema uses a keyword, ``$schema`` or ``$ref`` form this compiler
            does not implement (named in the message) rather than silently ignoring it.
        ValueError: the schema is malformed (bad type name, regex, unresolvable ``$ref``...).
    """
    ctx = Context(schema)
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


# ------------------------------------------------------------------------------ code generator


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    pad = "    " * levels
    return [pad + line for line in lines]


class _Gen:
    """Emits Python source for schema nodes; ``block`` lines ``return False`` on failure."""

    def __init__(self, ctx: Context) -> None:
        self.c = ctx
        self.ns: dict[str, Any] = {"_JT": JSON_TYPES, "_M": _MISSING, "_equal": equal,
                                   "_enum": enum_has, "_uniq": unique, "_mult": multiple_of}
        self.src: list[str] = []
        self.funcs: dict[int, str] = {}
        self.consts: dict[tuple[str, int], str] = {}
        self.keep: list[Any] = []  # keeps ids of bound objects unique
        self.matched: dict[str, str] = {}
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
            self.ns[name] = functools.partial(interpret, self.c, s)
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
        exec(compile(code, "<rlio._schema.compiler>", "exec"), self.ns)

    def lit(self, value: Any) -> str:
        """A source literal for a bound (ints, finite floats), else a bound constant's name."""
        if type(value) is int or (type(value) is float and value - value == 0):  # finite
            return repr(value)
        return self.const(value)

    def block(self, s: Any, v: str, d: int) -> list[str]:
        """Statements checking the value named ``v`` against ``s`` (``d``: nesting depth)."""
        if trivial(s):
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
            if then == ["return False"] == other:  # either branch fails: the condition is moot
                out += then
            elif then != other:
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
        if trivial(s):
            return "True"
        if s is False:
            return "False"
        keys = {k for k in s if k not in NOOP}
        if "$ref" in s and (keys == {"$ref"} or self.c.draft < 2019):
            target = self.c.refs[s["$ref"]]
            if id(target) in self.c.targets or not isinstance(target, dict) or "$ref" in target:
                return f"{self.func(target)}({v})"
            return self.expr(target, v)
        if keys == {"type"}:
            exact, inexact = self.type_tests(s["type"], v)
            tests = " or ".join([*exact, *inexact])
            return f"({tests} or type({v}) not in _JT and {self.interp(s)}({v}))"
        if keys == {"const"}:
            return f"({self.equals(s['const'], v)})"
        return f"{self.func(s)}({v})"

    def type_tests(self, ty: Any, v: str) -> tuple[list[str], list[str]]:
        """(tests of exact JSON types accepted as is, the integer-valued-float test if any)."""
        names = [ty] if isinstance(ty, str) else list(ty)
        pure = pure_types(names)
        exact = [f"{v} is None" if t is type(None) else f"type({v}) is {t.__name__}" for t in pure]
        if len(pure) > 2:
            exact = [f"type({v}) in {self.const(frozenset(pure), '_ts')}"]
        floats = "integer" in names and "number" not in names
        return exact, ([f"type({v}) is float and {v}.is_integer()"] if floats else [])

    def each(self, s: Any, items: str, e: str, d: int) -> list[str]:
        """Statements checking every value of the iterable ``items`` against ``s``."""
        body = self.block(s, e, d + 1)
        return [f"for {e} in {items}:", *_indent(body)] if body else []

    def typed(self, s: dict[str, Any], v: str, d: int) -> list[str]:
        """The ``type`` test and the keywords that apply to one JSON type, dispatched by type."""
        ty = s.get("type")
        names = None if ty is None else [ty] if isinstance(ty, str) else ty
        bodies = {"object": self.object(s, v, d + 1), "array": self.array(s, v, d + 1),
                  "string": self.string(s, v), "number": self.number(s, v)}
        allowed = set(TYPES if names is None else names)
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
            if s["pattern"] not in self.matched:
                self.matched[s["pattern"]] = self.const(_Matched(self.c.rx[s["pattern"]]), "_re")
            memo = self.matched[s["pattern"]]
            out.append(f"if {v} not in {memo} and not {memo}({v}): return False")
        return out

    def array(self, s: dict[str, Any], v: str, d: int) -> list[str]:
        out = []
        if "minItems" in s:
            out.append(f"if len({v}) < {self.lit(s['minItems'])}: return False")
        if "maxItems" in s:
            out.append(f"if len({v}) > {self.lit(s['maxItems'])}: return False")
        if s.get("uniqueItems"):
            out.append(f"if not _uniq({v}): return False")
        prefix, rest = item_schemas(s)
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
            names = {k: self.name("p") for k in required if not trivial(props.get(k, True))}
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


class _Matched(dict[str, bool]):
    """Short strings known to match one regex: values repeat (splits, tags), searches cost."""

    def __init__(self, rx: re.Pattern[str]) -> None:
        super().__init__()
        self.search = rx.search

    def __call__(self, text: str) -> bool:
        if self.search(text) is None:
            return False
        if len(text) <= 64 and len(self) < SEEN_MAX:
            self[text] = True
        return True


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
            msg = f"patternProperties {list(pats)} do not join into one regex: {exc}"
            raise ValueError(msg) from None
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
        return [sub for sub in out if not trivial(sub)]

    def miss(self, v: dict[Any, Any]) -> bool:
        layout = tuple(v)
        seen = self.seen.get(layout, 0) + 1
        if seen >= 2 and len(self.layouts) < _LAYOUTS_MAX and len(layout) <= 1024:
            return self.compile(layout)(v)
        if len(self.seen) < SEEN_MAX:
            self.seen[layout] = seen
        return self.generic(v)

    def generic(self, v: dict[Any, Any]) -> bool:
        """Key by key, with the compiled checks that apply to each key cached."""
        for k, w in v.items():
            checks = self.checks.get(k)
            if checks is None:
                checks = tuple(self.gen.ns[self.gen.funcs[id(sub)]] for sub in self.subschemas(k))
                if len(self.checks) < SEEN_MAX:
                    self.checks[k] = checks
            for check in checks:
                if not check(w):
                    return False
        return True

    def compile(self, layout: tuple[Any, ...]) -> Callable[[Any], bool]:
        """The straight-line check of one key layout (values unpacked in order)."""
        g = self.gen
        with g.lock:
            if layout in self.layouts:
                return self.layouts[layout]
            state = (dict(g.funcs), dict(g.consts), list(g.src))
            try:
                name, names = g.name("_layout"), [g.name("a") for _ in layout]
                unpack = [f"{', '.join(names)}, = v.values()"] if layout else ["pass"]
                body = ["try:", *_indent(unpack), "except ValueError:  # resized meanwhile",
                        f"    return {g.const(self.generic, '_generic')}(v)"]
                for key, a in zip(layout, names, strict=True):
                    for sub in self.subschemas(key):
                        body += g.block(sub, a, 1)
                g.src.append("\n".join([f"def {name}(v):", *_indent([*body, "return True"])]))
                g.flush()
            except BaseException:  # e.g. RecursionError when first seen deep in a document
                g.funcs, g.consts, g.src = state
                raise
            self.layouts[layout] = g.ns[name]
            return self.layouts[layout]
