"""``open_storage``: the backend for a local path or URI; each scheme's library imported here only.

Local runs need none: the base install leaves them out, and a URI scheme whose library is
absent raises ``MissingExtraError`` naming the install line (gs://: ``pip install 'rlio[gcs]'``,
s3://: ``pip install 'rlio[s3]'``). A remote scheme is one entry of ``_REMOTE``: a function from
the URI to its backend.
"""

from __future__ import annotations

import errno
import importlib
import os
from collections.abc import Callable
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


def bucket_and_prefix(location: str, what: str = "bucket") -> tuple[str, str]:
    """``(bucket, prefix)`` of ``scheme://bucket/prefix``; ValueError without a bucket."""
    scheme, _, rest = location.partition("://")
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ValueError(f"a {scheme}:// URI needs a {what}, got {location!r} "
                         f"(expected {scheme}://{what.upper()}/RUN)")
    return bucket, prefix.strip("/")


def _open_gcs(location: str) -> Storage:
    """A ``gs://bucket/prefix`` run over gcsfs's core filesystem (imported here, not before).

    With ``STORAGE_EMULATOR_HOST`` set, rlio authenticates anonymously and defaults gcsfs's
    experimental zonal/HNS probing off (a gRPC call an emulator never answers: a minute per
    bucket). Listing caches are off: another process's writes must be seen at once.
    """
    bucket, prefix = bucket_and_prefix(location)
    emulator = bool(os.environ.get("STORAGE_EMULATOR_HOST"))
    if emulator:
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    gcsfs_core = _import_extra("gcsfs.core", location, "pip install 'rlio[gcs]'")

    from rlio.storage.gcs.storage import GcsStorage

    fs = gcsfs_core.GCSFileSystem(token="anon" if emulator else None, use_listings_cache=False)
    return GcsStorage(fs, bucket, prefix)


def _open_s3(location: str) -> Storage:
    """An ``s3://bucket/prefix`` run over a boto3 S3 client (imported here, not before),
    configured from the standard AWS environment (``rlio.storage.s3.api.client``)."""
    bucket, prefix = bucket_and_prefix(location)
    _import_extra("boto3", location, "pip install 'rlio[s3]'")

    from rlio.storage.s3.storage import S3Storage

    return S3Storage(bucket, prefix)


#: Remote URI schemes and the function opening each (its library imported only then).
_REMOTE: dict[str, Callable[[str], Storage]] = {
    "gs": _open_gcs,
    "gcs": _open_gcs,
    "s3": _open_s3,
}


def open_storage(location: str | os.PathLike[str], *, create: bool = False) -> Storage:
    """The backend for a local path or URI (``file://``, ``memory://``, ``gs://``, ``s3://``).

    ``create`` (writers) makes the run when it is absent and, on an object store, sweeps the batch
    parts a crashed writer left; without it a missing run raises ``RunNotFoundError``. A scheme
    whose library is missing raises ``MissingExtraError``; a store that cannot be reached or
    refuses the credentials ``StorageUnavailableError``; any other scheme
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
    elif scheme in _REMOTE:
        storage = _REMOTE[scheme](loc)
    else:
        raise UnsafeStorageError(
            errno.EPROTONOSUPPORT,
            f"{loc}: {scheme}:// run directories are not supported; use a local path, "
            f"file://, memory:// or {', '.join(f'{s}://' for s in _REMOTE if s != 'gcs')}")
    if create:
        storage.create()
        if not storage.is_local:
            storage.sweep_orphans()  # a writer (re)opens the run: clean up after a crash
    elif not storage.exists():
        raise RunNotFoundError(errno.ENOENT, "run directory not found", loc)
    return storage
