"""The block pass over metrics.jsonl (``rlio.validate.blocks``) against the per-line exact path.

Every test feeds the same bytes to ``scan_jsonl`` (one line at a time) and to ``scan_blocks`` and
asserts the same findings (codes, lines, pointers, messages, order), the same facts and, for the
report's observer, the same chart columns.
"""

from __future__ import annotations

import io
import math
import random
from typing import Any

import orjson
import pytest
from factories import pure_python
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio import layout
from rlio._native import native
from rlio.findings import Finding
from rlio.report.columns import MetricsScan, ObservedChecks
from rlio.validate.blocks import ColumnRules, Rule, _layouts, column_rules, scan_blocks
from rlio.validate.checks.metrics import MetricsChecks
from rlio.validate.checks.view import CheckpointFacts, MetricsFacts, RunView
from rlio.validate.scan import Sink, scan_jsonl

WANTED = ("env/all/reward/total", "progress/done_frac", "optim/kl_sample_train_v1")


def view(iterations: list[int], restart: set[int]) -> RunView:
    paths = [layout.iteration_path("flat", i, "html") for i in iterations]
    files = {p: layout.parse_path(p) for p in paths}
    v = RunView("flat" if paths else None, files, dict.fromkeys(paths, "file"),
                {p: p for p in paths})
    v.checkpoints = CheckpointFacts(restart_steps=restart)
    return v


class Counted(MetricsChecks):
    """The metrics checks, counting the blocks they judged at once."""

    blocks = 0

    def block(self, *args: Any) -> bool:
        done = super().block(*args)
        self.blocks += done
        return done


def judge(data: bytes, *, blocks: int | None, carry: int = 8 << 20, iterations: list[int] = (),  # type: ignore[assignment]
          restart: set[int] = frozenset(), observe: bool = False,  # type: ignore[assignment]
          cap: int = 5) -> tuple[list[Finding], MetricsFacts, Any, int]:
    """Findings, facts, chart scan (when observed) and blocks judged at once, of one path."""
    sink = Sink("metrics.jsonl", cap)
    checks = Counted(sink, view(list(iterations), set(restart)))
    got: list[MetricsScan] = []
    hook: Any = ObservedChecks(checks, WANTED, got.append) if observe else checks
    if blocks is None:
        scan_jsonl(io.BytesIO(data), sink, schema="metrics-line", append_only=True,
                   on_record=hook)
    else:
        scan_blocks(io.BytesIO(data), sink, schema="metrics-line", append_only=True,
                    checks=hook, chunk=blocks, carry=carry)
    facts = hook.finish()
    scan = None
    if got:
        m = got[0]
        scan = (m.records, m.x_label, m.last_x, m.restarts, list(m.keys), m.stats.bad,
                {k: (c.total, c.skipped, c.points()) for k, c in m.columns.items()})
    return sink.finish(), facts, scan, checks.blocks


def line(i: int, rng: random.Random) -> bytes:
    return (f'{{"step":{i},"progress/batch":{i},"progress/done_frac":{rng.random()!r},'
            f'"optim/lr":4e-05,"optim/kl_sample_train_v1":{rng.random()!r},'
            f'"env/all/reward/total":{rng.random()!r},"time/total":1.5,"time/x:count":2,'
            f'"note":"ok","flag":true}}\n').encode()


DAMAGE = [
    lambda i: b'{"step":%d,"progress/batch":"two"}\n' % i,  # bad type (RL201)
    lambda i: b'{"step":%d,"progress/batch":%d,"env/a":NaN}\n' % (i, i),  # RL104
    lambda i: b"not json\n",  # RL102
    lambda i: b"\n",  # RL105
    lambda i: b'{"step":%d,"progress/batch":%d,"env/a":1' % (i, i),  # cut (RL117/RL102)
    lambda i: b'{"step":%d,"progress/batch":%d}\n' % (max(0, i - 3), i),  # regression
    lambda i: b'{"progress/batch":%d,"env/a":1}\n' % i,  # missing step
    lambda i: b'{"step":%d,"step":%d,"progress/batch":%d}\n' % (i, i + 5, i),  # duplicate key
    lambda i: b'{"step":%d,"progress/done_frac":1.5}\n' % i,  # range warning (RL205)
    lambda i: b'{"step":%d,"time/total":-1,"progress/batch":%d}\n' % (i, i),  # RL205
    lambda i: b'{"step":%d,"time/x:count":2.0,"progress/batch":%d}\n' % (i, i),  # int float
    lambda i: b'{"step":true,"progress/batch":%d}\n' % i,  # a bool step
    lambda i: b'{"step":%d.0,"progress/batch":%d}\n' % (i, i),  # an integral float step
    lambda i: b'{"progress/batch":%d,"step":%d}\n' % (i, i),  # step not first (RL202)
    lambda i: b'{"step":%d,"test/env/all/reward/total":0.5}\n' % i,  # eval line (RL407)
    lambda i: b'{"step":%d,"progress/batch":%d,"x":[1]}\n' % (i, i),  # array value
    lambda i: b"[1, 2]\n",  # not an object
    lambda i: b'{"step":%d,"progress/batch":%d,"env/a":null}\n' % (i, i),  # null value
    lambda i: b'{"step":%d,"progress/batch":%d,"env/a":1e400}\n' % (i, i),  # overflow
    lambda i: b'{"step":%d,"progress/batch":%d,"big":123456789012345678901234}\n' % (i, i),
]


