"""``open_storage``: the backend for a local path or URI; fsspec, gcsfs imported here only.

Local runs need neither: the base install leaves them out, and a URI scheme whose library is
absent raises ``MissingExtraError`` naming the install line (gs://: ``pip install 'rlio[gcs]'``).
"""

from __future__ import annotations

import errno
import os
from types import ModuleType

from rlio.errors import MissingExtraError, RunNotFoundError, UnsafeStorageError
from rlio.storage.base import Storage
from rlio.storage.local import LocalStorage


def _scheme(location: str) -> str | None:
    head, sep, _ = location.partition("://")
    return head.lower() if sep and head.isidentifier() else None


def _import_extra(module: str, location: str, install: str) -> ModuleType:
    """Import ``module`` for ``location``, or raise MissingExtraError naming ``install``."""
    import importlib  # here: only a URI's extra needs it

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        scheme = location.partition("://")[0]
        raise MissingExtraError(
            f"{scheme}:// run directories need {module.partition('.')[0]}, which cannot be "
            f"imported ({exc}); install it with: {install}"
        ) from exc


def _open_gcs(location: str) -> Storage:
    """A ``gs://bucket/prefix`` run over a gcsfs filesystem (gcsfs is imported here, not before).

    ``STORAGE_EMULATOR_HOST`` points gcsfs at an emulator; rlio then authenticates anonymously
    (otherwise gcsfs's default credential chain applies). rlio uses gcsfs's core filesystem class,
    never its experimental zonal/HNS subclass, whose probing is a gRPC call an emulator never
    answers (about a minute per bucket); with an emulator the environment variable that enables
    that subclass is also defaulted to off before gcsfs is imported. Listing caches are off:
    another process's writes must be seen at once.
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


def _open_remote(location: str, scheme: str) -> Storage:
    """The fsspec-backed storage of a URI; fsspec (and gcsfs for gs://) is imported here only."""
    if scheme == "memory":
        fsspec = _import_extra("fsspec", location, "pip install fsspec")
        from rlio.storage.memory import MemoryStorage

        return MemoryStorage(location, fsspec.filesystem("memory"))
    if scheme in ("gs", "gcs"):
        return _open_gcs(location)
    raise UnsafeStorageError(
        errno.EPROTONOSUPPORT,
        f"{location}: {scheme}:// run directories are not supported; use a local path, "
        "file://, memory:// or gs://",
    )


def open_storage(location: str | os.PathLike[str], *, create: bool = False) -> Storage:
    """The backend for a local path or URI (``file://``, ``memory://``, ``gs://``).

    Args:
        location: a local directory or an fsspec URI.
        create: create the run directory when it is absent (writers); readers leave it. On an
            object store this also sweeps batch parts a crashed writer left (``sweep_orphans``).

    Raises:
        RunNotFoundError: ``create`` is false and the run does not exist.
        MissingExtraError: the URI's scheme needs a library that is not installed (gs://:
            ``pip install 'rlio[gcs]'``).
        UnsafeStorageError: a scheme rlio cannot write safely (anything but the above).
    """
    loc = os.fspath(location)
    scheme = _scheme(loc)
    storage: Storage
    if scheme in (None, "file"):
        path = loc[len("file://"):] if scheme == "file" else loc
        storage = LocalStorage(path.rstrip("/") or "/")
        if create:
            storage.create()
    else:
        storage = _open_remote(loc, scheme)
        if create:
            storage.create()
            storage.sweep_orphans()  # a writer (re)opens the run: clean up after a crash
    if not create and not storage.exists():
        raise RunNotFoundError(errno.ENOENT, "run directory not found", loc)
    return storage
