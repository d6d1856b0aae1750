"""The validator's block pass over a large JSONL file whose checks can judge a block at once.

``scan_jsonl`` judges one line at a time: a parse, the compiled schema check and the record checks,
each a Python call per line. Here a block of whole lines (``_CHUNK`` bytes) is parsed with one
C-level ``map(orjson.loads, ...)`` and judged column by column: per key, the set of the column's
types against the types the schema allows there, and ``min()``/``max()`` against its bounds
(``ColumnRules``, read off the schema). The record checks then take the whole block
(``BlockChecks.block``). Both tests are conservative: a block passes only when every one of its
lines would pass the exact path without a finding the block checks cannot give themselves. Any
other block (a line that does not parse, a value of a type or range the rules do not clear, a
step that does not go on by one...) is handed, as it is, to ``scan_jsonl``: the findings (codes,
lines, messages, order) are the exact path's. Memory stays flat: one block at a time.
"""

from __future__ import annotations

import gc
import io
import operator
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain, compress, repeat
from typing import Any, BinaryIO, Final, Protocol

import orjson

from rlio import _native
from rlio._schema.blocks import is_per_key, per_key_subschemas
from rlio._schema.model import NOOP, Context
from rlio.schema import load_schema
from rlio.validate.scan import LONG_LINE, RecordHook, ScanStats, Sink, scan_jsonl