def file_of(n: int, damage: list[tuple[int, int]], seed: int, torn: bool) -> bytes:
    rng = random.Random(seed)
    at = dict(damage)
    out = [DAMAGE[at[i] % len(DAMAGE)](i) if i in at else line(i, rng) for i in range(n)]
    data = b"".join(out)
    return data[:-1] if torn and data.endswith(b"\n") else data


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 400), damage=st.lists(st.tuples(st.integers(0, 399),
                                                           st.integers(0, 100)), max_size=6),
       seed=st.integers(0, 3), torn=st.booleans(), chunk=st.sampled_from([64, 300, 2048, 9000]),
       files=st.sampled_from(["none", "all", "some"]), restart=st.sampled_from([(), (50, 100)]),
       observe=st.booleans(), pure=st.booleans())
def test_blocks_give_the_exact_paths_findings(
    n: int, damage: list[tuple[int, int]], seed: int, torn: bool, chunk: int, files: str,
    restart: tuple[int, ...], observe: bool, pure: bool,
) -> None:
    """Randomly damaged metrics files give the same findings, facts and charts on both paths
    (the block passes in C where the extension is built, and in Python)."""
    data = file_of(n, damage, seed, torn)
    its = {"none": [], "all": list(range(n)), "some": list(range(0, n, 7))}[files]
    exact = judge(data, blocks=None, iterations=its, restart=set(restart), observe=observe)
    with pure_python(pure):
        fast = judge(data, blocks=chunk, iterations=its, restart=set(restart), observe=observe)
    assert fast[:3] == exact[:3]


@pytest.mark.parametrize("pure", [False, True], ids=["c-passes", "python-passes"])
def test_clean_files_are_judged_by_blocks(pure: bool) -> None:
    """A clean file takes the block path (the differential test is not vacuous) and agrees,
    with the column passes in C (where built) and in Python."""
    data = file_of(3000, [], 1, False)
    exact = judge(data, blocks=None, iterations=list(range(0, 3000, 3)))
    with pure_python(pure):
        fast = judge(data, blocks=4096, iterations=list(range(0, 3000, 3)))
    assert fast[:3] == exact[:3]
    assert fast[3] > 50
    assert any(f.code == "RL412" for f in fast[0])


def test_charts_agree_where_decimation_applies() -> None:
    """On a run long enough to fold its columns into buckets, the charts show the same points."""
    data = file_of(30_000, [(7000, 5), (20_000, 2), (25_000, 14)], 2, False)
    exact = judge(data, blocks=None, observe=True, restart={6997})
    fast = judge(data, blocks=1 << 17, observe=True, restart={6997})
    assert fast[2] == exact[2]
    assert fast[:2] == exact[:2]
    assert max(c[0] for c in exact[2][-1].values()) > 20_000  # folded: width > 1


def test_a_long_line_hands_the_rest_to_the_exact_path() -> None:
    """A line longer than the long-line bound is reported as the exact path does (RL115)."""
    rng = random.Random(0)
    big = b'{"step":5,"progress/batch":5,"note":"' + b"x" * (1 << 21) + b'"}\n'
    data = b"".join(line(i, rng) for i in range(5)) + big + b"".join(
        line(i, rng) for i in range(6, 40))
    assert judge(data, blocks=1 << 16)[:2] == judge(data, blocks=None)[:2]
    assert any(f.code == "RL115" for f in judge(data, blocks=1 << 16)[0])


def test_rules_are_read_off_the_schema() -> None:
    """The metrics schema's rules per key: types, and the warning-level bounds included."""
    rules = column_rules("metrics-line")
    assert rules is not None
    nums = frozenset({int, float, type(None)})
    assert rules.rule("step") == Rule(frozenset({int}), 0)
    assert rules.rule("progress/done_frac") == Rule(nums, 0, False, 1)
    assert rules.rule("time/a:count") == Rule(frozenset({int, type(None)}), 0)
    assert rules.rule("env/x") == Rule(nums)
    assert rules.rule("other") == Rule(frozenset({int, float, str, bool, type(None)}))


def test_unmodelled_keywords_give_no_rule() -> None:
    """A key whose schema uses a keyword the rules do not model has no rule (exact path)."""
    rules = ColumnRules({"type": "object", "properties": {
        "a": {"multipleOf": 2}, "b": {"exclusiveMinimum": 0}, "c": {"enum": [1]}}})
    assert rules.rule("a") is None
    assert rules.rule("c") is None
    b = rules.rule("b")
    assert b is not None and not b.clears([0]) and b.clears([1e-9, None])
    assert not b.clears([1e-9, "s"])  # a bound over strings too: left to the exact path
    assert not Rule(frozenset({int, float, str}), 0).clears([1, "s"])


