"""The one checker per schema: a JSON Schema compiled once into a tree of small closures.

``compile_check(schema)`` returns ``check(instance) -> bool``, the validity verdict every part of
rlio asks (writer, validator, reader, report); python-jsonschema is used only to explain a record
that failed. The verdicts follow python-jsonschema's ``is_valid`` (draft 2020-12) for the keywords
the shipped schemas use; a schema holding any other validation keyword is refused at compile time,
so a new rule cannot be silently ignored.

A few compiled shapes keep it fast without a second engine (``benchmarks/writer_floor.py``,
``benchmarks/fleet.py`` and ``benchmarks/report_floor.py`` time them):

- a subschema that is only a ``type`` (or only an ``anyOf``: the union of its options') is known
  by its exact Python types, so a container tests a member's ``type(value)`` against that set in
  place instead of calling a function per value;
- ``type: object`` with its required keys (one subset test) and members is one function, as is
  ``type: array`` with its ``items``; a ``type`` with numeric bounds is one test (``allOf``
  members holding only bounds, such as a warning-level range, fold into their parent first; a
  lone ``minimum``, or one with a ``maximum``, is compared inline), and so is a ``type`` with a
  ``pattern``;
- an object's per-key checks (``properties``, ``patternProperties``, ``additionalProperties``)
  are resolved once per key name and kept (at most ``_KEY_MEMO`` names per object schema), with
  the exact types every subschema of that key accepts, since a metrics line repeats its keys
  every step and its ``^time/``-style regexes would otherwise run per key per line.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

Check = Callable[[Any], bool]
#: A compiled subschema: the exact types it accepts whatever the value (non-empty only for a
#: subschema that is a bare ``type``), and its check. A value is valid when ``type(value)`` is
#: in the set or the check passes.
Typed = tuple[frozenset[type], Check]

#: Keywords that carry no rule (annotations, and the container of definitions).
_ANNOTATIONS: Final = frozenset({
    "$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples",
    "x-rlio-severity", "deprecated", "readOnly", "writeOnly",
})
#: Keywords this checker implements; any other keyword in a schema is refused.
_RULES: Final = frozenset({
    "type", "const", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "properties", "patternProperties",
    "additionalProperties", "required", "items", "anyOf", "allOf", "oneOf", "not", "if", "then",
    "else", "$ref",
})
#: Distinct key names remembered per object schema (a bound, so hostile input cannot grow it).
_KEY_MEMO: Final = 4096
_NONE: Final[frozenset[type]] = frozenset()


def _always(_: Any) -> bool:
    return True


def _never(_: Any) -> bool:
    return False


ALWAYS: Final[Typed] = (_NONE, _always)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


#: Each JSON type's test, as python-jsonschema's draft 2020-12 type checker has it.
_TYPE_TESTS: Final[dict[str, Check]] = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_integer,
    "null": lambda v: v is None,
    "number": _is_number,
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}
#: The exact Python types each JSON type accepts whatever the value (a float is an integer only
#: when integral, so it needs the test).
_EXACT: Final[dict[str, frozenset[type]]] = {
    "array": frozenset({list}), "boolean": frozenset({bool}), "integer": frozenset({int}),
    "null": frozenset({type(None)}), "number": frozenset({int, float}),
    "object": frozenset({dict}), "string": frozenset({str}),
}

_JSON_TYPES: Final = frozenset().union(*_EXACT.values())


def equal(one: Any, two: Any) -> bool:
    """JSON equality as python-jsonschema has it (``const``, ``enum``): 1 == 1.0, True != 1."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return bool(one == two)


