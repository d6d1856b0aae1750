"""A column-wise check of a whole batch of rollout-summary records, in C-level passes.

``rollout_scan`` runs Python statements per record (about 12 us each). A batch as training loops
build it is uniform: every record has the documented keys in order, every step one documented
key layout, every value a plain JSON type. For such a batch this module gathers each key's values
across all records (one ``zip`` transposition) and judges each column with builtins over the
whole column: ``set(map(type, column))`` against the types the schema allows, ``min`` against a
``minimum``, the distinct strings against a ``pattern``; the docs/format.md §9 rules likewise
(unique ``(group_idx, traj_idx)`` by a set of pairs, ``step_idx`` against ``range``s, each
``total_reward`` against ``math.fsum`` of its rewards).

The column checks are compiled from the schema document (``column_check``); a node using a
keyword they do not model makes the batch check unavailable. Every test is a sufficient condition
only: a batch it accepts is one the exact path (``ordered_rollout``, the schema check,
``cross_check``) accepts with the records unchanged; any doubt answers False and the caller takes
the exact path, which names the error. Batches are judged a slice of records at a time (the
caller's), so that the columns stay in the processor's cache.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice, repeat
from typing import Any, Final, NamedTuple

from rlio._schema.loader import load_schema
from rlio._schema.model import NOOP, pure_types, trivial
from rlio._schema.rollout_scan import _ARRAY_KEYWORDS, _OBJECT_KEYWORDS, _SPEC_KEYS, _plain
from rlio.rules import REWARD_TOLERANCE

__all__ = ["BatchCheck", "Column", "column_check", "columns_valid", "compile_rollout_batch",
           "rollout_batch"]

#: ``check(column) -> bool``: True only when every value of ``column`` is valid.
ColumnCheck = Callable[[Sequence[Any]], bool]
#: ``batch(records, iteration, split, seen) -> pairs``: the records' ``(group_idx, traj_idx)``
#: (none of them in ``seen``) when the batch passes, else None; see the module docstring.
BatchCheck = Callable[[list[Any], int, str, set[tuple[Any, Any]]], "set[tuple[Any, Any]] | None"]

_NONE: Final = type(None)
_not_none: Final = functools.partial(operator.is_not, None)
_values: Final = dict.values
#: Types a ``const`` is modelled for (hashable, equal only to themselves among exact types).
_CONST_TYPES: Final = frozenset({int, str, bool, _NONE})
_DICT: Final = frozenset({dict})
_STR: Final = frozenset({str})
_INT: Final = frozenset({int})
_LIST: Final = frozenset({list})


class Column(NamedTuple):
    """A compiled column check: the exact types allowed (None: any) and a check of the values
    beyond their types (None: none), run on a column whose types passed."""

    types: frozenset[type] | None
    rest: ColumnCheck | None

    def __call__(self, col: Sequence[Any]) -> bool:
        return ((self.types is None or set(map(type, col)) <= self.types)
                and (self.rest is None or self.rest(col)))

    def once(self, values: Iterable[Any]) -> bool:
        """The check on values read once (an iterator, materialised only when needed)."""
        if self.rest is None:
            return self.types is None or set(map(type, values)) <= self.types
        return self(tuple(values))


_ANY: Final = Column(None, None)


def _keywords(node: dict[str, Any]) -> set[str]:
    return {k for k in node if k not in NOOP and not k.startswith("x-")}


def column_check(node: Any, resolve: Callable[[Any], Any],
                 regex: Callable[[str], Callable[[str], Any]]) -> Column | None:
    """A check of a column of values against schema ``node``, or None when not modelled.

    Modelled: a schema accepting everything; ``const`` of an int, string, boolean or null;
    ``type`` (the exact types ``pure_types`` gives; integral floats for ``integer`` are left to
    the exact path) with ``minimum`` (int values only), ``pattern``, ``items`` (an array only)
    and ``additionalProperties`` (an object only, no other property keyword). ``resolve``
    follows ``$ref`` wrappers, ``regex(pattern)`` gives the compiled pattern's ``search``.
    """
    node = resolve(node)
    if trivial(node):
        return _ANY
    if not isinstance(node, dict):
        return None
    keys = _keywords(node)
    if keys == {"const"}:
        const = node["const"]
        if type(const) not in _CONST_TYPES:
            return None
        const_set = {const}
        return Column(frozenset({type(const)}), lambda col: set(col) <= const_set)
    if "type" not in keys:
        return None
    names = node["type"] if isinstance(node["type"], list) else [node["type"]]
    allowed = set(pure_types(names))
    if "minimum" in keys:
        allowed.discard(float)  # NaN defeats min(): float columns take the exact path
    types = frozenset(allowed)
    subs: list[ColumnCheck] = []
    for key in sorted(keys - {"type"}):
        sub = _keyword_check(node, key, types, resolve, regex)
        if sub is None:
            return None
        subs.append(sub)
    if not subs:
        return Column(types, None)
    if len(subs) == 1:
        return Column(types, subs[0])
    return Column(types, lambda col: all(sub(col) for sub in subs))


def _keyword_check(node: dict[str, Any], key: str, allowed: frozenset[type],
                   resolve: Callable[[Any], Any],
                   regex: Callable[[str], Callable[[str], Any]]) -> ColumnCheck | None:
    """The check of one keyword beside ``type`` on a column whose types are ``allowed``."""
    value = node[key]
    if key == "minimum" and type(value) in (int, float) and allowed <= {int, _NONE}:
        floor = value
        if _NONE in allowed:
            return lambda col: min(filter(_not_none, col), default=floor) >= floor
        return lambda col: min(col, default=floor) >= floor
    if key == "pattern" and allowed == {str}:
        search = regex(value)
        return lambda col: all(map(search, set(col)))
    if key == "items" and allowed == {list} and not isinstance(value, list):
        items = column_check(value, resolve, regex)
        if items is None:
            return None
        return lambda col: items.once(chain.from_iterable(col))
    if key == "additionalProperties" and allowed == {dict} and not _keywords(node) & {
            "properties", "patternProperties", "required", "propertyNames"}:
        extra = column_check(value, resolve, regex)
        if extra is None:
            return None
        return lambda col: extra.once(chain.from_iterable(map(_values, col)))
    return None


def columns_valid(values: tuple[Any, ...], width: int, columns: Sequence[Column]) -> bool:
    """Whether ``columns[k]`` accepts ``values[k::width]`` for every k: the types of all values
    taken in one pass (and compared at once when every row has the same types)."""
    types = tuple(map(type, values))
    first = types[:width]
    uniform = types == first * (len(values) // width)
    for k, column in enumerate(columns):
        if column.types is not None and not (
                first[k] in column.types if uniform else set(types[k::width]) <= column.types):
            return False
        if column.rest is not None and not column.rest(values[k::width]):
            return False
    return True


def _search(rx: Any) -> Callable[[str], Callable[[str], Any]]:
    return lambda pattern: rx[pattern].search


def compile_rollout_batch(schema: dict[str, Any]) -> BatchCheck | None:
    """The batch check of ``schema`` (see the module docstring), or None for a shape it does
    not model (the caller then always takes the per-record path)."""
    from rlio._schema.blocks import BlockCompiler  # the compiler: imported when first used

    if not _plain(schema, "object", _OBJECT_KEYWORDS):
        return None
    comp = BlockCompiler(schema)
    resolve, regex = comp.resolve, _search(comp.ctx.rx)
    props: dict[str, Any] = schema.get("properties", {})
    keys = tuple(props)
    if not set(schema.get("required", ())) <= set(keys) or not set(_SPEC_KEYS) <= set(keys):
        return None
    steps = resolve(props["steps"])
    step = resolve(steps.get("items", True)) if isinstance(steps, dict) else None
    if not _plain(steps, "array", _ARRAY_KEYWORDS) or not _plain(step, "object", _OBJECT_KEYWORDS):
        return None
    assert isinstance(step, dict)
    step_props: dict[str, Any] = step.get("properties", {})
    step_req = set(step.get("required", ()))
    if not {"step_idx", "reward"} <= step_req <= set(step_props):
        return None
    maybe = {k: column_check(props[k], resolve, regex) for k in keys if k != "steps"}
    step_maybe = {k: column_check(step_props[k], resolve, regex) for k in step_props}
    checks: dict[str, Column] = {k: c for k, c in maybe.items() if c is not None}
    step_checks: dict[str, Column] = {k: c for k, c in step_maybe.items() if c is not None}
    if len(checks) != len(maybe) or len(step_checks) != len(step_maybe):
        return None
    return _Batch(keys, checks, step_props, step_req, step_checks)


class _Batch:
    """The compiled batch check: ``batch(records, iteration, split, seen)`` (``BatchCheck``)."""

    def __init__(self, keys: tuple[str, ...], checks: dict[str, Column],
                 step_props: dict[str, Any], step_req: set[str],
                 step_checks: dict[str, Column]) -> None:
        self.keys, self.width = keys, len(keys)
        self.at = {k: n for n, k in enumerate(keys)}
        self.split_check, self.it_check = checks["split"], checks["iteration"]
        # split and iteration must be the file's (whose schema verdict is taken once a call),
        # steps a list (judged apart)
        fixed = {"split": Column(_STR, None), "iteration": Column(_INT, None),
                 "steps": Column(_LIST, None)}
        self.columns = [fixed.get(k) or checks[k] for k in keys]
        self.step_props, self.step_req, self.step_checks = step_props, step_req, step_checks
        self.layouts: dict[tuple[str, ...], list[Column] | None] = {}

    def step_columns(self, layout: tuple[str, ...]) -> list[Column] | None:
        """The column checks of a step key layout when it holds the required keys, documented
        keys only, in documented order; else None."""
        if layout in self.layouts:
            return self.layouts[layout]
        names = set(layout)
        found = None
        if (len(names) == len(layout) and self.step_req <= names <= set(self.step_props)
                and layout == tuple(k for k in self.step_props if k in names)):
            found = [self.step_checks[k] for k in layout]
        if len(self.layouts) < 64:
            self.layouts[layout] = found
        return found

    def __call__(self, recs: list[Any], it: int, split: str,
                 seen: set[tuple[Any, Any]]) -> set[tuple[Any, Any]] | None:
        try:
            return self.judge(recs, it, split, seen)
        except Exception:  # a user type a builtin trips on: the exact path names the problem
            return None

    def judge(self, recs: list[Any], it: int, split: str,
              seen: set[tuple[Any, Any]]) -> set[tuple[Any, Any]] | None:
        """``__call__`` without the guard."""
        n, width, at = len(recs), self.width, self.at
        if not n or set(map(type, recs)) != _DICT:
            return None
        # The keys of all records in one sequence: equal to ``keys`` repeated n times only when
        # every record has exactly these keys in this order (a dict holds a key once).
        if tuple(chain.from_iterable(recs)) != self.keys * n:
            return None
        values = tuple(chain.from_iterable(map(_values, recs)))
        if (not columns_valid(values, width, self.columns)
                or set(values[at["split"]::width]) != {split}
                or set(values[at["iteration"]::width]) != {it}
                or not (self.split_check((split,)) and self.it_check((it,)))):
            return None
        pairs = set(zip(values[at["group_idx"]::width], values[at["traj_idx"]::width], strict=True))
        if len(pairs) != n or not seen.isdisjoint(pairs):
            return None
        step_lists = values[at["steps"]::width]
        flat: list[Any] = functools.reduce(operator.iadd, step_lists, [])
        rewards = self.steps_valid(flat, step_lists) if flat else ()
        if rewards is None:
            return None
        totals, finals = values[at["total_reward"]::width], values[at["final_reward"]::width]
        return pairs if _rewards_agree(totals, finals, step_lists, rewards) else None

    def steps_valid(self, flat: list[Any], step_lists: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """The reward column of the steps ``flat`` when they pass every check, else None."""
        if set(map(type, flat)) != _DICT:
            return None
        layout = tuple(flat[0])
        columns = self.step_columns(layout)
        if columns is None or tuple(chain.from_iterable(flat)) != layout * len(flat):
            return None
        width = len(layout)
        values = tuple(chain.from_iterable(map(_values, flat)))
        if not columns_valid(values, width, columns):
            return None
        if values[layout.index("step_idx")::width] != tuple(
                chain.from_iterable(map(range, map(len, step_lists)))):
            return None
        return values[layout.index("reward")::width]




def _rewards_agree(totals: Sequence[Any], finals: Sequence[Any], step_lists: Sequence[Any],
                   rewards: Sequence[Any]) -> bool:
    """Whether every ``total_reward`` is within ``REWARD_TOLERANCE`` of ``math.fsum`` of its
    ``final_reward`` and step rewards (``rewards``: the steps' in order), all numbers: then
    ``rlio.rules.reward_mismatch`` (the same fsum, a tolerance of at least that) finds nothing.
    A null or non-finite value answers False."""
    if set(map(type, chain(totals, finals, rewards))) - _NUMBER:
        return False
    counts = set(map(len, step_lists))
    steps = iter(rewards)
    try:
        if len(counts) == 1:  # the common batch: as many steps each
            sums = map(math.fsum, zip(finals, *repeat(steps, counts.pop()), strict=True))
        else:
            sums = map(math.fsum, map(chain, zip(finals), map(islice, repeat(steps),
                                                              map(len, step_lists))))
        return all(map(operator.le, map(abs, map(operator.sub, totals, sums)),
                       repeat(REWARD_TOLERANCE)))
    except (TypeError, OverflowError, ValueError):
        return False


_NUMBER: Final = {int, float}


@functools.cache
def rollout_batch() -> BatchCheck | None:
    """The batch check of the rollout-summary schema (see ``compile_rollout_batch``)."""
    return compile_rollout_batch(load_schema("rollout-summary-line"))