def test_much_damage_hands_the_rest_to_the_exact_path() -> None:
    """Blocks that keep ending on a bad line are carried, then the rest of the file is read on
    the exact path from where the blocks stopped: the same findings."""
    rng = random.Random(4)
    good = b"".join(line(i, rng) for i in range(300))
    bad = b"".join(line(i, rng)[:-30] + b"\n" for i in range(300, 600))  # every line cut
    data = good + bad + b"".join(line(i, rng) for i in range(600, 700))
    exact = judge(data, blocks=None)
    fast = judge(data, blocks=4096, carry=20_000)
    assert fast[:2] == exact[:2]
    assert fast[3] > 0 and any(f.code == "RL102" for f in fast[0])


VALUES = st.one_of(st.integers(-3, 3), st.floats(-2, 2, allow_nan=False), st.none(),
                   st.booleans(), st.sampled_from(["s", 10**30, 1e300, [1], {"a": 1}]))
KEYS = ["step", "progress/batch", "progress/done_frac", "optim/lr", "time/total", "time/a:count",
        "env/x", "env/y", "other", "note"]


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(st.sampled_from(KEYS), min_size=2, max_size=7, unique=True),
       rows=st.lists(st.lists(VALUES, min_size=7, max_size=7), min_size=1, max_size=6))
def test_columns_of_one_rule_are_cleared_together_as_one_by_one(
    keys: list[str], rows: list[list[Any]],
) -> None:
    """A layout's columns cleared per distinct rule at once give the verdict of each key's
    column judged alone, over every value type (bools, nulls, strings, huge numbers, ranges)."""
    rules = column_rules("metrics-line")
    assert rules is not None
    assert len(rules._plan(("env/x", "env/y", "optim/lr", "time/total"))) == 2  # (2 rules)
    recs = [dict(zip(keys, row, strict=False)) for row in rows]
    layouts: dict[tuple[str, ...], None] = {tuple(keys): None}
    columns = list(zip(*(tuple(r.values()) for r in recs), strict=True))
    alone = True
    for key, col in zip(keys, columns, strict=True):
        r = rules.rule(key)
        bounded = r is not None and (r.lo is not None or r.hi is not None)
        assert r is not None and (not bounded or (r.types is not None
                                                  and r.types <= {int, float, type(None)}))
        alone = alone and r.clears(col)
    assert rules.clear(recs, layouts, columns) == alone


KEYS = ["step", "a", "b", "c"]


@st.composite
def record_blocks(draw: st.DrawFn) -> list[Any]:
    """Blocks of records as a parser hands them over: mostly one layout, some with keys in
    another order, a missing or extra key, another first key, a non-dict."""
    out: list[Any] = []
    for i in range(draw(st.integers(1, 12))):
        keys = list(KEYS)
        change = draw(st.sampled_from(["same"] * 6 + ["order", "missing", "extra", "first",
                                                      "list"]))
        if change == "order":
            keys[1:] = draw(st.permutations(keys[1:]))
        elif change == "missing":
            keys.pop(draw(st.integers(1, 3)))
        elif change == "extra":
            keys.append("d")
        elif change == "first":
            keys = draw(st.permutations(keys))
        if change == "list":
            out.append([i])
            continue
        out.append(orjson.loads(orjson.dumps({k: i for k in keys})))  # parsed: shared keys
    return out


@settings(max_examples=300, deadline=None)
@given(record_blocks())
def test_block_columns_in_c_are_the_python_layouts(recs: list[Any]) -> None:
    """The C block_columns gives the columns ``_layouts`` gives for one shared layout, and
    None exactly where the records share none (any order of the other keys is the same)."""
    accel = native()
    if accel is None or type(recs[0]) is not dict or len(recs[0]) < 2:
        return
    first = tuple(recs[0])
    got = accel.block_columns(recs, first)
    if any(type(r) is not dict for r in recs):
        assert got is None
        return
    _, columns = _layouts(recs)
    assert got == columns


def test_number_passes_in_c_agree_with_python() -> None:
    """finite_numbers is True only where the Python test (types, finite sum) is, and all_ints
    is the Python type test."""
    accel = native()
    if accel is None:
        return
    cases = [[1.0, 2], [1.0, math.nan], [1e308, 1e308], [2**60], [True], [None, 1.0], [], [1e299],
             [-(2**53) + 1, 2.5], ["1"], [1, 2, 3]]
    for vals in cases:
        if accel.finite_numbers(vals):
            assert set(map(type, vals)) <= {int, float} and math.isfinite(sum(vals)), vals
        assert accel.all_ints(vals) == (set(map(type, vals)) <= {int}), vals
    assert accel.finite_numbers([1.0, 2, -3.5]) and accel.all_ints([1, 2])
