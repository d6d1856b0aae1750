"""Per-record checks of rollout-summary files (docs/format.md §6, §9), run in the streaming pass.

``RolloutChecks`` judges each schema-valid trajectory: iteration and split against the file name
(RL401, RL402), ``(group_idx, traj_idx)`` order (uniqueness costs no memory while pairs increase;
``duplicate_pairs`` is the second pass when they do not, RL403), ``step_idx`` (RL404), the
``total_reward`` sum (RL405), steps after ``episode_done`` (RL406) and the key order (RL202).
Records arrive typed from the fast decoder (``rlio._schema.decoders``) or as dicts from the exact
path; the checks read both by attribute, so there is one implementation.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace

from rlio import layout
from rlio._record import Record
from rlio._schema.loader import load_schema
from rlio.rules import REWARD_TOLERANCE, bad_step_index, reward_mismatch, step_after_done
from rlio.validate.scan import Sink, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

#: Records checked for their key order (RL202): writers emit one key order, the first tell.
KEY_ORDER_RECORDS: Final = 100
_STEP_IDX: Final = operator.attrgetter("step_idx")
_REWARD: Final = operator.attrgetter("reward")
_DONE: Final = operator.attrgetter("episode_done")


class PairOrder(Record):
    """How ``(group_idx, traj_idx)`` pairs ran through a byte range: strictly increasing or not.

    Strictly increasing pairs cannot repeat, so uniqueness costs no memory on the usual path; a
    range that breaks the order triggers a second, dictionary-based pass (``duplicate_pairs``).
    """

    _fields = ("ordered", "first", "last")

    def __init__(self, ordered: bool = True, first: tuple[int, int] | None = None,
                 last: tuple[int, int] | None = None) -> None:
        self.ordered = ordered
        self.first = first
        self.last = last

    def then(self, later: PairOrder) -> PairOrder:
        """The order of this range followed by ``later``."""
        if later.first is None:
            return self
        if self.last is None:
            return later
        ordered = self.ordered and later.ordered and self.last < later.first
        return PairOrder(ordered, self.first, later.last)


@functools.cache
def _splits(label: str | None) -> frozenset[str]:
    """The ``split`` values a file of evaluator ``label`` may carry (raw or sanitized label)."""
    if label is None:
        return frozenset({layout.split_name(None)})
    return frozenset({layout.split_name(label), layout.split_name(layout.sanitize_label(label))})


@functools.cache
def _documented_keys() -> tuple[str, ...]:
    return tuple(load_schema("rollout-summary-line")["required"])


@functools.cache
def _batch_keys_of() -> Callable[[list[Any], list[bytes]], tuple[str, ...] | None]:
    """The key order of a batch of typed records in one encode (``rlio._schema.decoders``)."""
    from rlio._schema.key_order import batch_key_order_for

    keys_of = batch_key_order_for("rollout-summary-line")
    assert keys_of is not None  # a typed record came from this schema's decoder
    return keys_of


@functools.cache
def _keys_of() -> Callable[[Any, bytes], tuple[str, ...]]:
    """The key order of a typed record from its raw line (``rlio._schema.decoders``; imported
    here, once a typed record exists: msgspec is loaded by then)."""
    from rlio._schema.key_order import key_order_for

    keys_of = key_order_for("rollout-summary-line")
    assert keys_of is not None  # a typed record came from this schema's decoder
    return keys_of


def _view(rec: dict[str, Any]) -> SimpleNamespace:
    """A schema-valid rollout record decoded as a dict, read through the decoded record's
    attribute names (copied at C speed): one implementation of the checks serves both
    decoders."""
    view = SimpleNamespace(**rec)
    view.steps = [SimpleNamespace(**st) for st in rec["steps"]]
    return view


class RolloutChecks:
    """Per-record checks of one ``*_rollout_summaries.jsonl`` file.

    ``check(record, line, source)`` reads a schema-valid record by attribute (the fast decoder's
    typed record); ``source`` is the raw line, or the decoded dict, that shows the key order.
    ``hook`` is the ``scan_jsonl`` hook for records decoded as dicts: it views valid ones by
    attribute and calls ``check``. Both are closures over local state: they run once per
    trajectory on the validator's hot path.
    """

    def __init__(self, sink: Sink, *, iteration: int | None, label: str | None,
                 key_lines: int = KEY_ORDER_RECORDS) -> None:
        self.sink = sink
        self.split = layout.split_name(label)
        splits = _splits(label)
        keys = _documented_keys()
        self.order = PairOrder()
        order = self.order
        add = sink.add
        expected_split = self.split
        last_g = last_t = -1
        # key-order checks left: of every record decoded as a dict, and of the typed records of
        # the first ``key_lines`` lines, whose order is read from their raw bytes
        key_checks = KEY_ORDER_RECORDS
        keys_of: Callable[[Any, bytes], tuple[str, ...]] | None = None
        # typed records whose key order is read in one batch (``flush``), before any record
        # decoded as a dict is and when the scan ends: the same records judged, in line order
        typed: list[Any] = []
        raw: list[bytes] = []
        lines: list[int] = []
        tolerance = REWARD_TOLERANCE  # within the rule whatever the magnitudes: a cheap prefilter

        def check(rec: Any, line: int, source: bytes | dict[str, Any]) -> None:
            nonlocal last_g, last_t
            it = rec.iteration
            if it != iteration and iteration is not None:
                add("RL401", f"iteration {it} differs from {iteration} in the file name",
                    line=line, pointer="/iteration")
            split = rec.split
            if split not in splits:
                add("RL402", f"split {short(split)} differs from the file's split "
                             f"{expected_split!r}", line=line, pointer="/split")
            g = rec.group_idx
            t = rec.traj_idx
            if g > last_g or (g == last_g and t > last_t):
                if last_g < 0:
                    order.first = (g, t)
                last_g = g
                last_t = t
            else:
                order.ordered = False
            steps = rec.steps
            total = rec.total_reward
            final = rec.final_reward
            if len(steps) == 1:  # the common single-turn trajectory, without building tuples
                st = steps[0]
                if st.step_idx != 0:
                    _bad_step_idx(sink, steps, (st.step_idx,), line)
                r = st.reward
                if (total is not None and final is not None and r is not None
                        and abs(total - r - final) > tolerance):  # _total applies the rule
                    _total(sink, total, final, (r,), line)
            elif steps:
                # one pass for the usual record; anything unusual gets the full report (_steps)
                rewards: list[Any] = []
                keep = rewards.append
                end = len(steps) - 1
                for i, st in enumerate(steps):
                    if st.step_idx != i or (st.episode_done and i < end):
                        _steps(sink, steps, total, final, line)
                        break
                    keep(st.reward)
                else:
                    if (total is not None and final is not None and None not in rewards
                            and abs(total - sum(rewards) - final) > tolerance):
                        _total(sink, total, final, rewards, line)
            elif total is not None and final is not None:
                _total(sink, total, final, (), line)
            if key_checks and (type(source) is not bytes or line <= key_lines):
                if isinstance(source, bytes):
                    typed.append(rec)
                    raw.append(source)
                    lines.append(line)
                    return
                if typed:
                    flush()
                if key_checks:
                    key_order(tuple(source), line)  # a dict shows its key order

        def key_order(found: tuple[str, ...], line: int) -> None:
            nonlocal key_checks
            if found != keys:
                add("RL202", f"keys are {short(list(found), 120)}; documented order is "
                             f"{', '.join(keys)}", line=line)
                key_checks = 0
            else:
                key_checks -= 1

        def flush() -> None:
            """Judge the key order of the typed records held back, in line order."""
            nonlocal keys_of, key_checks
            if not typed:
                return
            batch, sources, at = typed[:], raw[:], lines[:]
            typed.clear()
            raw.clear()
            lines.clear()
            if _batch_keys_of()(batch, sources) == keys and len(batch) <= key_checks:
                key_checks -= len(batch)  # every line its record's encoding, in this order
                return
            if keys_of is None:
                keys_of = _keys_of()
            for rec, source, line in zip(batch, sources, at, strict=True):
                if not key_checks:
                    return
                key_order(keys_of(rec, source), line)

        def hook(rec: Any, line: int, ok: bool) -> None:
            if ok:
                check(_view(rec), line, rec)

        def finish() -> PairOrder:
            flush()
            if order.first is not None:
                order.last = (last_g, last_t)
            return order

        self.check: Callable[[Any, int, bytes | dict[str, Any]], None] = check
        self.hook: Callable[[Any, int, bool], None] = hook
        self.finish: Callable[[], PairOrder] = finish
        #: Judges the key order of held-back typed records (``finish`` does it too; a scan
        #: that raises calls it, so what was judged before the error is reported).
        self.flush: Callable[[], None] = flush


def _total(sink: Sink, total: Any, final: Any, rewards: Sequence[Any], line: int) -> None:
    expected = reward_mismatch(total, final, rewards)
    if expected is not None:
        sink.add("RL405", f"total_reward {short(total)} but the step rewards plus "
                          f"final_reward sum to {short(expected)}",
                 line=line, pointer="/total_reward")


def _steps(sink: Sink, steps: list[Any], total: Any, final: Any, line: int) -> None:
    idx = tuple(map(_STEP_IDX, steps))
    _bad_step_idx(sink, steps, idx, line)
    dones = tuple(map(_DONE, steps))
    at = step_after_done(dones)
    if at is not None:
        sink.add("RL406", f"{len(steps) - 1 - at} step(s) after episode_done: true at "
                          f"step {at}", line=line, pointer=f"/steps/{at + 1}")
    rewards = tuple(map(_REWARD, steps))
    if (total is not None and final is not None and None not in rewards
            and abs(total - sum(rewards) - final) > REWARD_TOLERANCE):
        _total(sink, total, final, rewards, line)


def _bad_step_idx(sink: Sink, steps: list[Any], idx: tuple[Any, ...], line: int) -> None:
    at = bad_step_index(idx)
    if at is not None:
        sink.add("RL404", f"step_idx {short(idx[at])} at position {at}; step_idx must "
                          f"run 0..{len(steps) - 1}", line=line,
                 pointer=f"/steps/{at}/step_idx")


def duplicate_pairs(records: Iterator[tuple[int, Any]], sink: Sink) -> None:
    """Report repeated ``(group_idx, traj_idx)`` pairs (RL403) at their later line."""
    seen: dict[tuple[int, int], int] = {}
    for line, rec in records:
        if not isinstance(rec, dict):
            continue
        g, t = rec.get("group_idx"), rec.get("traj_idx")
        if type(g) is not int or type(t) is not int:
            continue
        first = seen.setdefault((g, t), line)
        if first != line:
            sink.add("RL403", f"(group_idx, traj_idx) = ({g}, {t}) repeats line {first}",
                     line=line)
