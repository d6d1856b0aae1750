"""The compiled check behind ``RunWriter.log_metrics``: one metrics dict and its ``step`` apart.

For a schema that judges a line key by key (``properties``, ``patternProperties``,
``additionalProperties``; see ``compile_key_check``), a key layout (the keys in order, as training
loops repeat them) seen twice gets one generated function ``f(metrics, step) -> bool`` that
unpacks the values once and runs, per position, the statements ``rlio._schema.compiler`` generates
for the subschemas that apply to that key, and the step's in the same call (the rules are the
schema's, whatever the compiler makes of them; nothing is restated here). Cheaper than the
whole-line predicate because:

- a key whose subschemas are only ``type`` tests costs one set-membership test, and numpy scalar
  types join those sets once seen (a numpy scalar is judged as its ``.item()``, which is what the
  general path converts it to), so numpy values never reach the generic interpreter;
- a numpy scalar under a key with more than a type (a range) is judged by the compiled statements
  on its ``.item()``, a non-finite float on the ``null`` the strict-JSON encoder writes.

True means ``{"step": step, **metrics}`` is valid as the strict-JSON encoder writes it (non-finite
floats as null) and every value is one orjson encodes natively; False only says "not shown here":
the writer's general path judges the line and names the problem. numpy is never imported here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection
from typing import Any, Final

import orjson

from rlio._codec.jsonl import INT_MAX, INT_MIN
from rlio._schema.blocks import BlockCompiler, indent, is_per_key, per_key_subschemas
from rlio._schema.compiler import _Gen
from rlio._schema.model import NOOP, SEEN_MAX, TYPES, interpret, pure_types

__all__ = ["LayoutPlan", "MetricsCheck", "compile_metrics_check", "int_bounds", "item_type"]

LayoutCheck = Callable[[dict[str, Any], int], bool]
_LAYOUTS_MAX: Final = 64  # compiled key layouts per writer process and schema
_LAYOUT_KEYS_MAX: Final = 4096
_UNSEEN: Final = object()  # no value seen at a key (its first test is then float's)

# ------------------------------------------------------------------------ numpy scalar types

#: numpy scalar type -> the plain type of its ``.item()`` (bool, int or float), for the types
#: orjson encodes natively; filled as values are seen (numpy is never imported by rlio).
_ITEM_TYPE: dict[type, type] = {}
#: The keys of ``_ITEM_TYPE``, as a set the compiled statements test membership in.
_NUMPY_TYPES: set[type] = set()
#: The membership set of type-only keys per plain types accepted: a numpy type joins every set
#: that accepts the type of its ``.item()``.
_TYPE_SETS: dict[frozenset[type], set[type]] = {}
_registry_lock = threading.Lock()


def _item_type(x: Any) -> type | None:
    """The plain type ``x.item()`` has when ``x`` is a numpy scalar orjson encodes, else None."""
    t = type(x)
    found = _ITEM_TYPE.get(t)
    if found is not None or getattr(t, "__module__", None) != "numpy":
        return found
    try:
        plain = type(x.item())
        orjson.dumps(x, option=orjson.OPT_SERIALIZE_NUMPY)  # natively, without a default
    except Exception:  # an odd numpy type: the general path judges it
        return None
    if plain not in (bool, int, float):
        return None
    with _registry_lock:
        _ITEM_TYPE[t] = plain
        _NUMPY_TYPES.add(t)
        for accepts, members in _TYPE_SETS.items():
            if plain in accepts:
                members.add(t)
    return plain


def item_type(t: type) -> type | None:
    """The plain type of a numpy scalar type's ``.item()``, for the types seen so far."""
    return _ITEM_TYPE.get(t)


def _type_set(plain: frozenset[type]) -> set[type]:
    """The membership set of ``plain`` and the numpy types known to become one of them."""
    with _registry_lock:
        members = _TYPE_SETS.get(plain)
        if members is None:
            members = _TYPE_SETS[plain] = set(plain) | {
                t for t, p in _ITEM_TYPE.items() if p in plain}
    return members


def _first_test(plain: frozenset[type], var: str) -> str:
    """An expression true when ``var``'s type is the one of ``plain`` values most often have
    (float, else the first by name): an identity test, cheaper than set membership."""
    first = "float" if float in plain else sorted(t.__name__ for t in plain)[0]
    return f"{var} is None" if first == "NoneType" else f"type({var}) is {first}"


