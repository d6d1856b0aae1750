"""The one-pass fast path of ``write_rollout_summaries``: check, cross-check and encode.

The general path takes three passes over a record: ``ordered_rollout`` (key order, fill-ins),
the schema check, ``cross_check`` (docs/format.md §9). Records as training loops build need none of
the rewriting, so a generated ``scan`` function walks a batch and, per record, makes every check
of the three in one go on values unpacked once, then encodes the record while it is still in the
processor's cache. It stops at the first record that needs the general path (or is wrong: the
general path names the error); the writer handles that one and resumes the scan after it.

The structure (key orders, required keys, the step schema) and every value check (the exact
statements of ``rlio._schema.compiler``) come from the schema document; the §9 names (split,
iteration, ids, rewards, ``step_idx``) are those ``cross_check`` uses.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from rlio._codec.jsonl import _LINE_OPTS, normalize_value
from rlio._native import native
from rlio._schema.loader import load_schema
from rlio.rules import REWARD_TOLERANCE

if TYPE_CHECKING:
    from rlio._schema.shape import Spec

__all__ = ["RolloutScan", "compile_rollout_scan", "rollout_scan"]


_OBJECT_KEYWORDS: Final = frozenset({"type", "properties", "required", "additionalProperties"})
_ARRAY_KEYWORDS: Final = frozenset({"type", "items"})
_OPTIONAL_MAX: Final = 3  # optional step keys whose in-order layouts get a compiled branch
#: The names docs/format.md §9's cross-checks read (see ``rlio.writer.rollouts.cross_check``).
_SPEC_KEYS: Final = ("split", "iteration", "group_idx", "traj_idx", "total_reward",
                     "final_reward", "steps")
_FAIL: Final = "return False"

#: ``scan(records, start, iteration, split, seen, buf, limit) -> index``, see ``RolloutScan``.
ScanFn = Callable[[list[Any], int, int, str, set[tuple[Any, Any]], bytearray, int], int]


@dataclass(frozen=True)
class RolloutScan:
    """A compiled one-pass check and encoder of rollout-summary records.

    Attributes:
        fixed: ``fixed(iteration, split)``: whether the file's iteration and split satisfy the
            schema; when not, every record would fail, so the scan must not be used.
        scan: ``scan(records, i, iteration, split, seen, buf, limit)`` appends the JSONL lines
            of ``records[i], records[i + 1], ...`` to ``buf`` while each needs nothing from the
            general path: a dict with the schema's keys in documented order, steps in a
            documented key layout, ``split`` and an int ``iteration`` equal to the file's,
            valid against the schema, an unseen ``(group_idx, traj_idx)`` (added to ``seen``),
            ``step_idx`` equal to its position, ``total_reward`` within ``REWARD_TOLERANCE`` of
            the rewards summed in order, and encodable. Returns the index where it stopped: the
            end, a record for the general path, or (checked before each record) ``buf`` holding
            ``limit`` bytes or more. A stop says nothing about validity.
    """

    fixed: Callable[[int, str], bool]
    scan: ScanFn


def _plain(node: Any, kind: str, keywords: frozenset[str]) -> bool:
    """Whether ``node`` is a schema of ``type: kind`` using only ``keywords`` (and annotations)."""
    from rlio._schema.model import NOOP

    return (isinstance(node, dict) and node.get("type") == kind
            and all(k in keywords or k in NOOP or k.startswith("x-") for k in node))


def _stop(lines: list[str]) -> list[str]:
    """Check statements that fail with ``return False`` made to stop the scan at ``i``."""
    return [line[: -len(_FAIL)] + "return i" if line.endswith(_FAIL) else line for line in lines]


def compile_rollout_scan(schema: dict[str, Any], native: Any = None) -> RolloutScan | None:
    """Compile the one-pass scan for ``schema``, or None for a shape it does not specialise.

    With ``native`` (the C extension, ``rlio._native``), the value checks whose rules are types
    and int bounds (``rlio._schema.shape``) run in C, and so do the steps' ``step_idx`` and
    reward sum; the rest stays the compiled statements.

    Specialised: an object schema (``properties``, ``required``, ``additionalProperties``)
    whose ``steps`` is an array of such objects. Records are accepted only in the documented
    key layouts, so ``additionalProperties`` never applies to an accepted record.
    """
    from rlio._schema.blocks import BlockCompiler, indent  # the compiler: imported when first used

    if not _plain(schema, "object", _OBJECT_KEYWORDS):
        return None
    comp = BlockCompiler(schema)
    props: dict[str, Any] = schema.get("properties", {})
    keys = tuple(props)
    if not set(schema.get("required", ())) <= set(keys) or not set(_SPEC_KEYS) <= set(keys):
        return None
    steps = comp.resolve(props["steps"])
    step = comp.resolve(steps.get("items", True)) if isinstance(steps, dict) else None
    if not _plain(steps, "array", _ARRAY_KEYWORDS) or not _plain(step, "object", _OBJECT_KEYWORDS):
        return None
    assert isinstance(step, dict)
    step_props: dict[str, Any] = step.get("properties", {})
    step_req = set(step.get("required", ()))
    if not {"step_idx", "reward"} <= step_req <= set(step_props):
        return None
    optional = [k for k in step_props if k not in step_req]
    subsets: list[set[str]] = [set()]
    if len(optional) <= _OPTIONAL_MAX:
        for k in optional:
            subsets += [s | {k} for s in subsets]
    v = {k: f"v_{n}" for n, k in enumerate(keys)}
    w = {k: f"w_{n}" for n, k in enumerate(step_props)}
    layouts = [tuple(k for k in step_props if k in step_req or k in subset) for subset in subsets]
    in_c = _c_specs(comp, props, step_props, layouts) if native is not None else None

    # Per record, inside ``while i < n: try:`` (depth 3). split and iteration equal the file's,
    # whose schema verdict ``fixed`` gives once per call.
    if in_c is None:
        rec = ["x = recs[i]",
               f"if type(x) is not dict or tuple(x) != {comp.const(keys)}: return i"]
    else:  # the keys in order and every value with a spec: one C call
        rec = ["x = recs[i]", f"if not {comp.const(native.Shape(in_c[0]))}(x): return i"]
    rec += [f"{', '.join(v.values())}, = x.values()",
           f"if {v['split']} != split or type({v['iteration']}) is not int"
           f" or {v['iteration']} != it: return i",
           f"_pair = ({v['group_idx']}, {v['traj_idx']})"]
    for k in keys:
        if k not in ("steps", "split", "iteration") and (in_c is None or k in in_c[1]):
            rec += _stop(comp.block(props[k], v[k], 3))
    # Steps: a branch per documented key layout (the required keys alone first: the common one).
    loop = ["if type(_s) is not dict: return i", "_keys = tuple(_s)"]
    for n, subset in enumerate(subsets):
        layout = tuple(k for k in step_props if k in step_req or k in subset)
        loop += [f"{'el' if n else ''}if _keys == {comp.const(layout)}:",
                 f"    {', '.join(w[k] for k in layout)}, = _s.values()"]
        for k in layout:
            if k in subset:
                loop += indent(_stop(comp.block(step_props[k], w[k], 6)))
    loop += ["else:", "    return i"]
    for k in step_props:
        if k in step_req:
            loop += _stop(comp.block(step_props[k], w[k], 5))
    loop += [f"if {w['step_idx']} != _j: return i",
             f"if _exp is not None: _exp = None if {w['reward']} is None"
             f" else _exp + {w['reward']}",
             "_j += 1"]
    if in_c is None or in_c[2] is None:
        rec += [f"if type({v['steps']}) is not list: return i",
                f"_exp = {v['final_reward']}", "_j = 0", f"for _s in {v['steps']}:",
                *indent(loop)]
    else:  # every step's layout and values, then step_idx and the rewards' sum, in C
        rec += [f"if not {comp.const(native.Shape(in_c[2]))}({v['steps']}): return i",
                f"_exp = {comp.const(native.step_sum)}({v['steps']}, {v['final_reward']}, "
                "'step_idx', 'reward')", "if _exp is ...: return i"]
    total = v["total_reward"]
    dumps, norm = comp.const(orjson.dumps), comp.const(normalize_value)
    rec += [f"if {total} is not None and _exp is not None"
            f" and not abs({total} - _exp) <= {REWARD_TOLERANCE!r}: return i",
            f"_line = {dumps}(x, {norm}, {_LINE_OPTS})",  # positional: no keyword dict
            "_n = len(seen)", "seen.add(_pair)", "if len(seen) == _n: return i"]  # seen before
    # Anything raised (a user type the checks or the encoder trip on) sends the record to the
    # general path, which names the problem; ``seen`` and ``buf`` change only after success.
    loop_body = ["    n = len(recs)", "    while i < n:", "        if len(buf) >= limit: return i",
                 "        try:", *indent(rec, 3), "        except Exception:",
                 "            return i", "        buf += _line", "        i += 1", "    return i"]
    if in_c is not None and not in_c[1] and in_c[2] is not None and len(keys) <= 64:
        # every record key has a spec: the whole loop in C (the statements above its reference)
        at = tuple(keys.index(k) for k in ("split", "iteration", "group_idx", "traj_idx",
                                            "total_reward", "final_reward", "steps"))
        plan = (native.Shape(in_c[0]), native.Shape(in_c[2]), at, REWARD_TOLERANCE,
                orjson.dumps, normalize_value, _LINE_OPTS)
        loop_body = [f"    return {comp.const(native.scan_records)}(recs, i, it, split, seen, "
                     f"buf, limit, {comp.const(plan)})"]
    source = "\n".join([
        "def _scan(recs, i, it, split, seen, buf, limit):", *loop_body, "",
        "def _fixed(it, split):",
        *indent([*comp.block(props["iteration"], "it", 1), *comp.block(props["split"], "split", 1),
                 "return True"]),
    ])
    scan: ScanFn = comp.define(source, "_scan")
    fixed: Callable[[int, str], bool] = comp.get("_fixed")
    return RolloutScan(fixed=fixed, scan=scan)


def _c_specs(comp: Any, props: dict[str, Any], step_props: dict[str, Any],
             layouts: list[tuple[str, ...]]) -> tuple[Spec, set[str], Spec | None]:
    """The C specs of a record (its keys in order; split, iteration and steps left to the scan),
    the keys whose values the statements still judge (no spec), and the steps' spec (None: a
    step key has none, so the steps stay the compiled loop)."""
    from rlio._schema.shape import ANY, K_LIST, K_OBJECTS, value_spec

    specs, left = [], set()
    for k, node in props.items():
        spec = ANY if k in ("steps", "split", "iteration") else value_spec(comp.resolve, node)
        if spec is None:
            left.add(k)
        specs.append(spec or ANY)
    step_specs = {k: value_spec(comp.resolve, node) for k, node in step_props.items()}
    steps: Spec | None = None
    if all(spec is not None for spec in step_specs.values()):
        steps = (K_LIST, (K_OBJECTS, tuple((lay, tuple(step_specs[k] for k in lay))
                                           for lay in layouts)))
    return (K_OBJECTS, ((tuple(props), tuple(specs)),)), left, steps


@functools.cache
def _scan_for(native: Any) -> RolloutScan | None:
    """The scan compiled once per process for each of with and without the extension."""
    return compile_rollout_scan(load_schema("rollout-summary-line"), native)


def rollout_scan() -> RolloutScan | None:
    """The compiled scan of the rollout-summary schema (see ``compile_rollout_scan``), with the
    C extension's checks where it is built and not turned off (``rlio._native``)."""
    return _scan_for(native())
