"""Where bytes go: one interface (``base``), a backend per kind of location.

Backends: ``local`` (plain ``os`` calls), ``memory`` (fsspec's memory filesystem) and ``gcs/``
(the JSON API over a gcsfs session). ``opener.open_storage`` picks one; fsspec and gcsfs are
imported only there, and only when a URI needs them. ``tail`` moves a torn last line aside.
"""

from rlio.storage.base import (
    HIDDEN_PREFIXES,
    TEMP_INFIX,
    Appender,
    Entry,
    EntryKind,
    Storage,
    is_log,
)
from rlio.storage.local import LocalStorage
from rlio.storage.memory import MemoryStorage
from rlio.storage.opener import open_storage

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
