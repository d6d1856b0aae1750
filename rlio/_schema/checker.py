"""The one checker per schema: a JSON Schema compiled once into a tree of small closures.

``compile_check(schema)`` returns ``check(instance) -> bool``, the validity verdict every part of
rlio asks (writer, validator, reader, report); python-jsonschema is used only to explain a record
that failed. The verdicts follow python-jsonschema's ``is_valid`` (draft 2020-12) for the keywords
the shipped schemas use; a schema holding any other validation keyword is refused at compile time,
so a new rule cannot be silently ignored.

One shortcut, for the workload: an object's per-key checks (``properties``, ``patternProperties``,
``additionalProperties``) are resolved once per key name and kept (``_KEY_MEMO`` names per
object), because a metrics line repeats the same keys every step and running its ``^time/``-style
regexes per key per call costs more than the rest of ``log_metrics`` (benchmarks/writer_floor.py).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

Check = Callable[[Any], bool]

#: Keywords that carry no rule (annotations, and the containers of definitions).
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


def _always(_: Any) -> bool:
    return True


def _never(_: Any) -> bool:
    return False


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
#: The exact Python types a JSON type accepts whatever the value (float for integer needs a look).
_EXACT: Final[dict[str, tuple[type, ...]]] = {
    "array": (list,), "boolean": (bool,), "integer": (int,), "null": (type(None),),
    "number": (int, float), "object": (dict,), "string": (str,),
}


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
        self.refs: dict[str, Check] = {}
        self.cells: dict[str, list[Check]] = {}

    def node(self, schema: Any) -> Check:
        """The check of one subschema (a dict or a boolean)."""
        if schema is True or schema == {}:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            raise ValueError(f"a subschema must be an object or a boolean, got {schema!r}")
        unknown = set(schema) - _RULES - _ANNOTATIONS
        if unknown:
            raise ValueError(f"schema keyword(s) {sorted(unknown)} are not supported")
        checks = [c for c in (self._type(schema), *self._scalar(schema), *self._object(schema),
                              *self._array(schema), *self._logic(schema)) if c is not _always]
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]
        return _all_of(checks)

    # -- the keywords, by the kind of instance they apply to --------------------------------

    def _type(self, schema: dict[str, Any]) -> Check:
        if "type" not in schema:
            return _always
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        exact = frozenset(t for name in names for t in _EXACT[name])
        tests = [_TYPE_TESTS[name] for name in names]
        if "integer" in names and "number" not in names:
            exact = exact - {float}

        def check_type(value: Any) -> bool:
            if type(value) in exact:
                return True
            return any(test(value) for test in tests)

        return check_type

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

    def _object(self, schema: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "required" in schema:
            out.append(_required(tuple(schema["required"])))
        if any(k in schema for k in ("properties", "patternProperties", "additionalProperties")):
            out.append(self._members(schema))
        return out

    def _members(self, schema: dict[str, Any]) -> Check:
        props = {k: self.node(s) for k, s in schema.get("properties", {}).items()}
        patterns = [(re.compile(p).search, self.node(s))
                    for p, s in schema.get("patternProperties", {}).items()]
        extra = self.node(schema.get("additionalProperties", True))
        if not patterns and extra is _always:
            return _listed_members(props)
        return _keyed_members(props, patterns, extra)

    def _array(self, schema: dict[str, Any]) -> list[Check]:
        if "items" not in schema:
            return []
        item = self.node(schema["items"])
        if item is _always:
            return []

        def check_items(value: Any) -> bool:
            if type(value) is not list and not isinstance(value, list):
                return True
            for x in value:
                if not item(x):
                    return False
            return True

        return [check_items]

    def _logic(self, schema: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "allOf" in schema:
            out.append(_all_of([self.node(s) for s in schema["allOf"]]))
        if "anyOf" in schema:
            options = [self.node(s) for s in schema["anyOf"]]
            out.append(lambda v: any(c(v) for c in options))
        if "oneOf" in schema:
            ones = [self.node(s) for s in schema["oneOf"]]
            out.append(lambda v: sum(1 for c in ones if c(v)) == 1)
        if "not" in schema:
            negated = self.node(schema["not"])
            out.append(lambda v: not negated(v))
        if "if" in schema:
            test = self.node(schema["if"])
            then, other = self.node(schema.get("then", True)), self.node(schema.get("else", True))
            out.append(lambda v: then(v) if test(v) else other(v))
        if "$ref" in schema:
            out.append(self.ref(schema["$ref"]))
        return out

    def ref(self, pointer: str) -> Check:
        """The check of a local reference (``#`` or ``#/$defs/name``), compiled once; a
        reference back into a target still being compiled goes through a cell."""
        if pointer in self.refs:
            return self.refs[pointer]
        if pointer in self.cells:
            cell = self.cells[pointer]
            return lambda v: cell[0](v)
        cell = self.cells[pointer] = [_never]
        check = self.node(self._target(pointer))
        cell[0] = self.refs[pointer] = check
        return check

    def _target(self, pointer: str) -> Any:
        if not pointer.startswith("#"):
            raise ValueError(f"only local references are supported, got {pointer!r}")
        node = self.root
        for part in filter(None, pointer[1:].split("/")):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node


def _all_of(checks: list[Check]) -> Check:
    checks = [c for c in checks if c is not _always]
    if len(checks) == 1:
        return checks[0]

    def check_all(value: Any) -> bool:
        for c in checks:
            if not c(value):
                return False
        return True

    return check_all


def _const(expected: Any) -> Check:
    if isinstance(expected, str):
        return lambda v: isinstance(v, str) and v == expected
    return lambda v: equal(v, expected)


_BOUNDS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "minimum": lambda v, b: v >= b,
    "maximum": lambda v, b: v <= b,
    "exclusiveMinimum": lambda v, b: v > b,
    "exclusiveMaximum": lambda v, b: v < b,
}


def _bound(test: Callable[[Any, Any], bool], limit: Any) -> Check:
    def check_bound(value: Any) -> bool:
        return not _is_number(value) or test(value, limit)

    return check_bound


def _required(names: tuple[str, ...]) -> Check:
    def check_required(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name in names:
            if name not in value:
                return False
        return True

    return check_required


def _listed_members(props: dict[str, Check]) -> Check:
    """``properties`` alone: each listed key present is checked; other keys are free."""
    listed = [(k, c) for k, c in props.items() if c is not _always]

    def check_listed(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for key, check in listed:
            if key in value and not check(value[key]):
                return False
        return True

    return check_listed


def _keyed_members(
    props: dict[str, Check], patterns: list[tuple[Callable[[str], Any], Check]], extra: Check,
) -> Check:
    """Every key of the object against the checks that apply to its name (resolved once)."""
    memo: dict[str, Check] = {}

    def for_key(key: str) -> Check:
        checks = [props[key]] if key in props else []
        matched = [c for search, c in patterns if search(key) is not None]
        checks += matched
        if key not in props and not matched:
            checks.append(extra)
        check = _all_of(checks) if checks else _always
        if len(memo) < _KEY_MEMO:
            memo[key] = check
        return check

    def check_keyed(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        get = memo.get
        for key, item in value.items():
            check = get(key) or for_key(key)
            if check is not _always and not check(item):
                return False
        return True

    return check_keyed


def compile_check(schema: Any) -> Check:
    """The verdict of ``schema`` (a parsed JSON Schema document) as one callable."""
    return _Compiler(schema).node(schema)
