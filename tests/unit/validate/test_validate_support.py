"""Former home of the validator tests' run builders, now in ``tests/factories.py``.

Kept as a re-export so test files not yet moved over to ``factories`` keep importing; new tests
import ``factories`` directly. Delete once nothing imports it.
"""

from __future__ import annotations

from factories import (
    HTML,
    NAN,
    codes,
    cookbook_run,
    dumps,
    errors,
    findings,
    jsonl,
    logtree_doc,
    trajectory,
    write,
)

__all__ = ["HTML", "NAN", "codes", "cookbook_run", "dumps", "errors", "findings", "jsonl",
           "logtree_doc", "trajectory", "write"]