class _Compiler:
    """Compiles the subschemas of one root document; ``$ref`` targets are compiled once each."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.refs: dict[str, Typed] = {}
        self.cells: dict[str, list[Check]] = {}

    def node(self, schema: Any) -> Typed:
        """One subschema (an object or a boolean), compiled."""
        if schema is True or schema == {}:
            return ALWAYS
        if schema is False:
            return _NONE, _never
        if not isinstance(schema, dict):
            raise ValueError(f"a subschema must be an object or a boolean, got {schema!r}")
        unknown = set(schema) - _RULES - _ANNOTATIONS
        if unknown:
            raise ValueError(f"schema keyword(s) {sorted(unknown)} are not supported")
        schema = _fold_bounds(schema)
        rules = set(schema) - _ANNOTATIONS
        if rules == {"type"}:
            return self._type(schema["type"])
        if rules == {"anyOf"}:  # a type valid for one option whatever the value is valid
            options = [self.node(s) for s in schema["anyOf"]]
            return frozenset().union(*(e for e, _ in options)), _any_of(options)
        if rules == {"type", "pattern"}:
            return _NONE, _typed_pattern(self._type(schema["type"]), schema["pattern"])
        if "type" in schema and rules - {"type"} <= set(_BOUNDS):
            return _NONE, _typed_bounds(self._type(schema["type"]),
                                        {k: schema[k] for k in rules - {"type"}})
        if schema.get("type") == "object":
            checks = [self._object(schema)]
        elif schema.get("type") == "array" and "items" in schema:
            checks = self._array(schema, typed=True)
            schema = {k: v for k, v in schema.items() if k != "items"}  # its items are judged
            checks += [c for c in (self._members(schema), self._required(schema)) if c]
        else:
            checks = [_whole(self._type(schema["type"]))] if "type" in schema else []
            checks += [c for c in (self._members(schema), self._required(schema)) if c]
        checks += [*self._scalar(schema), *self._array(schema), *self._logic(schema)]
        return _NONE, _all_of(checks)

    # -- the keywords, by the kind of instance they apply to --------------------------------

    def _type(self, type_: str | list[str]) -> Typed:
        names = type_ if isinstance(type_, list) else [type_]
        exact = frozenset().union(*(_EXACT[name] for name in names))
        tests = [_TYPE_TESTS[name] for name in names]
        # JSON's own types outside ``exact`` fail at once (but an integral float may be an integer)
        refused = _JSON_TYPES - exact - ({float} if "integer" in names else set())

        def check_type(value: Any) -> bool:  # the rest: a subclass, or an integral float
            return type(value) not in refused and any(test(value) for test in tests)

        return exact, check_type

    def _scalar(self, schema: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "const" in schema:
            out.append(_const(schema["const"]))
        if "enum" in schema:
            options = list(schema["enum"])
            out.append(lambda v: any(equal(v, o) for o in options))
        if "pattern" in schema:
            search = re.compile(schema["pattern"]).search
            out.append(lambda v: not isinstance(v, str) or search(v) is not None)
        if "minLength" in schema:
            low = schema["minLength"]
            out.append(lambda v: not isinstance(v, str) or len(v) >= low)
        if "maxLength" in schema:
            high = schema["maxLength"]
            out.append(lambda v: not isinstance(v, str) or len(v) <= high)
        for key, test in _BOUNDS.items():
            if key in schema:
                out.append(_bound(test, schema[key]))
        return out

    def _object(self, schema: dict[str, Any]) -> Check:
        """``type: object`` with its object keywords, in one function (the common node)."""
        required = tuple(schema.get("required", ()))
        names = frozenset(required)
        members = self._members(schema, typed=True) or _always

        def check_object(value: Any) -> bool:
            if type(value) is dict:  # one set test; a subclass asks its own ``in``
                return names <= value.keys() and members(value)
            if not isinstance(value, dict) or not all(map(value.__contains__, required)):
                return False
            return members(value)

        return check_object

    def _required(self, schema: dict[str, Any]) -> Check | None:
        if "required" not in schema:
            return None
        names = tuple(schema["required"])
        return lambda v: not isinstance(v, dict) or all(name in v for name in names)

    def _members(self, schema: dict[str, Any], *, typed: bool = False) -> Check | None:
        """The per-key keywords; ``typed``: the caller has already seen a dict."""
        if not any(k in schema for k in ("properties", "patternProperties",
                                         "additionalProperties")):
            return None
        props = {k: self.node(s) for k, s in schema.get("properties", {}).items()}
        patterns = [(re.compile(p).search, self.node(s))
                    for p, s in schema.get("patternProperties", {}).items()]
        extra = self.node(schema.get("additionalProperties", True))
        check = (_listed_members(props) if not patterns and extra is ALWAYS
                 else _keyed_members(props, patterns, extra))
        if typed:
            return check
        return lambda v: not isinstance(v, dict) or check(v)

    def _array(self, schema: dict[str, Any], *, typed: bool = False) -> list[Check]:
        """``items``; ``typed``: also ``type: array`` (a value that is no list fails)."""
        compiled = self.node(schema["items"]) if "items" in schema else ALWAYS
        if compiled is ALWAYS and not typed:
            return []
        exact, item = compiled

        def check_items(value: Any) -> bool:
            if type(value) is not list and not isinstance(value, list):
                return not typed
            if not exact:
                return all(map(item, value))
            for x in value:  # noqa: SIM110 (a loop: all() with a generator costs more per item)
                if type(x) not in exact and not item(x):
                    return False
            return True

        return [check_items]

    def _logic(self, schema: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "allOf" in schema:
            out.append(_all_of([_whole(self.node(s)) for s in schema["allOf"]]))
        if "anyOf" in schema:
            out.append(_any_of([self.node(s) for s in schema["anyOf"]]))
        if "oneOf" in schema:
            ones = [_whole(self.node(s)) for s in schema["oneOf"]]
            out.append(lambda v: sum(1 for c in ones if c(v)) == 1)
        if "not" in schema:
            negated = _whole(self.node(schema["not"]))
            out.append(lambda v: not negated(v))
        if "if" in schema:
            test = _whole(self.node(schema["if"]))
            then = _whole(self.node(schema.get("then", True)))
            other = _whole(self.node(schema.get("else", True)))
            out.append(lambda v: then(v) if test(v) else other(v))
        if "$ref" in schema:
            out.append(_whole(self.ref(schema["$ref"])))
        return out

    def ref(self, pointer: str) -> Typed:
        """A local reference (``#`` or ``#/$defs/name``), compiled once; a reference back into a
        target still being compiled goes through a cell filled in when it is done."""
        if pointer in self.refs:
            return self.refs[pointer]
        if pointer in self.cells:
            cell = self.cells[pointer]
            return _NONE, lambda v: cell[0](v)
        cell = self.cells[pointer] = [_never]
        compiled = self.refs[pointer] = self.node(self._target(pointer))
        cell[0] = _whole(compiled)
        return compiled

    def _target(self, pointer: str) -> Any:
        if not pointer.startswith("#"):
            raise ValueError(f"only local references are supported, got {pointer!r}")
        node = self.root
        for part in filter(None, pointer[1:].split("/")):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node


def _whole(typed: Typed) -> Check:
    """A compiled subschema as one function of the value."""
    exact, check = typed
    if not exact:
        return check
    return lambda v: type(v) in exact or check(v)


def _fold_bounds(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``allOf`` member that holds only bounds (a warning-level range, say)
    merged into it when the keyword is not already there: the same verdicts, one node."""
    members = schema.get("allOf")
    if not isinstance(members, list):
        return schema
    out, kept = dict(schema), []
    for member in members:
        rules = set(member) - _ANNOTATIONS if isinstance(member, dict) else {"?"}
        if rules <= set(_BOUNDS) and not rules & set(out):
            out.update((k, member[k]) for k in rules)
        else:
            kept.append(member)
    if kept:
        out["allOf"] = kept
    else:
        del out["allOf"]
    return out


def _typed_bounds(typed: Typed, bounds: dict[str, Any]) -> Check:
    """A ``type`` with numeric bounds (counts, steps, durations, fractions): for an int or a
    float one inline test of a lone ``minimum`` or a ``minimum`` with a ``maximum``; the bounds
    apply to numbers only."""
    exact, check_type = typed
    numeric = exact & {int, float}
    tests = [(_BOUNDS[k], limit) for k, limit in bounds.items()]

    def in_bounds(value: Any) -> bool:
        return all(test(value, limit) for test, limit in tests)

    def check_bounded(value: Any) -> bool:
        t = type(value)
        if t in numeric:
            return in_bounds(value)
        if t in exact:
            return True
        return check_type(value) and (not _is_number(value) or in_bounds(value))

    low, high = bounds.get("minimum"), bounds.get("maximum")

    def check_minimum(value: Any) -> bool:
        if type(value) in numeric:
            return not value < low
        return check_bounded(value)

    def check_range(value: Any) -> bool:
        if type(value) in numeric:
            return not value < low and not value > high
        return check_bounded(value)

    return {frozenset({"minimum"}): check_minimum,
            frozenset({"minimum", "maximum"}): check_range}.get(frozenset(bounds), check_bounded)


def _typed_pattern(typed: Typed, pattern: str) -> Check:
    """A ``type`` with a ``pattern`` (tags, splits, dates): one test for a str."""
    exact, check_type = typed
    search = re.compile(pattern).search

    def check_pattern(value: Any) -> bool:
        t = type(value)
        if t in exact:
            return t is not str or search(value) is not None
        return check_type(value) and (not isinstance(value, str) or search(value) is not None)

    return check_pattern


def _all_of(checks: list[Check]) -> Check:
    checks = [c for c in checks if c is not _always]
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)

    def check_all(value: Any) -> bool:
        for c in checks:  # noqa: SIM110 (a loop: all() with a generator costs more)
            if not c(value):
                return False
        return True

    return check_all


