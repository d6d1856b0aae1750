"""What the benchmarks share: interleaved timing and the rows ``run_all.py`` prints.

A benchmark module that belongs in the whole table defines ``rows(quick: bool) -> list[Row]``:
each row times rlio and its floor interleaved in this one process (``interleaved``), so load on
the machine hits both alike, and reports their medians and the ratio against the issue's goal.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One hot path: rlio's median, its floor's median (same unit), and the goal ratio."""

    path: str
    rlio: float
    floor: float
    unit: str
    goal: float | None
    floor_name: str = "floor"

    @property
    def ratio(self) -> float:
        """rlio's time over the floor's."""
        return self.rlio / self.floor if self.floor else float("inf")

    @property
    def meets_goal(self) -> bool | None:
        """Whether the ratio is within the goal (None without a goal)."""
        return None if self.goal is None else self.ratio <= self.goal


def interleaved(variants: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median of each variant over ``rounds`` rounds, the variants run in turn every round.

    Each callable returns the time it measured (seconds, or any unit, the same for all). The
    order is reversed every other round, so what one variant leaves behind (a journal commit
    after an fsync, a warm cache) does not always land on the same other variant.
    """
    samples: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants.items())
    for k in range(rounds):
        for name, fn in order if k % 2 == 0 else reversed(order):
            samples[name].append(fn())
    return {name: statistics.median(values) for name, values in samples.items()}


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """A variant for ``interleaved``: the wall time of one call of ``fn``."""

    def run() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return run


def touch(doc: object) -> None:
    """Visit every value of a parsed document (a dict or a list) once, testing its type, and
    nothing else: the least a check of every value costs in pure Python (the per-value floor the
    ``pure-Python floor`` rows add to orjson's)."""
    for value in doc.values() if type(doc) is dict else doc:  # type: ignore[attr-defined]
        t = type(value)
        if t is dict or t is list:
            touch(value)
