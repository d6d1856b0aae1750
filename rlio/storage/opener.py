"""``open_storage``: the backend for a local path or URI; each scheme's library imported here only.

Local runs need none: the base install leaves them out, and a URI scheme whose library is
absent raises ``MissingExtraError`` naming the install line of its extra (gs://: ``rlio[gcs]``,
s3://: ``rlio[s3]``, az://: ``rlio[azure]``; ``rlio.errors.install_line``). A remote scheme is one
entry of ``_REMOTE``: a function from the URI to its backend. A store that cannot be reached or
has no credentials raises ``StorageUnavailableError`` within seconds.
"""

from __future__ import annotations

import errno
import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

from rlio.errors import (
    MissingExtraError,
    RunNotFoundError,
    StorageUnavailableError,
    UnsafeStorageError,
    install_line,
)
from rlio.storage.base import Storage
from rlio.storage.local import LocalStorage


def _import_extra(module: str, location: str, extra: str) -> ModuleType:
    """Import ``module`` for ``location``, or raise MissingExtraError naming the install line of
    rlio's extra ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(
            f"{location.partition('://')[0]}:// run directories need "
            f"{module.partition('.')[0]}, which cannot be imported ({exc}); install the extra "
            f"rlio[{extra}] with: {install_line(extra)}") from exc


def bucket_and_prefix(location: str, what: str = "bucket") -> tuple[str, str]:
    """``(bucket, prefix)`` of ``scheme://bucket/prefix``; ValueError without a bucket."""
    scheme, _, rest = location.partition("://")
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ValueError(f"a {scheme}:// URI needs a {what}, got {location!r} "
                         f"(expected {scheme}://{what.upper()}/RUN)")
    return bucket, prefix.strip("/")


#: Seconds a cloud endpoint has to accept a TCP connection before it counts as unreachable.
CONNECT_SECONDS = 3.0


def _reachable(location: str, endpoint: str) -> None:
    """Raise ``StorageUnavailableError`` unless ``endpoint`` (a URL or ``host:port``) accepts a
    TCP connection within ``CONNECT_SECONDS``: a store that is not there fails at once, in one
    line (gcsfs would retry an unreachable host for about 30 s, logging tracebacks; the Azure
    SDK for seconds), while requests later in a run keep their clients' retries. Skipped where an
    HTTP(S) proxy is configured for the endpoint's scheme (the client goes through it)."""
    import socket
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    if parts.scheme in urllib.request.getproxies():
        return  # the client connects through a proxy, not to the endpoint itself
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        raise StorageUnavailableError(
            f"{location}: cannot reach {host}:{port} ({reason})") from None


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
    gcsfs_core = _import_extra("gcsfs.core", location, "gcs")
    _reachable(location, os.environ.get("STORAGE_EMULATOR_HOST") or "https://storage.googleapis.com")

    from rlio.storage.gcs.storage import GcsStorage

    fs = gcsfs_core.GCSFileSystem(token="anon" if emulator else None, use_listings_cache=False)
    return GcsStorage(fs, bucket, prefix)


def _open_s3(location: str) -> Storage:
    """An ``s3://bucket/prefix`` run over a boto3 S3 client (imported here, not before),
    configured from the standard AWS environment (``rlio.storage.s3.api.client``)."""
    bucket, prefix = bucket_and_prefix(location)
    _import_extra("boto3", location, "s3")

    from rlio.storage.s3.api import client
    from rlio.storage.s3.storage import S3Storage

    s3 = client(location)
    _reachable(location, str(s3.meta.endpoint_url))
    return S3Storage(bucket, prefix, s3=s3)


