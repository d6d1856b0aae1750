"""The metric keys the report charts when a run logs them: the cookbook's usual families, found
by their real names (``optim/kl_sample_train_v1``, ``kl_sample_train_v1``, ``teacher_kl`` ...).

Families, in chart order: reward (``.../reward/total``), done fraction, KL estimators, entropy,
learning rate, GRPO group shares (``by_group/frac_*``), tokens, cost, time, async staleness.
An evaluator's copy of a key (``<name>/env/...``) and per-tag environment keys (``env/<tag>/``
other than ``env/all/``) are not usual; evaluator rewards are charted on their own.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection, Iterable
from typing import Final

#: At most this many usual keys are charted, and at most ``PER_FAMILY`` of one family.
MAX_USUAL_CHARTS: Final = 24
PER_FAMILY: Final = 4
_KL = re.compile(r"(^|_)kl(_|$)|^kl")
_TOKENS = frozenset({"ac_tokens_per_turn", "ob_tokens_per_turn", "total_ac_tokens",
                     "total_ob_tokens"})

#: (family, test of (key, last path segment)), in chart order.
FAMILIES: Final[tuple[tuple[str, Callable[[str, str], bool]], ...]] = (
    ("reward", lambda k, last: k.endswith("reward/total")),
    ("progress", lambda k, last: k == "progress/done_frac"),
    ("KL", lambda k, last: bool(_KL.search(last))),
    ("entropy", lambda k, last: last.startswith("entropy")),
    ("learning rate", lambda k, last: last in ("lr", "learning_rate")),
    ("GRPO groups", lambda k, last: "by_group/frac_" in k),
    ("tokens", lambda k, last: k.startswith("tokens/") or last in _TOKENS),
    ("cost", lambda k, last: k.startswith("cost/")),
    ("time", lambda k, last: k.startswith("time/") and ":" not in k),
    ("staleness", lambda k, last: k.startswith("async/staleness")),
)


def usual_rank(key: str) -> int | None:
    """The chart order of ``key``'s family, or None when it is not a usual key."""
    if "/env/" in key or (key.startswith("env/") and not key.startswith("env/all/")):
        return None
    last = key.rsplit("/", 1)[-1]
    for rank, (_, test) in enumerate(FAMILIES):
        if test(key, last):
            return rank
    return None


def usual_keys(keys: Iterable[str]) -> list[str]:
    """The usual keys among ``keys`` (in first-seen order), in chart order, capped."""
    ranked: dict[int, list[str]] = {}
    for k in keys:
        rank = usual_rank(k)
        if rank is not None and len(ranked.setdefault(rank, [])) < PER_FAMILY:
            ranked[rank].append(k)
    return [k for r in sorted(ranked) for k in ranked[r]][:MAX_USUAL_CHARTS]


def closest_keys(key: str, keys: Collection[str], n: int = 5) -> tuple[str, ...]:
    """The keys spelled most like ``key`` (difflib), best first; also keys that end with it."""
    close = difflib.get_close_matches(key, list(keys), n=n, cutoff=0.5)
    tail = [k for k in keys if k.endswith("/" + key) and k not in close]
    return tuple([*tail, *close][:n])
