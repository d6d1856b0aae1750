"""What the report reads per iteration: rollout summaries, the logtree document, who wrote the page.

Everything goes through ``rlio.storage`` and is tolerant: a torn, blank or unparseable summary
line is skipped (as the metrics reader does), an unreadable or too deep logtree reads as None.
"""

from __future__ import annotations

from typing import Any

import orjson

from rlio.logtree.iteration_page import Trajectory, trajectory
from rlio.report.columns import FileStats
from rlio.report.reading import _iter_jsonl
from rlio.storage.base import Storage

#: A logtree document larger than this is not re-rendered (its producer's page is linked).
MAX_LOGTREE_BYTES = 64 * 1024 * 1024
_GENERATOR = b'<meta name="generator" content="rlio'


def read_trajectories(storage: Storage, rel: str | None, split: str,
                      iteration: int) -> list[Trajectory] | None:
    """The rows of one rollout summaries file in file order; None when there is no such file."""
    if rel is None:
        return None
    stats = FileStats()
    rows = [trajectory(rec, split, iteration) for rec in _iter_jsonl(storage, rel, stats)]
    return rows if stats.error is None else None


def read_logtree(storage: Storage, rel: str | None) -> dict[str, Any] | None:
    """The logtree JSON document, or None when absent, too large, unreadable or not an object."""
    if rel is None:
        return None
    entry = storage.stat(rel)
    if entry is None or entry.kind != "file" or entry.size > MAX_LOGTREE_BYTES:
        return None
    try:
        doc = orjson.loads(storage.read_range(rel, 0, entry.size))
    except (orjson.JSONDecodeError, OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def written_by_rlio(storage: Storage, rel: str | None) -> bool:
    """Whether the HTML page at ``rel`` is rlio's own (its head names rlio as the generator)."""
    if rel is None:
        return False
    try:
        head = storage.read_range(rel, 0, 2048)
    except OSError:
        return False
    return _GENERATOR in head
