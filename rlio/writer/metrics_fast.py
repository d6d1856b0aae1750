"""``log_metrics`` in C where the optional ``rlio._accel`` extension is built (``rlio/_accel.c``).

The Python method stays the reference: the C object does the same work for the calls the Python
hot path takes (a plain dict, an int step, a key layout already compiled, a healthy local file)
and hands every other call to it. What the C side may accept is taught here, from the layout's
compiled plan (``rlio._schema.metrics_check.LayoutPlan``) and the types of a call the Python
check accepted, so the verdicts are the schema compiler's, never restated in C.

``RLIO_PURE_PYTHON=1`` in the environment keeps a writer created afterwards on the Python path
(``rlio._native``; the tests compare the two).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from rlio._codec.jsonl import _LINE_OPTS, normalize_value
from rlio._native import native
from rlio._schema.metrics_check import item_type

if TYPE_CHECKING:
    from rlio._schema.metrics_check import LayoutPlan, MetricsCheck
    from rlio.storage.base import Appender

__all__ = ["arm", "learn", "metrics_lock"]


def metrics_lock() -> Any:
    """The writer's metrics lock: the extension's own (which its hot path takes without a
    Python call) when it is used, else a ``threading.Lock``."""
    accel = native()
    return accel.Lock() if accel is not None else threading.Lock()


def arm(appender: Appender, lock: Any, *, layouts: MetricsCheck | None, spans: list[Any],
        fallback: Callable[..., None]) -> Any:
    """The C ``log_metrics`` over ``appender``'s descriptor (checking by ``layouts``, else
    unchecked), or None: no extension, a backend without a plain descriptor, or a lock not the
    extension's."""
    fd, accel = appender.hot_descriptor(), native()
    if accel is None or fd is None or not isinstance(lock, accel.Lock):
        return None
    checked = layouts is not None
    return accel.MetricsLine(
        fd=fd, lock=lock, dumps=orjson.dumps, default=None if checked else normalize_value,
        option=_LINE_OPTS, checked=checked, spans=spans, fallback=fallback,
        finish=appender.finish_line,
        step_bounds=layouts.step_bounds if layouts is not None else None,
    )


def learn(hot: Any, keys: list[Any], metrics: dict[str, Any], plan: LayoutPlan | None) -> None:
    """Teach ``hot`` the layout of a call the Python check accepted, with its values' types:
    where the layout judges a key by type alone (when the type is one the key accepts), where
    it judges an int by bounds (an int, or a numpy integer judged as its ``.item()``), and
    ``rest`` for the other keys on every call."""
    if plan is None or len(metrics) != len(plan.keys):
        return
    types: list[type | None] = []
    bounded: list[tuple[int, int | None, int | None]] = []
    positions: list[int] = []
    for i, (value, accepts, bounds) in enumerate(
            zip(metrics.values(), plan.members, plan.bounds, strict=True)):
        t = type(value)
        if accepts is not None:
            if t not in accepts:  # a type learned since: the next call teaches it
                return
            types.append(t)
        elif bounds is not None and (t is int or item_type(t) is int):
            types.append(t)
            bounded.append((i, *bounds))
        else:
            types.append(None)
            positions.append(i)
    if all(type(k) is str for k in keys):
        hot.learn(tuple(keys), tuple(types), plan.rest(tuple(positions)), tuple(positions),
                  tuple(bounded))