#: Bytes read per block (a few hundred metrics lines: small enough to stay in the CPU's cache).
_CHUNK: Final = 64 << 10
#: Failed lines carried into the next block (their last line did not parse) before the rest of
#: the file goes to the exact path.
_CARRY_MAX: Final = 8 << 20
#: Keys whose rules are remembered per schema.
_RULES_MAX: Final = 4096
#: Key layouts whose rule plans are remembered per schema.
_LAYOUTS_MAX: Final = 256
_JSON_TYPES: Final = {
    "integer": frozenset({int}),  # an integral float is valid too: the exact path judges it
    "number": frozenset({int, float}),
    "string": frozenset({str}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
    "object": frozenset({dict}),
    "array": frozenset({list}),
}
_NUMBERS: Final = frozenset({int, float})
_NONE: Final = frozenset({type(None)})
_DICTS: Final = {dict}


class _Missing:
    """The type of the value of a key a record lacks."""


_MISSING: Final = _Missing()


class BlockChecks(Protocol):
    """Record checks that can also judge a block of records at once."""

    def __call__(self, rec: Any, line: int, ok: bool) -> None:
        """Judge one record (the exact path)."""

    def block(self, recs: list[dict[str, Any]], layouts: dict[tuple[str, ...], None],
              first: int, columns: list[tuple[Any, ...]] | None = None) -> bool:
        """Judge schema-valid records of lines ``first``, ``first + 1``...; False (and nothing
        changed) when only the exact path can. ``layouts``: each record has the keys of one of
        them, its first key first (one layout: the keys of ``recs[0]`` in their order).
        ``columns``: with one layout, the values of each of its keys (in its key order)."""

    def finish(self) -> Any:
        """Judge what only the whole file shows."""


@dataclass(frozen=True, slots=True)
class Rule:
    """What the schema asks of the value at one key: its types (None: any) and numeric bounds."""

    types: frozenset[type] | None = None
    lo: float | None = None
    lo_open: bool = False
    hi: float | None = None
    hi_open: bool = False

    def clears(self, col: Iterable[Any]) -> bool:
        """Whether every value of ``col`` (``_MISSING`` for an absent key) passes for sure."""
        vals = col if isinstance(col, (list, tuple)) else list(col)
        types = set(map(type, vals))
        missing = _Missing in types
        if missing:
            types.discard(_Missing)
        if self.types is not None and not types <= self.types:
            return False
        if (self.lo is None and self.hi is None) or not types & _NUMBERS:
            return True
        if not types <= _NUMBERS | _NONE:
            return False  # a range over strings or booleans as well: the exact path judges
        if missing or types >= _NONE:  # numbers among nulls or absent keys: the numbers only
            vals = list(compress(vals, map(operator.is_not, vals, repeat(None))))
            if missing:
                vals = list(compress(vals, map(operator.is_not, vals, repeat(_MISSING))))
        lo, hi = self.lo, self.hi
        if lo is not None:
            low = min(vals)
            if low < lo or (self.lo_open and low == lo):
                return False
        if hi is not None:
            high = max(vals)
            if high > hi or (self.hi_open and high == hi):
                return False
        return True


def _fold(ctx: Context, s: Any, acc: dict[str, Any], depth: int = 0) -> bool:
    """Add the constraints of ``s`` to ``acc``; False for any keyword these rules do not model."""
    if s is True:
        return True
    if not isinstance(s, dict) or depth > 16:
        return False
    for kw, v in s.items():
        if kw == "type":
            names = [v] if isinstance(v, str) else v
            if not isinstance(names, list) or not all(n in _JSON_TYPES for n in names):
                return False
            types = frozenset().union(*(_JSON_TYPES[n] for n in names))
            acc["types"] = types if acc["types"] is None else acc["types"] & types
        elif kw in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
            if type(v) not in _NUMBERS:
                return False
            low = kw.endswith("inimum")
            bound, is_open = ("lo", "lo_open") if low else ("hi", "hi_open")
            old = acc[bound]
            tighter = old is None or (v > old if low else v < old)
            if tighter or (v == old and kw.startswith("exclusive")):
                acc[bound], acc[is_open] = v, kw.startswith("exclusive")
        elif kw == "allOf":
            if not isinstance(v, list) or not all(_fold(ctx, sub, acc, depth + 1) for sub in v):
                return False
        elif kw == "$ref":
            if v not in ctx.refs or not _fold(ctx, ctx.refs[v], acc, depth + 1):
                return False
        elif kw in ("then", "else") or not (kw in NOOP or kw.startswith("x-")):
            return False  # then/else are no-ops only without if, which is not modelled anyway
    return True


class ColumnRules:
    """Per key, the ``Rule`` a schema that judges an object key by key sets (None: not modelled).

    Read off the schema itself, as python-jsonschema applies it: every subschema that judges the
    key (``properties``, each matching ``patternProperties``, else ``additionalProperties``,
    ``rlio._schema.blocks.per_key_subschemas``), with ``allOf`` and ``$ref`` followed.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.ctx = Context(schema)
        self.rules: dict[str, Rule | None] = {}
        self._same: dict[Rule, Rule] = {}  # one object per distinct rule
        self._plans: dict[tuple[str, ...], list[tuple[Rule, list[int]]] | None] = {}

    def rule(self, key: str) -> Rule | None:
        """The rule of ``key``, or None when its subschemas use keywords not modelled here."""
        if key in self.rules:
            return self.rules[key]
        acc: dict[str, Any] = {"types": None, "lo": None, "lo_open": False, "hi": None,
                               "hi_open": False}
        subs = per_key_subschemas(self.ctx, self.schema, key)
        rule = None
        if all(_fold(self.ctx, s, acc) for s in subs):
            rule = self._same.setdefault(Rule(**acc), Rule(**acc))
        if len(self.rules) < _RULES_MAX:
            self.rules[key] = rule
        return rule

    def clear(self, recs: list[dict[str, Any]], layouts: dict[tuple[str, ...], None],
              columns: list[tuple[Any, ...]] | None, native: Any = None) -> bool:
        """Whether every record (all dicts) passes the schema for sure, key column by column
        (``columns``: the values of the one layout's keys, when the records share one;
        ``native``: the C extension, which judges them in one pass per rule)."""
        rule = self.rule
        if columns is not None:
            plan = self._plan(next(iter(layouts)))
            if plan is None:
                return False
            if native is not None:
                clear = native.columns_clear
                return all(clear([columns[a] for a in at], same.types, same.lo, same.lo_open,
                                 same.hi, same.hi_open) for same, at in plan)
            for same, at in plan:  # the columns of one rule at once: each passes iff all do
                if not same.clears(columns[at[0]] if len(at) == 1 else list(
                        chain.from_iterable(map(columns.__getitem__, at)))):
                    return False
            return True
        for key in dict.fromkeys(chain.from_iterable(layouts)):
            r = rule(key) if type(key) is str else None
            if r is None or not r.clears(map(dict.get, recs, repeat(key), repeat(_MISSING))):
                return False
        return True

    def _plan(self, keys: tuple[str, ...]) -> list[tuple[Rule, list[int]]] | None:
        """The distinct rules of a layout's keys, each with the places of its keys (None: a key
        without a rule). A column of a rule passes ``Rule.clears`` when the columns of all the
        rule's keys together do (the same types, the same extremes among them)."""
        plans = self._plans
        if keys in plans:
            return plans[keys]
        groups: dict[int, tuple[Rule, list[int]]] = {}
        plan: list[tuple[Rule, list[int]]] | None = None
        for at, key in enumerate(keys):
            r = self.rule(key) if type(key) is str else None
            if r is None:
                break
            groups.setdefault(id(r), (r, []))[1].append(at)
        else:
            plan = list(groups.values())
        if len(plans) < _LAYOUTS_MAX:
            plans[keys] = plan
        return plan


_CACHE: dict[str, ColumnRules | None] = {}


def column_rules(schema: str) -> ColumnRules | None:
    """The column rules of schema ``schema`` (cached), None when it is not judged key by key."""
    if schema not in _CACHE:
        doc = load_schema(schema)
        _CACHE[schema] = ColumnRules(doc) if is_per_key(doc) else None
    return _CACHE[schema]


