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

import _thread  # its lock, without the threading module a small run never needs
import functools
import re
from collections import namedtuple
from collections.abc import Callable
from types import CodeType

from rlio._schema.bound import Keyed, Matched
from rlio._schema.model import (
    JSON_TYPES,
    NOOP,
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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, NamedTuple

_MISSING: Final = object()
_INLINE_MAX: Final = 60  # subschema nodes; a larger non-recursive $ref target becomes a call
_DEPTH_MAX: Final = 12  # nesting of inlined blocks before a call (CPython allows 20 static blocks)
#: How a cached module rebuilds a bound constant, by its name's prefix (others: ``value``).
_KINDS: Final = {"_ts": "types", "_re": "regex", "_generic": "lazy"}


def compile_schema(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """Return a predicate that is True exactly when an instance is valid against ``schema``.

    Raises:
        NotImplementedError: the schema uses a keyword, ``$schema`` or ``$ref`` form this compiler
            does not implement (named in the message) rather than silently ignoring it.
        ValueError: the schema is malformed (bad type name, regex, unresolvable ``$ref``...).
    """
    return generate(schema).check


if TYPE_CHECKING:

    class Generated(NamedTuple):
        """A compiled schema: its predicate, the namespace and code of the generated module, and
        how each bound object can be rebuilt (``value``, ``types``, ``regex`` or ``lazy``)."""

        check: Callable[[Any], bool]
        ns: dict[str, Any]
        kinds: dict[str, str]
        code: CodeType

else:  # the same class without typing.NamedTuple's cost at import (its string annotations)
    Generated = namedtuple("Generated", ("check", "ns", "kinds", "code"))
    Generated.__doc__ = "A compiled schema: predicate, namespace, binding kinds and code."


def base_namespace() -> dict[str, Any]:
    """The helpers every generated module binds."""
    return {"_JT": JSON_TYPES, "_M": _MISSING, "_equal": equal, "_enum": enum_has,
            "_uniq": unique, "_mult": multiple_of}


def matcher(pattern: str) -> Callable[[str], bool]:
    """The memoising matcher of one ``pattern`` the generated code calls."""
    return Matched(re.compile(pattern))


def generate(schema: dict[str, Any]) -> Generated:
    """Generate, compile and run the predicate module of ``schema`` (see ``compile_schema``)."""
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
    code = gen.flush()
    check: Callable[[Any], bool] = gen.ns["_check"]
    return Generated(check, gen.ns, dict(gen.kinds), code)


# ------------------------------------------------------------------------------ code generator


def _indent(lines: list[str], levels: int = 1) -> list[str]:
    pad = "    " * levels
    return [pad + line for line in lines]


class _Gen:
    """Emits Python source for schema nodes; ``block`` lines ``return False`` on failure."""

    def __init__(self, ctx: Context) -> None:
        self.c = ctx
        self.ns: dict[str, Any] = base_namespace()
        self.kinds: dict[str, str] = {}  # bound name -> how a cached module rebuilds it
        self.src: list[str] = []
        self.funcs: dict[int, str] = {}
        self.consts: dict[tuple[str, int], str] = {}
        self.keep: list[Any] = []  # keeps ids of bound objects unique
        self.matched: dict[str, str] = {}
        self.n = 0
        self.lock = _thread.allocate_lock()

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, obj: Any, prefix: str = "_k") -> str:
        key = (prefix, id(obj))
        if key not in self.consts:
            self.consts[key] = name = self.name(prefix)
            self.ns[name] = obj
            self.kinds[name] = _KINDS.get(prefix, "value")
            self.keep.append(obj)
        return self.consts[key]

    def interp(self, s: Any) -> str:
        """Name of the interpreter for ``s``: the path for non-JSON types and deep documents."""
        key = ("_i", id(s))
        if key not in self.consts:
            self.consts[key] = name = self.name("_i")
            self.ns[name] = functools.partial(interpret, self.c, s)
            self.kinds[name] = "lazy"
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

    def flush(self) -> CodeType:
        source, self.src = "\n\n".join(self.src), []
        code = compile(source, "<rlio._schema.compiler>", "exec")
        exec(code, self.ns)
        return code

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
                self.matched[s["pattern"]] = self.const(Matched(self.c.rx[s["pattern"]]), "_re")
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
            keyed = Keyed(self, s)
            f = self.name("g")
            lay, miss = self.const(keyed.layouts, "_lay"), self.const(keyed.miss, "_miss")
            self.kinds[lay], self.kinds[miss] = "layouts", "keyed"
            out += [f"{f} = {lay}.get(tuple({v}))", f"if {f} is None:",
                    f"    if not {miss}({v}): return False", f"elif not {f}({v}): return False"]
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
