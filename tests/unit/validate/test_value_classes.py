"""The validator's hand-written value classes behave as the frozen dataclasses they replaced."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from rlio.findings import Finding, Report, Severity
from rlio.validate.fleet import FleetReport, Progress, Unreadable


@dataclasses.dataclass(frozen=True)
class FindingDC:
    """The dataclass ``Finding`` was."""

    code: str
    severity: Severity
    file: str
    line: int | None
    pointer: str
    message: str


@dataclasses.dataclass(frozen=True)
class ReportDC:
    """The dataclass ``Report`` was."""

    run: str
    findings: tuple[Finding, ...] = ()
    layout: str | None = None


@dataclasses.dataclass(frozen=True)
class ProgressDC:
    """The dataclass ``Progress`` was."""

    done: int
    total: int
    files: int
    bytes: int
    run: str | None = None


@dataclasses.dataclass(frozen=True)
class UnreadableDC:
    """The dataclass ``Unreadable`` was."""

    path: str
    message: str


@dataclasses.dataclass(frozen=True)
class FleetReportDC:
    """The dataclass ``FleetReport`` was."""

    runs: tuple[Report, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()


F = ("RL201", Severity.ERROR, "metrics.jsonl", 3, "/step", "bad")
CASES = [
    (Finding, FindingDC, F, {}),
    (Finding, FindingDC, ("RL118", Severity.WARNING, "", None, "", "x"), {}),
    (Report, ReportDC, ("runs/a",), {}),
    (Report, ReportDC, ("runs/a", (Finding(*F),)), {"layout": "flat"}),
    (Progress, ProgressDC, (1, 2, 3, 4), {}),
    (Progress, ProgressDC, (1, 2, 3, 4), {"run": "r"}),
    (Unreadable, UnreadableDC, (), {"path": "p", "message": "m"}),
    (FleetReport, FleetReportDC, (), {}),
    (FleetReport, FleetReportDC, ((Report("a"),),), {"unreadable": (Unreadable("p", "m"),)}),
]


@pytest.mark.parametrize(("cls", "ref", "args", "kwargs"), CASES)
def test_same_fields_equality_hash_and_repr(cls: type, ref: type, args: tuple[object, ...],
                                            kwargs: dict[str, object]) -> None:
    """Fields, defaults, equality, hash and repr are the dataclass's."""
    obj, want = cls(*args, **kwargs), ref(*args, **kwargs)
    names = [f.name for f in dataclasses.fields(want)]
    assert [getattr(obj, n) for n in names] == [getattr(want, n) for n in names]
    assert repr(obj) == repr(want).replace(ref.__qualname__, cls.__qualname__, 1)
    assert hash(obj) == hash(cls(*args, **kwargs))
    assert obj == cls(*args, **kwargs) and obj != want
    assert pickle.loads(pickle.dumps(obj)) == obj and copy.copy(obj) == obj


@pytest.mark.parametrize(("cls", "ref", "args", "kwargs"), CASES)
def test_frozen(cls: type, ref: type, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    """Assigning or deleting a field raises FrozenInstanceError, as on the frozen dataclass."""
    obj = cls(*args, **kwargs)
    name = dataclasses.fields(ref)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, name, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(obj, name)


@dataclasses.dataclass
class PairOrderDC:
    """The dataclass ``PairOrder`` was."""

    ordered: bool = True
    first: tuple[int, int] | None = None
    last: tuple[int, int] | None = None


@dataclasses.dataclass
class MetricsFactsDC:
    """The dataclass ``MetricsFacts`` was."""

    last_train_step: int | None = None
    records: int = 0


@dataclasses.dataclass
class CheckpointFactsDC:
    """The dataclass ``CheckpointFacts`` was."""

    resumable: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    restart_steps: set[int] = dataclasses.field(default_factory=set)
    records: int = 0


def _mutable_cases() -> list[tuple[type, type, tuple[object, ...], dict[str, object]]]:
    from rlio.validate.checks.rollout_lines import PairOrder
    from rlio.validate.checks.view import CheckpointFacts, MetricsFacts

    return [
        (PairOrder, PairOrderDC, (), {}),
        (PairOrder, PairOrderDC, (False, (0, 1)), {"last": (2, 0)}),
        (MetricsFacts, MetricsFactsDC, (), {"records": 2}),
        (CheckpointFacts, CheckpointFactsDC, (), {}),
        (CheckpointFacts, CheckpointFactsDC, ([(1, 2)], {3}), {"records": 1}),
    ]


@pytest.mark.parametrize(("cls", "ref", "args", "kwargs"), _mutable_cases())
def test_mutable_classes_behave_as_their_dataclasses(
    cls: type, ref: type, args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    """Fields, defaults (fresh containers each), equality, repr, pickling; unhashable; settable."""
    obj, want = cls(*args, **kwargs), ref(*args, **kwargs)
    names = [f.name for f in dataclasses.fields(want)]
    assert [getattr(obj, n) for n in names] == [getattr(want, n) for n in names]
    assert repr(obj) == repr(want).replace(ref.__qualname__, cls.__qualname__, 1)
    assert obj == cls(*args, **kwargs) and obj != want
    assert pickle.loads(pickle.dumps(obj)) == obj
    with pytest.raises(TypeError):
        hash(obj)
    setattr(obj, names[-1], getattr(want, names[-1]))
    if isinstance(getattr(cls(), names[0], None), (list, set)):
        assert getattr(cls(), names[0]) is not getattr(cls(), names[0])


def test_frozen_checks_and_range_tasks() -> None:
    """KindChecks and RangeTask (NamedTuples) keep their fields, defaults, equality and
    immutability; a RangeTask pickles (a helper process reads it)."""
    from rlio.validate.checks.registry import KindChecks
    from rlio.validate.parallel import RangeTask

    k = KindChecks(ranged=True)
    assert (k.records, k.document, k.large_document, k.facts, k.ranged, k.chart) == (
        None, None, None, None, True, False)
    assert k == KindChecks(None, None, None, None, True)
    assert hash(k) == hash(KindChecks(ranged=True))
    t = RangeTask("loc", "r", "f", 1, None, 0, 10, True, 5)
    assert pickle.loads(pickle.dumps(t)) == t and t.end == 10
    with pytest.raises(AttributeError):  # a NamedTuple: immutable
        t.end = 3  # type: ignore[misc]
