"""The Azure Blob requests rlio makes, on one container, and what their failures mean.

Errors are mapped once, here, to what the rest of rlio catches: a missing blob or container is
``FileNotFoundError``; a condition that did not hold (412, or 409 for a blob that already
exists) is ``FileExistsError``; a lease held by someone else is ``LeaseTakenError``; no
network, an unreachable endpoint, refused credentials and 5xx/429 answers that outlived the
SDK's retries are ``StorageUnavailableError``. The
SDK's own retry policy (``client_options``: a few quick retries) runs first.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple, TypeVar

from rlio.layout import TEXT_TYPE
from rlio.storage import remote

#: Where staged copies wait (run-relative, hidden from ``walk``).
PARTS_DIR = ".rlio-parts"
#: Metadata on a log: how many times rlio rewrote it (``move_tail``), and the random id of the
#: last rewrite (so that a rewrite whose answer was lost can recognise itself). Azure metadata
#: names are C# identifiers, hence the underscores.
META_REWRITES = "rlio_rewrites"
META_REWRITE_ID = "rlio_rewrite_id"
#: Metadata on a log: the epoch of the newest lease holder that fenced it
#: (``rlio.storage.fencing``).
META_EPOCH = "rlio_epoch"
#: Bytes per AppendBlock request: lines are grouped into blocks of at most this much (a longer
#: line goes alone, up to the service's limit of 100 MiB per block).
BLOCK_BYTES = 4 << 20

T = TypeVar("T")


def blocks(data: bytes, limit: int = BLOCK_BYTES) -> list[bytes]:
    """``data`` (complete lines) cut at line ends into pieces of at most ``limit`` bytes, a
    longer line alone."""
    out: list[bytes] = []
    start = 0
    while start < len(data):
        end = start + limit
        if end >= len(data):
            out.append(data[start:])
            break
        cut = data.rfind(b"\n", start, end)
        if cut < 0:  # one line longer than the limit: it goes alone
            cut = data.find(b"\n", end - 1)
            cut = len(data) - 1 if cut < 0 else cut
        out.append(data[start:cut + 1])
        start = cut + 1
    return out


class LeaseTakenError(Exception):
    """A blob lease is held by another lease id (acquire), or ours is gone (renew/release)."""


class Props(NamedTuple):
    """What rlio reads of a blob: size, ETag, metadata, whether it is an append blob."""

    size: int
    etag: str
    metadata: dict[str, str]
    append_blob: bool


def client_options() -> dict[str, Any]:
    """Keyword arguments of every client rlio makes: a few quick retries and short connect
    timeouts, so an unreachable store fails within seconds (appends retry on their own)."""
    from azure.storage.blob import LinearRetry

    return {"retry_policy": LinearRetry(backoff=1, random_jitter_range=1, retry_total=3),
            "connection_timeout": 3, "read_timeout": 60}


def _translate(exc: Exception, where: str) -> Exception:
    """The rlio-side exception of an SDK error (see the module docstring)."""
    from azure.core import exceptions as ae

    code = str(getattr(exc, "error_code", "") or "")
    if isinstance(exc, ae.ResourceNotFoundError):
        return FileNotFoundError(errno.ENOENT, f"not found ({code or 'no such blob'})", where)
    if "lease" in code.lower() and isinstance(exc, ae.HttpResponseError) and exc.status_code in (
            409, 412):  # the code is a string or a StorageErrorCode (LEASE_ID_MISSING)
        return LeaseTakenError(code)
    if isinstance(exc, (ae.ResourceExistsError, ae.ResourceModifiedError)) or (
            isinstance(exc, ae.HttpResponseError) and exc.status_code == 412):
        return FileExistsError(errno.EEXIST, f"condition not met ({code})", where)
    if isinstance(exc, ae.ClientAuthenticationError):
        return remote.refused(
            where, f"the store refused the credentials ({code or exc.__class__.__name__})",
            "set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT_NAME and "
            "AZURE_STORAGE_ACCOUNT_KEY")
    status = getattr(exc, "status_code", None)
    if isinstance(exc, ae.HttpResponseError) and status is not None and (
            status >= 500 or status == 429):  # still failing after the SDK's retries
        return remote.answered(where, status, code)
    if isinstance(exc, (ae.ServiceRequestError, ae.ServiceResponseError)):
        return remote.unreachable(where, exc)
    return exc


class AzureApi:
    """The few Blob calls rlio needs, on one container client (``azure.storage.blob``)."""

    def __init__(self, container: Any, where: str) -> None:
        self.container = container
        self.where = where  # az://container, for messages

    def call(self, fn: Callable[[], T], key: str = "") -> T:
        """Run one SDK request, its failure translated (module docstring)."""
        try:
            return fn()
        except Exception as exc:
            new = _translate(exc, f"{self.where}/{key}" if key else self.where)
            if new is exc:
                raise
            raise new from None

    def blob(self, key: str) -> Any:
        return self.container.get_blob_client(key)

    def props(self, key: str) -> Props | None:
        """The blob's size, ETag and metadata, or None when absent."""
        try:
            p = self.call(lambda: self.blob(key).get_blob_properties(), key)
        except FileNotFoundError:
            return None
        return Props(int(p.size), str(p.etag), dict(p.metadata or {}),
                     str(p.blob_type).lower().endswith("appendblob"))

    def list(self, prefix: str, *, max_results: int | None = None) -> Iterator[tuple[str, int]]:
        """(name, size) of every blob whose name starts with ``prefix``, in name order."""
        pages = self.call(lambda: self.container.list_blobs(
            name_starts_with=prefix, results_per_page=max_results).by_page())
        it = iter(pages)
        while True:
            page = self.call(lambda: next(it, None))
            if page is None:
                return
            for b in self.call(lambda p=page: list(p)):  # type: ignore[misc]
                yield str(b.name), int(b.size or 0)
            if max_results is not None:
                return

    def read_ranged(self, key: str, start: int, end: int | None = None, *,
                    etag: str | None = None) -> tuple[bytes, int, str]:
        """One GET of bytes ``[start, end)`` (to the end when ``end`` is None); with ``etag``,
        only from that version (``FileExistsError`` once the blob changed).

        Returns the bytes, the blob's total size and its ETag.
        """
        from azure.core import MatchConditions

        length = None if end is None else end - start
        if length is not None and length <= 0:
            p = self.props(key)
            if p is None:
                raise FileNotFoundError(errno.ENOENT, "no such blob", f"{self.where}/{key}")
            return b"", p.size, p.etag
        cond: dict[str, Any] = ({"etag": etag, "match_condition": MatchConditions.IfNotModified}
                                if etag else {})

        def get() -> tuple[bytes, int, str]:
            from azure.core.exceptions import HttpResponseError

            try:
                d = self.blob(key).download_blob(offset=start, length=length, **cond)
            except HttpResponseError as exc:
                if exc.status_code != 416:  # start at or past the end
                    raise
                p = self.props(key)
                return b"", (p.size if p else 0), (p.etag if p else "")
            total = int(d.properties.size)
            crange = str(d.properties.content_range or "")
            if crange.rpartition("/")[2].isdigit():
                total = int(crange.rpartition("/")[2])
            return d.readall(), total, str(d.properties.etag)

        return self.call(get, key)

    def upload(self, key: str, data: bytes, *, ctype: str = TEXT_TYPE,
               if_none_match: bool = False, if_match: str | None = None,
               lease: str | None = None, metadata: Mapping[str, str] | None = None) -> str:
        """Write ``key`` whole as a block blob (Put Blob, or blocks then one commit); the ETag."""
        from azure.core import MatchConditions
        from azure.storage.blob import ContentSettings

        cond: dict[str, Any] = {}
        if if_none_match:
            cond = {"match_condition": MatchConditions.IfMissing}
        elif if_match is not None:
            cond = {"etag": if_match, "match_condition": MatchConditions.IfNotModified}
        out = self.call(lambda: self.blob(key).upload_blob(
            data, overwrite=True, content_settings=ContentSettings(content_type=ctype),
            lease=lease, metadata=dict(metadata) if metadata else None, **cond), key)
        return str(out["etag"])

    def create_append(self, key: str, *, ctype: str, metadata: Mapping[str, str],
                      if_match: str | None = None) -> str:
        """Create an empty append blob: only where none exists (``if_match`` None), else over
        the version ``if_match`` names. Its ETag."""
        from azure.core import MatchConditions
        from azure.storage.blob import ContentSettings

        cond = ({"match_condition": MatchConditions.IfMissing} if if_match is None
                else {"etag": if_match, "match_condition": MatchConditions.IfNotModified})
        out = self.call(lambda: self.blob(key).create_append_blob(
            content_settings=ContentSettings(content_type=ctype), metadata=dict(metadata),
            **cond), key)
        return str(out["etag"])

    def append_block(self, key: str, data: bytes, *, at: int,
                     if_match: str | None = None) -> tuple[int, str, int]:
        """AppendBlock ``data`` only if the blob is ``at`` bytes long (and, with ``if_match``,
        still that version); (new size, ETag, the blob's committed block count)."""
        from azure.core import MatchConditions

        cond: dict[str, Any] = ({"etag": if_match, "match_condition": MatchConditions.IfNotModified}
                                if if_match else {})
        out = self.call(lambda: self.blob(key).append_block(data, appendpos_condition=at, **cond),
                        key)
        return (int(out["blob_append_offset"]) + len(data), str(out["etag"]),
                int(out.get("blob_committed_block_count") or 0))

    def set_metadata(self, key: str, metadata: Mapping[str, str], *, if_match: str) -> str:
        """Replace the metadata of ``key`` only while it is version ``if_match``; its new ETag."""
        from azure.core import MatchConditions

        out = self.call(lambda: self.blob(key).set_blob_metadata(
            dict(metadata), etag=if_match, match_condition=MatchConditions.IfNotModified), key)
        return str(out["etag"])

    def copy(self, key: str, source: str, *, if_match: str | None = None,
             if_none_match: bool = False) -> None:
        """Replace ``key`` with a server-side copy of blob ``source`` (same container), on the
        condition given; waits for a copy the service did not finish at once."""
        import time

        from azure.core import MatchConditions

        cond: dict[str, Any] = {}
        if if_none_match:
            cond = {"match_condition": MatchConditions.IfMissing}
        elif if_match is not None:
            cond = {"etag": if_match, "match_condition": MatchConditions.IfNotModified}
        url = self.blob(source).url
        out = self.call(lambda: self.blob(key).start_copy_from_url(url, **cond), key)
        status = out.get("copy_status")
        while status == "pending":
            time.sleep(0.05)
            p = self.call(lambda: self.blob(key).get_blob_properties(), key)
            status = p.copy.status
        if status not in (None, "success"):
            raise OSError(errno.EIO, f"server-side copy ended {status}", f"{self.where}/{key}")

    def stage_append(self, key: str, staged_prefix: str, data: bytes | Iterable[bytes], *,
                     ctype: str, metadata: Mapping[str, str], if_match: str | None) -> None:
        """Make ``key`` an append blob holding ``data`` (bytes, or chunks of at most
        ``BLOCK_BYTES``), atomically: staged as a new append
        blob ``<staged_prefix>.<random>``, then copied over ``key`` (create-only when
        ``if_match`` is None, else only over that ETag; ``FileExistsError`` when the condition
        fails). The staged blob is deleted after (or swept, after a crash)."""
        import secrets

        staged = f"{staged_prefix}.{secrets.token_hex(8)}"
        try:
            self.create_append(staged, ctype=ctype, metadata=metadata)
            size = 0
            for block in blocks(data) if isinstance(data, bytes) else data:
                size = self.append_block(staged, block, at=size)[0]
            self.copy(key, staged, if_match=if_match, if_none_match=if_match is None)
        finally:
            with contextlib.suppress(Exception):  # an orphan is swept when a writer reopens
                self.delete(staged)

    def delete(self, key: str, *, etag: str | None = None, lease: str | None = None) -> bool:
        """Delete ``key`` (only version ``etag`` if given, under ``lease`` if given); False when
        it was already gone."""
        from azure.core import MatchConditions

        cond: dict[str, Any] = ({"etag": etag, "match_condition": MatchConditions.IfNotModified}
                                if etag else {})
        try:
            self.call(lambda: self.blob(key).delete_blob(lease=lease, **cond), key)
        except FileNotFoundError:
            return False
        return True
