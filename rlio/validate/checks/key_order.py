"""The RL202 message: which keys of a record are out of the documented order, named."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

__all__ = ["order_message"]

#: Misplaced keys named one by one; more are counted.
_NAMED = 3


def _kept(ranks: list[int]) -> set[int]:
    """Positions of one longest increasing run of ``ranks`` (patience sorting)."""
    tails: list[int] = []  # rank at the end of the best run of each length
    ends: list[int] = []  # position of that rank
    back: list[int] = [-1] * len(ranks)
    for i, r in enumerate(ranks):
        k = bisect.bisect_left(tails, r)
        back[i] = ends[k - 1] if k else -1
        if k == len(tails):
            tails.append(r)
            ends.append(i)
        else:
            tails[k], ends[k] = r, i
    kept: set[int] = set()
    i = ends[-1] if ends else -1
    while i >= 0:
        kept.add(i)
        i = back[i]
    return kept


def order_message(found: Sequence[str], documented: Sequence[str]) -> str:
    """Name the fewest keys of ``found`` that, moved, put it in ``documented`` order: where the
    documented order puts each (after which key), then the documented order of the record's keys.
    Keys not in ``documented`` are ignored."""
    known = set(found)
    expected = [k for k in documented if k in known]
    rank = {k: i for i, k in enumerate(expected)}
    keys = [k for k in found if k in rank]
    kept = _kept([rank[k] for k in keys])
    moved = [k for i, k in enumerate(keys) if i not in kept]

    def where(key: str) -> str:
        r = rank[key]
        return "first" if r == 0 else f"after {expected[r - 1]!r}"

    named = ", ".join(f"{k!r} (documented {where(k)})" for k in moved[:_NAMED])
    more = f" and {len(moved) - _NAMED} more" if len(moved) > _NAMED else ""
    head = "key" if len(moved) == 1 else "keys"
    return (f"{head} {named}{more} out of the documented order; documented order is "
            f"{', '.join(expected)}")
