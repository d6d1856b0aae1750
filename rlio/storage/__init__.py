"""Where bytes go: one interface (``base``), a backend per kind of location.

rlio owns its write semantics per backend (DESIGN principle 5): atomic whole-file replace,
appends handed to the OS (or batched and composed on object stores), durable appends under an
inter-process lock, tail reads, and moving a file's tail aside into a sidecar (``tail``).
Backends: ``local`` (plain ``os`` calls), ``memory`` (fsspec's memory filesystem) and ``gcs/``
(the JSON API over a gcsfs session). ``opener.open_storage`` picks one; fsspec and gcsfs are
imported only there, and only when a URI needs them.

The backends are loaded on first use of their names: a reader of a local run (``rlio resume``,
one short process) imports neither the memory backend nor ``threading``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlio._lazy import lazy_attributes
from rlio.storage.base import (
    HIDDEN_PREFIXES,
    TEMP_INFIX,
    Appender,
    Entry,
    EntryKind,
    Storage,
    is_log,
)

if TYPE_CHECKING:
    from rlio.storage.local import LocalStorage
    from rlio.storage.memory import MemoryStorage
    from rlio.storage.opener import open_storage

_LAZY = {
    "LocalStorage": "rlio.storage.local",
    "MemoryStorage": "rlio.storage.memory",
    "open_storage": "rlio.storage.opener",
}

__all__ = [
    "HIDDEN_PREFIXES",
    "TEMP_INFIX",
    "Appender",
    "Entry",
    "EntryKind",
    "LocalStorage",
    "MemoryStorage",
    "Storage",
    "is_log",
    "open_storage",
]


__getattr__, __dir__ = lazy_attributes("rlio.storage", _LAZY, globals(), __all__)