def _any_of(options: list[Typed]) -> Check:
    def check_any(value: Any) -> bool:
        t = type(value)
        for exact, check in options:  # noqa: SIM110 (a loop: any() with a generator costs more)
            if t in exact or check(value):
                return True
        return False

    return check_any


def _const(expected: Any) -> Check:
    if isinstance(expected, str):
        return lambda v: isinstance(v, str) and v == expected
    return lambda v: equal(v, expected)


#: Each bound as python-jsonschema tests it: by its failure (``x < minimum`` fails), so NaN,
#: which compares false with everything, passes every bound.
_BOUNDS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "minimum": lambda v, b: not v < b, "maximum": lambda v, b: not v > b,
    "exclusiveMinimum": lambda v, b: not v <= b, "exclusiveMaximum": lambda v, b: not v >= b,
}


def _bound(test: Callable[[Any, Any], bool], limit: Any) -> Check:
    def check_bound(value: Any) -> bool:
        t = type(value)
        if t is int or t is float:
            return test(value, limit)
        return not _is_number(value) or test(value, limit)

    return check_bound


def _listed_members(props: dict[str, Typed]) -> Check:
    """``properties`` alone (on a dict): each listed key present is checked; others are free."""
    listed = [(k, exact, c) for k, (exact, c) in props.items() if (exact, c) != ALWAYS]

    def check_listed(value: Any) -> bool:
        for key, exact, check in listed:
            if key in value:
                item = value[key]
                if type(item) not in exact and not check(item):
                    return False
        return True

    return check_listed


