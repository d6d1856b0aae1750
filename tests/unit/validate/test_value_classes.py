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
