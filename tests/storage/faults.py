"""The fault-injecting, counting layer every emulator proxy of the storage tests shares (gs://:
``gcs_emulator``, s3://: ``s3_emulator``, az://: ``azurite``).

A test sets rules (``set_faults``): each names an ``op`` (the proxy's name for a request kind),
a ``name`` regex matched against the object's name or path, a ``mode`` the proxy knows how to
inject (``503``, a dropped connection, an answer lost after the commit, ...), and optionally
``skip`` (matching requests to let through first) and ``times`` (how many to fault, 1 by
default). The layer also counts requests, bytes received and body bytes answered per op.
"""

from __future__ import annotations

import re
import threading
from typing import Any


class Faults:
    """Fault rules and request counters, safe to share between the proxy's threads."""

    def __init__(self) -> None:
        self.rules: list[dict[str, Any]] = []
        self.injected = 0
        self.stats: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        """Replace the rules (and zero the count of injected faults)."""
        with self._lock:
            self.rules = [dict(r) for r in rules]
            self.injected = 0

    def take_stats(self, *, reset: bool = False) -> dict[str, dict[str, int]]:
        """Requests, bytes received and body bytes answered, per op (then zeroed with reset)."""
        with self._lock:
            out = {k: dict(v) for k, v in self.stats.items()}
            if reset:
                self.stats = {}
        return out

    def count(self, op: str, received: int, answered: int = 0) -> None:
        """Count one request of ``op``: ``received`` bytes in, ``answered`` body bytes out."""
        with self._lock:
            s = self.stats.setdefault(op, {"requests": 0, "bytes": 0, "bytes_out": 0})
            s["requests"] += 1
            s["bytes"] += received
            s["bytes_out"] += answered

    def count_out(self, op: str, answered: int) -> None:
        """Add ``answered`` body bytes to the last request of ``op``."""
        with self._lock:
            self.stats.setdefault(op, {"requests": 0, "bytes": 0, "bytes_out": 0})
            self.stats[op]["bytes_out"] += answered

    def fault_for(self, op: str, name: str) -> dict[str, Any] | None:
        """The rule to apply to this request (None: serve it); every matching rule counts it."""
        with self._lock:
            for rule in self.rules:
                if rule.get("op") != op or not re.search(rule.get("name", ""), name):
                    continue
                if rule.get("skip", 0) > 0:
                    rule["skip"] -= 1
                elif rule.get("times", 1) > 0:
                    rule["times"] = rule.get("times", 1) - 1
                    self.injected += 1
                    return rule
        return None
