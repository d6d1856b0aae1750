"""Realistic runs for the page tests, and what their records say, computed here from the files.

The runs are written through ``RunWriter`` by ``rlio.demo_envs`` (what ``rlio demo --env NAME``
writes): math with step rewards (``final_reward`` 0.0), twenty-questions style multi-turn, tool
calls with penalties, pairwise preference (centred group rewards), eval-only evaluators and async
off-policy sampling. The expectations below read the rollout summaries and logtree JSON as plain
JSON and apply docs/format.md §7 directly (no rlio code), so a page that shows anything else
disagrees with the records.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlio.demo_envs import ENVS, write_env_run

__all__ = ["ENVS", "Expected", "expected", "realistic_run", "split_of"]

_FILE = re.compile(r"^(train|eval_(.+))_iteration_(\d{6})_rollout_summaries\.jsonl$")


def realistic_run(root: Path, env: str, *, seed: int = 0, iterations: int = 4) -> Path:
    """A small run of ``env`` at ``root / env`` (3 groups of 4, 2 logged)."""
    out = root / f"{env}-{seed}"
    write_env_run(str(out), env, iterations=iterations, groups=3, group_size=4,
                  logged_groups=2, seed=seed)
    return out


def split_of(name: str) -> str:
    """``train`` or ``eval/<label>`` from a rollout summaries file name."""
    m = _FILE.match(name)
    assert m is not None, name
    return "train" if m.group(1) == "train" else f"eval/{m.group(2)}"


def _total(rec: dict[str, Any]) -> float | None:
    v = rec["total_reward"]
    return float(v) if isinstance(v, (int, float)) else None


def _failing(rec: dict[str, Any]) -> bool:
    total = _total(rec)
    steps = rec["steps"]
    done = bool(steps) and steps[-1]["episode_done"] is True
    return total is None or math.isnan(total) or total <= 0 or not done


@dataclass
class Expected:
    """Per (split, iteration): the records, failing count, finite totals and advantages."""

    records: dict[tuple[str, int], list[dict[str, Any]]]

    def failing(self, split: str, it: int) -> int:
        return sum(map(_failing, self.records[(split, it)]))

    def totals(self, split: str, it: int) -> list[float]:
        return sorted(t for r in self.records[(split, it)]
                      if (t := _total(r)) is not None and math.isfinite(t))

    def all_totals(self) -> list[float]:
        return sorted(t for key in self.records for t in self.totals(*key))

    def advantages(self, split: str, it: int) -> dict[tuple[int, int], float | None]:
        groups: dict[int, list[float]] = {}
        for r in self.records[(split, it)]:
            t = _total(r)
            if t is not None and math.isfinite(t):
                groups.setdefault(r["group_idx"], []).append(t)
        out: dict[tuple[int, int], float | None] = {}
        for r in self.records[(split, it)]:
            t, g = _total(r), groups.get(r["group_idx"])
            ok = t is not None and math.isfinite(t) and g
            out[(r["group_idx"], r["traj_idx"])] = t - sum(g) / len(g) if ok else None  # type: ignore[operator, arg-type]
        return out

    def equal_share(self, split: str, it: int) -> float:
        groups: dict[int, list[float | None]] = {}
        for r in self.records[(split, it)]:
            groups.setdefault(r["group_idx"], []).append(_total(r))
        equal = sum(all(t is not None and math.isfinite(t) for t in g) and len(set(g)) == 1
                    for g in groups.values())
        return equal / len(groups)

    def total_of(self, split: str, it: int, group: int, traj: int) -> float | None:
        return next(_total(r) for r in self.records[(split, it)]
                    if (r["group_idx"], r["traj_idx"]) == (group, traj))


def expected(run: Path) -> Expected:
    """What the run's rollout summaries say."""
    recs = {}
    for f in sorted(run.glob("*_rollout_summaries.jsonl")):
        lines = f.read_text().splitlines()
        recs[(split_of(f.name), int(_FILE.match(f.name).group(3)))] = [  # type: ignore[union-attr]
            json.loads(line) for line in lines if line.strip()]
    return Expected(recs)