class _Chain(io.RawIOBase):
    """``head`` then the rest of ``stream``: the exact path reads on where the blocks stopped."""

    def __init__(self, head: bytes, stream: BinaryIO) -> None:
        self.head = memoryview(head)
        self.at = 0
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        if self.at < len(self.head):
            n = min(len(view), len(self.head) - self.at)
            view[:n] = self.head[self.at:self.at + n]
            self.at += n
            return n
        data = self.stream.read(len(view))
        view[: len(data)] = data
        return len(data)


def scan_blocks(
    stream: BinaryIO, sink: Sink, *, schema: str, append_only: bool, checks: BlockChecks,
    chunk: int = _CHUNK, carry: int = _CARRY_MAX,
) -> ScanStats:
    """Judge every line of a JSONL stream, as ``scan_jsonl(..., on_record=checks)`` would.

    Blocks that pass the column rules and ``checks.block`` are judged at once; every other block
    takes ``scan_jsonl``. A block whose last line does not parse is carried into the next one,
    so the exact path holds no line back across a block's end (it has to see the line after a
    bad one to judge it); past ``carry`` bytes of them, the rest of the file takes it.
    """
    rules = column_rules(schema)
    native = _native.native()
    if rules is None:
        return scan_jsonl(stream, sink, schema=schema, append_only=append_only, on_record=checks)
    # a block's records are acyclic and all alive until the block is judged: a collection
    # (one every few blocks) would only traverse them, and the whole heap now and then
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _scan(stream, sink, schema, append_only, checks, chunk, carry, rules, native)
    finally:
        if enabled:
            gc.enable()


def _scan(stream: BinaryIO, sink: Sink, schema: str, append_only: bool, checks: BlockChecks,
          chunk: int, carry: int, rules: ColumnRules, native: Any) -> ScanStats:
    hook: RecordHook = checks
    stats = ScanStats()
    done = 0  # lines judged
    buf = b""

    def exact(data: BinaryIO, at_eof: bool) -> int:
        got = scan_jsonl(data, sink, schema=schema, append_only=append_only, on_record=hook,
                         first_line=done + 1, at_eof=at_eof)
        stats.records += got.records
        stats.bytes += got.bytes
        return got.lines

    while True:
        if len(buf) > (carry if b"\n" in buf else LONG_LINE):
            done += exact(io.BufferedReader(_Chain(buf, stream)), True)  # long line, much damage
            break
        data = stream.read(chunk)
        if not data:
            if buf:
                done += exact(io.BytesIO(buf), True)
            break
        buf = buf + data if buf else data
        cut = buf.rfind(b"\n")
        if cut < 0:
            continue
        lines = buf[:cut].split(b"\n")
        n = _block(lines, rules, checks, done + 1, native)
        if n < 0:  # its last line does not parse: carry the block into the next read
            continue
        if n:
            stats.records += n
            stats.bytes += cut + 1
        else:
            exact(io.BytesIO(buf[: cut + 1]), False)
        done += len(lines)
        buf = buf[cut + 1:]
    stats.lines = done
    return stats


def _block(lines: list[bytes], rules: ColumnRules, checks: BlockChecks, first: int,
           native: Any = None) -> int:
    """Records judged at once (0: take the exact path; -1: carry the lines on); ``native``:
    the C extension, for the column passes."""
    loads = orjson.loads
    try:
        recs = list(map(loads, lines))
    except orjson.JSONDecodeError:
        try:
            loads(lines[-1])
        except orjson.JSONDecodeError:
            return -1
        return 0
    if set(map(type, recs)) != _DICTS or max(map(len, lines)) >= LONG_LINE - 2:
        return 0
    layouts, columns = _layouts(recs, native)
    if not rules.clear(recs, layouts, columns, native) or not checks.block(recs, layouts, first,
                                                                           columns):
        return 0
    return len(recs)


def _layouts(recs: list[dict[str, Any]], native: Any = None) -> tuple[
        dict[tuple[str, ...], None], list[tuple[Any, ...]] | None]:
    """The records' key layouts, and the columns of the one layout when they share one.

    Records share a layout here when each has as many keys as the first, all of the first's
    keys (so the same set) and the same first key; their values are fetched in the first's key
    order (only the first key's place and the set of keys mean anything to the checks).
    """
    first = tuple(recs[0])
    if native is not None and len(first) > 1:  # the same test and columns, in one C pass
        columns = native.block_columns(recs, first)
        if columns is not None:
            return {first: None}, columns
    if len(first) > 1 and set(map(len, recs)) == {len(first)}:
        try:
            rows = list(map(operator.itemgetter(*first), recs))
        except KeyError:
            pass
        else:
            if set(map(next, map(iter, recs))) == {first[0]}:  # (no record is empty)
                return {first: None}, list(zip(*rows, strict=True))
    return dict.fromkeys(map(tuple, recs)), None
