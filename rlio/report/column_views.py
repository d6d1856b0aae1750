"""Two views of one block of ``metrics.jsonl`` records for the report's columns.

``rlio.report.columns`` reads a block (``_BLOCK`` records) key by key. A block read one record at
a time is kept as its records (``RecordsView``: a key's column is fetched when asked for); a block
the validator hands over a few hundred lines at a time is kept as columns (``ColumnsView``), taken
while the records are fresh, so no record outlives its block of lines.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from itertools import repeat
from typing import Any, Final

from rlio.rules import TRAINING_KEYS

TRAINING: Final = frozenset(TRAINING_KEYS)


class Missing:
    """The type of the value of a key a record lacks."""


MISSING: Final = Missing()


def _progress(rec: dict[str, Any]) -> bool:
    """Whether a record is a training line's (it has a progress key)."""
    return not rec.keys().isdisjoint(TRAINING_KEYS)


class RecordsView:
    """A block read from its records: a key's column is fetched when asked for."""

    def __init__(self, recs: list[dict[str, Any]]) -> None:
        self.recs = recs
        self.n = len(recs)

    def get(self, key: str) -> list[Any]:
        """The values at ``key``, ``MISSING`` where a record lacks it."""
        return list(map(dict.get, self.recs, repeat(key), repeat(MISSING)))

    def progress_at(self, i: int) -> bool:
        return _progress(self.recs[i])

    def progress(self) -> list[bool]:
        return list(map(_progress, self.recs))


class ColumnsView:
    """A block kept as the columns of the keys the charts read (the records themselves are
    dropped as soon as they are read: the validator's blocks hand them over still hot)."""

    def __init__(self) -> None:
        self.n = 0
        self.cols: dict[str, list[Any]] = {}
        self.flags: list[bool] = []

    def add(self, recs: list[dict[str, Any]], keys: Iterable[str],
            shared: tuple[str, ...] | None,
            taken: tuple[dict[str, tuple[Any, ...]], int, int] | None = None) -> None:
        """Append records (``shared``: the one layout they all have, when they share one;
        ``taken``: that layout's columns already read, of which ``recs`` are ``[at:end]``)."""
        n, have = len(recs), None if shared is None else frozenset(shared)
        asked = dict.fromkeys(keys)
        for k in [*asked, *(k for k in self.cols if k not in asked)]:
            col = self.cols.get(k)
            if col is None:  # a key first wanted now: no earlier record of the block had it
                col = self.cols[k] = [MISSING] * self.n
            if k not in asked:  # a key not read for these records (see ``block``)
                col += repeat(MISSING, n)
            elif have is None:
                col += map(dict.get, recs, repeat(k), repeat(MISSING))
            elif k in have:
                if taken is None:
                    col += map(operator.itemgetter(k), recs)
                else:
                    values, at, end = taken
                    col += values[k] if at == 0 and end == len(values[k]) else values[k][at:end]
            else:
                col += repeat(MISSING, n)
        if shared is None:
            self.flags += map(_progress, recs)
        else:
            self.flags += repeat(not TRAINING.isdisjoint(shared), n)
        self.n += n

    def get(self, key: str) -> list[Any]:
        col = self.cols.get(key)
        return [MISSING] * self.n if col is None else col

    def progress_at(self, i: int) -> bool:
        return self.flags[i]

    def progress(self) -> list[bool]:
        return self.flags


View = RecordsView | ColumnsView