def _learn(x: Any, members: set[type]) -> bool:
    """For a value a type-only key's set lacks: whether it is a numpy scalar the key accepts."""
    return _item_type(x) is not None and type(x) in members


class _ItemJudge:
    """The compiled verdict of one subschema on a numpy scalar's ``.item()`` (False otherwise)."""

    def __init__(self, ns: dict[str, Any], name: str) -> None:
        self.ns, self.name = ns, name

    def __call__(self, x: Any) -> bool:
        if _item_type(x) is None:
            return False  # not shown here: the general path judges it
        y = x.item()
        if type(y) is float and y - y != 0:
            y = None  # written as null
        verdict: bool = self.ns[self.name](y)
        return verdict


class _ItemGen(_Gen):
    """The compiler's generator, with numpy scalars judged on ``.item()`` instead of by the
    generic interpreter (which the compiled statements call for non-JSON types)."""

    def interp(self, s: Any) -> str:
        key = ("_i", id(s))
        if key not in self.consts:
            name = self.func(s)
            self.consts[key] = self.const(_ItemJudge(self.ns, name), "_j")
        return self.consts[key]


# ---------------------------------------------------------------------------- the check


def _type_only(subs: list[Any]) -> tuple[frozenset[type], bool] | None:
    """The plain types whose every value ``subs`` accept, and whether that is all they accept
    (the verdict is a type test), or None when ``subs`` test more than types.

    Judged subschema by subschema, as Python types (``integer`` is a subset of ``number``): a
    float under ``integer`` without ``number`` depends on its value (1.0 is an integer, 1.5 is
    not), and so does one under ``number`` without ``null`` (a non-finite float is written as
    null); either leaves float out of the set and makes the verdict more than a type test.
    """
    accepted = set(pure_types(list(TYPES)))
    exact = True
    for sub in subs:
        if not isinstance(sub, dict) or any(
            k != "type" and k not in NOOP and not k.startswith("x-") for k in sub
        ):
            return None
        ty = sub.get("type", list(TYPES))
        names = [ty] if isinstance(ty, str) else list(ty)
        pure = set(pure_types(sorted(names)))
        if ("integer" in names and "number" not in names) or (
                "number" in names and "null" not in names):
            pure.discard(float)
            exact = False
        accepted &= pure
    return frozenset(accepted), exact


