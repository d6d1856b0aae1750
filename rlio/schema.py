"""The JSON Schemas of schemas/ and the one engine that judges records against them.

Every verdict and every explanation in rlio (writer, validator, reader, report, logtree
conversations) comes from ``record_schema(name)``: a ``RecordSchema`` holding the schema compiled
by jsonschema-rs (Draft 2020-12, compiled lazily on first use, once per process), its documented
key order and its severity split. No other module implements a JSON Schema keyword.

Severity: a subschema annotated ``"x-rlio-severity": "warning"`` is an expectation. The
error-level rules are those of a schema derived from the same file with its warning-level
subschemas removed (``rlio._schema.severity.error_level``): ``passes`` judges those (what the
writer refuses and the validator reports as an error, RL201); ``clean`` judges every rule (a
record it accepts gives no finding; one that passes but is not clean is a warning, RL205).

An explanation is one ``(pointer, message)``: the first error at the shallowest instance path;
an ``anyOf`` error (a logtree child: a string or a node) is followed into its branches' errors to
the deepest one (``kind.context``), so the pointer names the failing value and the message never
prints a subtree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeAlias

from rlio._schema import severity
from rlio._schema.bundle import BUNDLE_ID, bundle_schema
from rlio._schema.loader import (
    KIND_SCHEMA,
    SCHEMA_NAMES,
    load_schema,
    schema_bytes,
    schema_dir,
)

__all__ = [
    "BUNDLE_ID",
    "KIND_SCHEMA",
    "SCHEMA_NAMES",
    "TOO_DEEP_TO_EXPLAIN",
    "Level",
    "RecordSchema",
    "bundle_schema",
    "error_schema",
    "known_data_types",
    "load_schema",
    "logtree_known_types",
    "record_schema",
    "schema_bytes",
    "schema_dir",
]

Level: TypeAlias = Literal["error", "full"]
#: A message longer than this is cut (a value quoted whole could be megabytes).
MAX_MESSAGE: Final = 300
#: The explanation of a record whose failure lies deeper than the engine explains (a logtree
#: nesting well over a hundred nodes): the verdict stands, without a pointer.
TOO_DEEP_TO_EXPLAIN: Final = "record is nested too deeply to explain"
#: Error kinds whose message restates the instance (a subtree): never printed.
_BRANCHING: Final = frozenset({"anyOf", "oneOf"})


@functools.cache
def error_schema(name: str) -> dict[str, Any]:
    """Schema ``name`` without its warning-level subschemas: its error-level rules (cached)."""
    doc: dict[str, Any] = severity.error_level(load_schema(name))
    return doc


def _compile(doc: dict[str, Any]) -> Any:
    import jsonschema_rs  # imported on first verdict: `import rlio` stays light

    return jsonschema_rs.validator_for(doc)


class RecordSchema:
    """One record kind's schema: its verdicts, explanations, key order and severity split.

    Attributes:
        name: the schema's name (``metrics-line``; ``logtree#message`` for a definition).
        keys: the documented key order (the schema's ``properties`` order).
        required: the keys every record carries, in documented order.
    """

    def __init__(self, name: str, full: dict[str, Any], shape: dict[str, Any]) -> None:
        self.name = name
        self._full_doc = full
        self._error_doc = severity.error_level(full)
        self.keys: tuple[str, ...] = tuple(shape.get("properties", {}))
        required = shape.get("required", ())
        self.required: tuple[str, ...] = tuple(k for k in self.keys if k in required) + tuple(
            k for k in required if k not in self.keys)
        self._error: Any = None
        self._full: Any = None

    def __repr__(self) -> str:
        return f"RecordSchema({self.name!r})"

    @property
    def has_warnings(self) -> bool:
        """Whether the schema holds warning-level rules (``clean`` then judges more)."""
        return self._error_doc is not self._full_doc

    def _validator(self, level: Level) -> Any:
        if level == "error" or not self.has_warnings:
            if self._error is None:
                self._error = _compile(self._error_doc)
            return self._error
        if self._full is None:
            self._full = _compile(self._full_doc)
        return self._full

    def check(self, level: Level = "error") -> Callable[[Any], bool]:
        """The compiled verdict of ``level`` as one callable (the engine's own ``is_valid``,
        no Python frame between a hot loop and it)."""
        is_valid: Callable[[Any], bool] = self._validator(level).is_valid
        return is_valid

    def passes(self, instance: Any) -> bool:
        """Whether ``instance`` satisfies the error-level rules (what the writer refuses)."""
        return bool((self._error or self._validator("error")).is_valid(instance))

    def clean(self, instance: Any) -> bool:
        """Whether ``instance`` satisfies every rule, warning-level ones included."""
        return bool(self._validator("full").is_valid(instance))

    def explain(self, instance: Any, level: Level = "error") -> tuple[str, str] | None:
        """``(json_pointer, message)`` of the best error at ``level``; None when none."""
        doc = self._error_doc if level == "error" else self._full_doc
        try:
            errors = list(self._validator(level).iter_errors(instance))
        except ValueError as exc:  # the engine's own bound on nested anyOf explanations
            if "recursion" not in str(exc).lower():
                raise
            return "", TOO_DEEP_TO_EXPLAIN
        if not errors:
            return None
        best = _deepest(min(errors, key=_shallow))
        from rlio.findings import pointer_of  # only when explaining a refusal

        path = _located(instance, list(best.instance_path), best.instance)
        return pointer_of(path), _message(best, path, doc)

    def refusal(self, instance: Any) -> tuple[str, str] | None:
        """The writer's verdict: None when ``instance`` passes the error-level rules, else the
        ``(json_pointer, message)`` its ``RecordError`` names."""
        if self.passes(instance):
            return None
        return self.explain(instance) or ("", f"does not match the {self.name} schema")

    def keys_at(self, *path: str | int) -> tuple[str, ...]:
        """The documented key order of the object subschema at ``path`` (keys and indices into
        the schema document, e.g. ``("properties", "spans", "items")``)."""
        node: Any = self._full_doc
        for part in path:
            node = node[part]
        return tuple(node.get("properties", {}))

    def part(self, name: str) -> RecordSchema:
        """The schema of ``$defs/<name>`` (its other definitions kept, so references resolve):
        one message of a logtree conversation, say."""
        return _part(self.name, name)


def _shallow(error: Any) -> tuple[int, bool]:
    """Order of choice among top-level errors: the shallowest instance path, then not a
    branching keyword (its message restates a subtree)."""
    return len(error.instance_path), error.kind.name in _BRANCHING


def _deepest(error: Any) -> Any:
    """Follow a branching error (``anyOf``/``oneOf``) into the branch the value was meant for:
    a branch is not meant when the value's type, or a discriminating ``const``/``enum`` right
    under it, does not match; of the others, the one with the fewest errors. When every branch
    is a mismatch, the branching error itself is the answer (its own short message)."""
    while error.kind.name in _BRANCHING:
        depth = len(error.instance_path)
        meant = [b for b in getattr(error.kind, "context", ()) if b and not _mismatch(b, depth)]
        if not meant:
            break
        branch: Sequence[Any] = min(meant, key=len)
        error = min(branch, key=_shallow)
    return error


def _mismatch(branch: Sequence[Any], depth: int) -> bool:
    """Whether a branch's errors say the value is of another shape than the branch's."""
    for e in branch:
        n, kind = len(e.instance_path), e.kind.name
        if (kind == "type" and n == depth) or (kind in ("const", "enum") and n <= depth + 1):
            return True
    return False


def _child(node: Any, key: Any) -> tuple[bool, Any]:
    if isinstance(node, dict) and isinstance(key, str) and key in node:
        return True, node[key]
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return True, node[key]
    return False, None


def _located(root: Any, path: list[Any], target: Any) -> list[Any]:
    """``path`` with the empty keys put back that jsonschema-rs leaves out of an instance path
    (``{"": 1}`` is reported at ``[]``): only looked for where the instance has an empty key."""
    node, suspect = root, False
    for key in [*path, None]:
        suspect = suspect or (isinstance(node, dict) and "" in node)
        if key is None:
            break
        found, node = _child(node, key)
        if not found:
            return path
    if not suspect:
        return path

    def walk(node: Any, rest: list[Any], out: list[Any], depth: int) -> list[Any] | None:
        if not rest and node == target:
            return out
        if depth < 8 and isinstance(node, dict) and "" in node:
            found = walk(node[""], rest, [*out, ""], depth + 1)
            if found is not None:
                return found
        if rest:
            ok, child = _child(node, rest[0])
            if ok:
                return walk(child, rest[1:], [*out, rest[0]], depth)
        return None

    return walk(root, path, [], 0) or path


def _message(error: Any, path: Sequence[Any], doc: dict[str, Any]) -> str:
    """One short line: the value's place, then what is wrong with it."""
    kind = error.kind.name
    if kind in _BRANCHING:
        value = error.instance
        shown = "" if isinstance(value, (dict, list)) else _json(value)[:80] + " "
        msg = f"{shown}is not valid under any of the options of '{kind}'"
    elif kind == "not":  # "{} is not allowed for x" says nothing: the schema says why
        msg = _description(doc, error.schema_path) or str(error.message)
    else:
        msg = str(error.message)
    if len(msg) > MAX_MESSAGE:
        msg = msg[:MAX_MESSAGE - 3] + "..."
    where = "/".join(str(p) for p in path)
    return f"{where + ': ' if where else ''}{msg}".replace("\n", " ")


def _json(value: Any) -> str:
    import orjson

    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _description(doc: Any, schema_path: Sequence[Any]) -> str | None:
    """The ``description`` of the subschema holding the failing keyword, when it has one."""
    node = doc
    for part in list(schema_path)[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    text = node.get("description") if isinstance(node, dict) else None
    return text if isinstance(text, str) else None


@functools.cache
def record_schema(name: str) -> RecordSchema:
    """The ``RecordSchema`` of schema ``name`` (one per process; compiled on first verdict).

    Raises:
        ValueError: ``name`` is not a schema name.
    """
    doc = load_schema(name)
    return RecordSchema(name, doc, doc)


@functools.cache
def known_data_types() -> frozenset[str]:
    """The logtree ``data`` types the schema specifies (its ``if type == X then ...`` clauses);
    other types are allowed and ignored by consumers (RL203)."""
    data = load_schema("logtree").get("$defs", {}).get("data", {})
    consts = (c.get("if", {}).get("properties", {}).get("type", {}).get("const")
              for c in [data, *data.get("allOf", [])])
    return frozenset(c for c in consts if isinstance(c, str))


@functools.cache
def logtree_known_types() -> RecordSchema:
    """A schema that walks a logtree's nodes as the logtree schema does (``root``, the node
    objects among ``children``) and refuses a ``data`` whose string ``type`` is not one of
    ``known_data_types()``, judging nothing else: a document it refuses holds a data type the
    schema does not specify (RL203). One pass of the engine instead of a walk in Python."""
    node = {"properties": {
        "children": {"items": {"anyOf": [{"not": {"type": "object"}}, {"$ref": "#/$defs/node"}]}},
        "data": {"properties": {"type": {"anyOf": [
            {"not": {"type": "string"}}, {"enum": sorted(known_data_types())}]}}},
    }}
    doc = {"$schema": load_schema("logtree")["$schema"], "$defs": {"node": node},
           "properties": {"root": {"$ref": "#/$defs/node"}}}
    return RecordSchema("logtree#known-types", doc, doc)


@functools.cache
def _part(name: str, part: str) -> RecordSchema:
    root = load_schema(name)
    doc = {"$schema": root["$schema"], "$defs": root["$defs"], "$ref": f"#/$defs/{part}"}
    return RecordSchema(f"{name}#{part}", doc, root["$defs"][part])
