"""``open_storage``: the backend for a local path or URI; fsspec, gcsfs imported here only.

Local runs need neither: the base install leaves them out, and a URI scheme whose library is
absent raises ``MissingExtraError`` naming the install line (gs://: ``pip install 'rlio[gcs]'``).
"""

from __future__ import annotations

import errno
import importlib
import os
from types import ModuleType

from rlio.errors import MissingExtraError, RunNotFoundError, UnsafeStorageError
from rlio.storage.base import Storage
from rlio.storage.local import LocalStorage


def _import_extra(module: str, location: str, install: str) -> ModuleType:
    """Import ``module`` for ``location``, or raise MissingExtraError naming ``install``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{location.partition('://')[0]}:// run directories need "
            f"{module.partition('.')[0]}, which cannot be imported ({exc}); install it with: "
            f"{install}") from exc


def _open_gcs(location: str) -> Storage:
    """A ``gs://bucket/prefix`` run over gcsfs's core filesystem (imported here, not before).

    With ``STORAGE_EMULATOR_HOST`` set, rlio authenticates anonymously and defaults gcsfs's
    experimental zonal/HNS probing off (a gRPC call an emulator never answers: a minute per
    bucket). Listing caches are off: another process's writes must be seen at once.
    """
    bucket, _, prefix = location.split("://", 1)[1].partition("/")
    if not bucket:
        raise ValueError(f"a gs:// URI needs a bucket, got {location!r} (expected gs://BUCKET/RUN)")
    emulator = bool(os.environ.get("STORAGE_EMULATOR_HOST"))
    if emulator:
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    gcsfs_core = _import_extra("gcsfs.core", location, "pip install 'rlio[gcs]'")

    from rlio.storage.gcs.storage import GcsStorage

    fs = gcsfs_core.GCSFileSystem(token="anon" if emulator else None, use_listings_cache=False)
    return GcsStorage(fs, bucket, prefix.strip("/"))


def open_storage(location: str | os.PathLike[str], *, create: bool = False) -> Storage:
    """The backend for a local path or URI (``file://``, ``memory://``, ``gs://``).

    ``create`` (writers) makes the run when it is absent and, on an object store, sweeps the batch
    parts a crashed writer left; without it a missing run raises ``RunNotFoundError``. A scheme
    whose library is missing raises ``MissingExtraError``; any other scheme
    ``UnsafeStorageError`` (rlio cannot write it safely).
    """
    loc = os.fspath(location)
    head, sep, rest = loc.partition("://")
    scheme = head.lower() if sep and head.isidentifier() else None
    storage: Storage
    if scheme in (None, "file"):
        storage = LocalStorage((rest if scheme else loc).rstrip("/") or "/")
    elif scheme == "memory":
        fsspec = _import_extra("fsspec", loc, "pip install fsspec")
        from rlio.storage.memory import MemoryStorage

        storage = MemoryStorage(loc, fsspec.filesystem("memory"))
    elif scheme in ("gs", "gcs"):
        storage = _open_gcs(loc)
    else:
        raise UnsafeStorageError(
            errno.EPROTONOSUPPORT,
            f"{loc}: {scheme}:// run directories are not supported; use a local path, "
            "file://, memory:// or gs://")
    if create:
        storage.create()
        if not storage.is_local:
            storage.sweep_orphans()  # a writer (re)opens the run: clean up after a crash
    elif not storage.exists():
        raise RunNotFoundError(errno.ENOENT, "run directory not found", loc)
    return storage