class MetricsCheck:
    """Per key layout compiled checks of a metrics dict with its step apart (see the module)."""

    def __init__(self, schema: dict[str, Any], apart: str) -> None:
        self.comp = BlockCompiler(schema, gen=_ItemGen)
        self.schema = schema
        self.apart = apart
        self.layouts: dict[tuple[Any, ...], LayoutCheck] = {}
        self.plans: dict[tuple[Any, ...], LayoutPlan] = {}
        self._seen: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()
        self._n = 0
        self._step = self._statements(apart, "s", step=True)
        found = int_bounds(self._subschemas(apart))  # the step's, within what orjson writes
        self.step_bounds: Bounds | None = None if found is None else (
            max(INT_MIN, found[0] if found[0] is not None else INT_MIN),
            min(INT_MAX, found[1] if found[1] is not None else INT_MAX))

    def layout(self, keys: tuple[Any, ...], values: Collection[Any] = ()) -> LayoutCheck | None:
        """The compiled check of ``keys`` (compiled on its second sight), or None: first seen,
        holds the step's key, or past the bound of compiled layouts. ``values`` (the call's
        values, in order) tell which type to test first at each key."""
        found = self.layouts.get(keys)
        if found is not None or self.apart in keys or len(keys) > _LAYOUT_KEYS_MAX:
            return found
        with self._lock:
            seen = self._seen.get(keys, 0) + 1
            if seen < 2 or len(self.layouts) >= _LAYOUTS_MAX:
                if len(self._seen) < SEEN_MAX:
                    self._seen[keys] = seen
                return None
            check = self.layouts[keys] = self._compile(keys, values)
            self.plans[keys] = self._plan(keys)
            self._seen.pop(keys, None)
            return check

    def _subschemas(self, key: Any) -> list[Any]:
        comp = self.comp
        return [comp.resolve(sub) for sub in per_key_subschemas(comp.ctx, self.schema, key)]

    def _type_test(self, plain: frozenset[type], var: str) -> list[str]:
        """Statements that ``return False`` unless ``var``'s type is in ``plain`` (numpy scalar
        types learned on the way)."""
        if not plain:
            return ["return False"]
        comp = self.comp
        members = comp.const(_type_set(plain))
        first_test = f"not {_first_test(plain, var)}"
        return [f"if {first_test} and type({var}) not in {members} and not "
                f"{comp.const(_learn)}({var}, {members}): return False"]

    def _seen_test(self, plain: frozenset[type], var: str, value: Any) -> str:
        """An identity test of ``var``'s type against ``value``'s when the set of ``plain`` holds
        it (numpy types join it here), so it implies the membership test; else ``_first_test``.
        """
        if value is _UNSEEN:
            return _first_test(plain, var)
        t = type(value)
        try:  # a numpy scalar type joins the sets accepting its .item()'s type
            known = _item_type(value) is not None or t in _type_set(plain)
        except Exception:  # an odd type (its hash raises): no identity test for it
            known = False
        if not known or t not in _type_set(plain):
            return _first_test(plain, var)
        if t is type(None):
            return f"{var} is None"
        name = t.__name__ if t in (float, int, bool, str) else self.comp.const(t)
        return f"type({var}) is {name}"

    def _statements(self, key: Any, var: str, *, step: bool = False) -> list[str]:
        """Statements that ``return False`` unless the value ``var`` at ``key`` is valid."""
        comp = self.comp
        subs = self._subschemas(key)
        out: list[str] = []
        if step:  # an int (the writer's hot path takes no other): orjson writes 64 bits
            out.append(f"if not {INT_MIN} <= {var} <= {INT_MAX}: return False")
        typed = None if step else _type_only(subs)
        if typed is not None and typed[1]:
            return self._type_test(typed[0], var)
        if not step:  # a numpy scalar is judged as its .item() (floats first: the common case)
            out.append(f"if type({var}) is not float and type({var}) in "
                       f"{comp.const(_NUMPY_TYPES)}: {var} = {var}.item()")
        if not step:  # a non-finite float is judged as the null written
            fail = "return False" if not all(interpret(comp.ctx, sub, None) for sub in subs) else (
                f"{var} = None")
            out.append(f"if type({var}) is float and {var} - {var} != 0: {fail}")
        for sub in subs:
            out += comp.block(sub, var, 2)
        return out

    def _compile(self, keys: tuple[Any, ...], values: Collection[Any] = ()) -> LayoutCheck:
        """The layout's check: the keys whose verdict is their value's type alone are judged
        together, one ``and`` chain of an identity test of the type the value had when the
        layout was compiled (when accepted; else float) or else a membership test of the
        accepted set (cheaper than a set display of their types), and one at a time (learning
        numpy types) only when that fails. So are the keys with types always accepted (an int
        under ``integer``), by their compiled statements when that fails; the other keys by
        their compiled statements."""
        self._n += 1
        name = f"_metrics_layout{self._n}"
        names = [f"a{i}" for i in range(len(keys))]
        groups: dict[frozenset[type], list[str]] = {}
        typed: list[str] = []
        valued: list[str] = []
        seen = list(values) if len(values) == len(keys) else [_UNSEEN] * len(keys)
        firsts: dict[str, str] = {}
        for key, var, value in zip(keys, names, seen, strict=True):
            found = _type_only(self._subschemas(key))
            if found is None or not found[0]:
                valued += self._statements(key, var)
            else:
                groups.setdefault(found[0], []).append(var)
                typed += self._statements(key, var)
                firsts[var] = self._seen_test(found[0], var, value)
        body = [*self._step]
        if groups:
            members = {plain: self.comp.const(_type_set(plain)) for plain in groups}
            together = " and ".join(f"({firsts[v]} or type({v}) in {members[plain]})"
                                    for plain, group in groups.items() for v in group)
            body += [f"if not ({together}):", *indent(typed)]
        body += valued
        unpack = f"{', '.join(names)}, = v.values()" if keys else "pass"
        source = "\n".join([
            f"def {name}(v, s):",
            "    try:", f"        {unpack}", "    except ValueError:  # resized meanwhile",
            "        return False",
            "    try:", *indent([*body, "return True"], 2),
            "    except RecursionError:", "        return False",
        ])
        check: LayoutCheck = self.comp.define(source, name)
        return check

    def _plan(self, keys: tuple[Any, ...]) -> LayoutPlan:
        """The layout split for the C hot path (see ``LayoutPlan``)."""
        members: list[set[type] | None] = []
        bounds: list[Bounds | None] = []
        for key in keys:
            subs = self._subschemas(key)
            found = _type_only(subs)
            exact = found is not None and bool(found[0]) and found[1]
            members.append(_type_set(found[0]) if exact and found is not None else None)
            bounds.append(None if exact else int_bounds(subs))
        return LayoutPlan(self, keys, tuple(members), tuple(bounds))

    def rest_check(self, keys: tuple[Any, ...], positions: tuple[int, ...],
                   with_step: bool) -> Callable[..., bool] | None:
        """``rest(step, *values at positions)``: the compiled statements of those keys (and of
        the step, ``with_step``), or None when that leaves nothing to judge."""
        if not positions and not with_step:
            return None
        with self._lock:
            self._n += 1
            name = f"_metrics_rest{self._n}"
            body = [*(self._step if with_step else [])]
            for i in positions:
                body += self._statements(keys[i], f"a{i}")
            params = ", ".join(["s", *(f"a{i}" for i in positions)])
            source = "\n".join([
                f"def {name}({params}):",
                "    try:", *indent([*body, "return True"], 2),
                "    except RecursionError:", "        return False",
            ])
            rest: Callable[..., bool] = self.comp.define(source, name)
        return rest


