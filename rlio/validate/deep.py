"""Running a check on a document nested deeper than Python's default recursion limit allows."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import Any


def call_deep(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn(*args)`` in a thread with a large stack and recursion limit.

    For validating documents nested deeper than Python's default recursion limit allows (JSON up to
    orjson's 1,024 levels). Re-raises RecursionError if even that is not enough.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    old_limit = sys.getrecursionlimit()
    thread = threading.Thread(target=target, name="rlio-deep-validate", daemon=True)
    old_stack = threading.stack_size()
    sys.setrecursionlimit(max(old_limit, 200_000))
    try:
        # read when the thread starts; a platform refusing a large stack keeps the default
        with contextlib.suppress(ValueError, RuntimeError):
            threading.stack_size(512 << 20)
        try:
            thread.start()
        finally:
            threading.stack_size(old_stack)
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box.get("value")