def _keyed_members(
    props: dict[str, Typed], patterns: Sequence[tuple[Callable[[str], Any], Typed]],
    extra: Typed,
) -> Check:
    """Every key of a dict against the subschemas that apply to its name (resolved once)."""
    if not props and not patterns:
        return _extra_members(extra)
    exacts: dict[str, frozenset[type]] = {}  # per key name: the types valid whatever the value
    checks: dict[str, Check] = {}  # per key name: the check of any other value

    def for_key(key: str) -> Check:
        applies = [props[key]] if key in props else []
        matched = [typed for search, typed in patterns if search(key) is not None]
        applies += matched if matched or key in props else [extra]
        applies = [t for t in applies if t != ALWAYS]
        # a type valid for every subschema that applies is valid for their conjunction
        exact = frozenset.intersection(*(e for e, _ in applies)) if applies else _NONE
        check = _always if not applies else applies[0][1] if len(applies) == 1 else (
            _all_of([_whole(t) for t in applies]))
        if len(checks) < _KEY_MEMO:
            exacts[key], checks[key] = exact, check
        return check

    def check_keyed(value: Any) -> bool:
        exact_of, check_of = exacts.get, checks.get
        for key, item in value.items():
            if type(item) not in exact_of(key, _NONE) and not (
                    check_of(key) or for_key(key))(item):
                return False
        return True

    return check_keyed


def _extra_members(extra: Typed) -> Check:
    """``additionalProperties`` alone (on a dict): every value against one subschema."""
    exact, check = extra
    if (exact, check) == ALWAYS:
        return _always

    def check_values(value: Any) -> bool:
        for item in value.values():  # noqa: SIM110 (a loop: all() with a generator costs more)
            if type(item) not in exact and not check(item):
                return False
        return True

    return check_values


def compile_check(schema: Any) -> Check:
    """The verdict of ``schema`` (a parsed JSON Schema document) as one callable."""
    return _whole(_Compiler(schema).node(schema))