Bounds = tuple["int | None", "int | None"]


def int_bounds(subs: list[Any]) -> Bounds | None:
    """``(lo, hi)`` (None: unbounded) such that ``subs`` accept an int ``v`` (not a bool) exactly
    when ``lo <= v <= hi``, or None when their verdict on ints is more than that: read from
    ``type``, ``minimum``, ``maximum``, ``exclusiveMinimum`` and ``exclusiveMaximum`` alone."""
    lo: int | None = None
    hi: int | None = None
    for sub in subs:
        if not isinstance(sub, dict):
            return None
        for k, v in sub.items():
            if k in NOOP or k.startswith("x-"):
                continue
            if k == "type":
                names = [v] if isinstance(v, str) else v
                if not isinstance(names, list) or not ({"integer", "number"} & set(names)):
                    return None
                continue
            if type(v) not in (int, float) or v - v != 0:
                return None
            if k == "minimum":
                edge, upper = math.ceil(v), False
            elif k == "exclusiveMinimum":
                edge, upper = math.floor(v) + 1, False
            elif k == "maximum":
                edge, upper = math.floor(v), True
            elif k == "exclusiveMaximum":
                edge, upper = math.ceil(v) - 1, True
            else:
                return None
            if upper:
                hi = edge if hi is None else min(hi, edge)
            else:
                lo = edge if lo is None else max(lo, edge)
    return lo, hi


class LayoutPlan:
    """A compiled layout split for the C hot path (``rlio._accel``): per key the membership set
    of a key judged by its value's type alone (``members``), or the bounds an int value is
    judged by (``bounds``), else None; ``rest`` compiles the statements of the other keys."""

    def __init__(self, check: MetricsCheck, keys: tuple[Any, ...],
                 members: tuple[set[type] | None, ...], bounds: tuple[Bounds | None, ...]) -> None:
        self.check, self.keys, self.members, self.bounds = check, keys, members, bounds
        self._rests: dict[tuple[int, ...], Callable[..., bool] | None] = {}

    def rest(self, positions: tuple[int, ...]) -> Callable[..., bool] | None:
        """The rest check of ``positions`` (the step included unless C bounds it)."""
        if positions not in self._rests:
            if len(self._rests) >= _LAYOUTS_MAX:
                self._rests.clear()
            self._rests[positions] = self.check.rest_check(
                self.keys, positions, with_step=self.check.step_bounds is None)
        return self._rests[positions]


def compile_metrics_check(schema: dict[str, Any], apart: str) -> MetricsCheck | None:
    """The layout checks of ``schema`` with ``apart`` (the step) judged apart, or None when the
    schema does not judge objects key by key (the writer then checks whole lines)."""
    if not is_per_key(schema):
        return None
    return MetricsCheck(schema, apart)