def _azure_client(location: str, container: str) -> object:
    """The container client of ``az://CONTAINER/...``, from the standard environment:
    ``AZURE_STORAGE_CONNECTION_STRING``; else an account (``AZURE_STORAGE_ACCOUNT_NAME``, its
    URL from ``AZURE_STORAGE_ACCOUNT_URL`` or the public endpoint) with
    ``AZURE_STORAGE_ACCOUNT_KEY`` or ``AZURE_STORAGE_SAS_TOKEN``, or ``DefaultAzureCredential``
    where azure-identity is installed."""
    blob = _import_extra("azure.storage.blob", location, "azure")
    from rlio.storage.azure.api import client_options

    env = os.environ
    options = client_options()
    conn = env.get("AZURE_STORAGE_CONNECTION_STRING")
    try:
        if conn:
            service = blob.BlobServiceClient.from_connection_string(conn, **options)
            return service.get_container_client(container)
    except ValueError as exc:
        raise StorageUnavailableError(
            f"{location}: AZURE_STORAGE_CONNECTION_STRING is not a valid connection string "
            f"({exc})") from None
    account = env.get("AZURE_STORAGE_ACCOUNT_NAME") or env.get("AZURE_STORAGE_ACCOUNT")
    if not account:
        raise StorageUnavailableError(
            f"{location}: no Azure credentials: set AZURE_STORAGE_CONNECTION_STRING, or "
            "AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY")
    url = env.get("AZURE_STORAGE_ACCOUNT_URL") or f"https://{account}.blob.core.windows.net"
    credential: object = env.get("AZURE_STORAGE_ACCOUNT_KEY") or env.get("AZURE_STORAGE_SAS_TOKEN")
    if credential and env.get("AZURE_STORAGE_ACCOUNT_KEY"):
        credential = {"account_name": account, "account_key": credential}
    if not credential:
        try:
            identity = importlib.import_module("azure.identity")
        except ImportError:
            raise StorageUnavailableError(
                f"{location}: no Azure credentials for account {account!r}: set "
                "AZURE_STORAGE_ACCOUNT_KEY (or AZURE_STORAGE_SAS_TOKEN), or install "
                "azure-identity for DefaultAzureCredential") from None
        credential = identity.DefaultAzureCredential()
    return blob.ContainerClient(url, container, credential=credential, **options)


def _open_azure(location: str) -> Storage:
    """An ``az://container/prefix`` run over azure-storage-blob (imported here, not before)."""
    container, prefix = bucket_and_prefix(location, "container")
    client: Any = _azure_client(location, container)
    _reachable(location, str(client.url))

    from rlio.storage.azure.storage import AzureStorage

    return AzureStorage(client, container, prefix)


#: Remote URI schemes and the function opening each (its library imported only then).
_REMOTE: dict[str, Callable[[str], Storage]] = {
    "gs": _open_gcs,
    "gcs": _open_gcs,
    "s3": _open_s3,
    "az": _open_azure,
}


def open_storage(location: str | os.PathLike[str], *, create: bool = False,
                 listed: bool = False) -> Storage:
    """The backend for a local path or URI (``file://``, ``memory://``, ``gs://``, ``s3://``,
    ``az://``).

    ``create`` (writers) makes the run when it is absent and, on an object store, sweeps the batch
    parts a crashed writer left; without it a missing run raises ``RunNotFoundError``. A scheme
    whose library is missing raises ``MissingExtraError``; a store that cannot be reached or
    refuses the credentials ``StorageUnavailableError``; any other scheme
    ``UnsafeStorageError`` (rlio cannot write it safely). ``listed``: the caller has just
    listed the run (a fleet's one listing of its prefix), so its existence is not asked again.
    """
    loc = os.fspath(location)
    head, sep, rest = loc.partition("://")
    scheme = head.lower() if sep and head.isidentifier() else None
    storage: Storage
    if scheme in (None, "file"):
        storage = LocalStorage((rest if scheme else loc).rstrip("/") or "/")
    elif scheme == "memory":
        fsspec = _import_extra("fsspec", loc, "gcs")  # fsspec comes with rlio[gcs]
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
    elif not listed and not storage.exists():
        raise RunNotFoundError(errno.ENOENT, "run directory not found", loc)
    return storage
