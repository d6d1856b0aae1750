"""The GCS JSON API requests rlio makes, over a gcsfs session; metadata names."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from rlio.errors import StorageUnavailableError
from rlio.layout import TEXT_TYPE
from rlio.storage import remote

#: Where batch parts wait to be composed (run-relative, hidden from ``walk``).
PARTS_DIR = ".rlio-parts"
#: Custom metadata on a log: how many times rlio rewrote the log (the batches each writer
#: composed are ``rlio.storage.batching.META_APPENDS``).
META_REWRITES = "rlio-rewrites"
#: The epoch of the newest lease holder that wrote or fenced the log (``rlio.storage.lease``): a
#: holder with a smaller epoch has lost the run and refuses to compose into it.
META_EPOCH = "rlio-epoch"
#: A random id of the last rewrite, so that a rewrite whose answer was lost can recognise itself.
META_REWRITE_ID = "rlio-rewrite-id"


def generation(resource: Mapping[str, Any]) -> int:
    """The generation of an object resource (the API sends it as a string)."""
    return int(resource["generation"])


def _unreachable(exc: BaseException) -> bool:
    """True for a failure to reach the store at all (after gcsfs's retries)."""
    import asyncio

    import aiohttp

    return isinstance(exc, (aiohttp.ClientConnectionError, asyncio.TimeoutError,
                            ConnectionError)) and not isinstance(exc, StorageUnavailableError)


class GcsApi:
    """The few JSON API calls rlio needs, on one bucket, through a gcsfs filesystem.

    Errors follow gcsfs: 404 is ``FileNotFoundError``, 412 (a precondition did not hold) is
    ``FileExistsError``; 5xx, 429 and dropped connections are retried by gcsfs before they surface.
    """

    def __init__(self, fs: Any, bucket: str) -> None:
        self.fs = fs
        self.bucket = bucket

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """``fs.call``, with a store that cannot be reached raised as
        ``StorageUnavailableError`` (one line) instead of the HTTP client's error."""
        try:
            return self.fs.call(*args, **kwargs)
        except Exception as exc:
            if not _unreachable(exc):
                raise
            raise remote.unreachable(f"gs://{self.bucket}", exc) from None

    def get(self, key: str) -> dict[str, Any] | None:
        """The object resource of ``key`` (size, generation, metadata), or None when absent."""
        try:
            out: dict[str, Any] = self.call("GET", "b/{}/o/{}", self.bucket, key,
                                               json_out=True)
        except FileNotFoundError:
            return None
        return out

    def list(self, prefix: str, *, max_results: int | None = None) -> Iterator[dict[str, Any]]:
        """Object resources whose names start with ``prefix``, in name order, all pages."""
        token: str | None = None
        while True:
            out = self.call(
                "GET", "b/{}/o", self.bucket, prefix=prefix, pageToken=token,
                maxResults=max_results, json_out=True,
            )
            yield from out.get("items") or []
            token = out.get("nextPageToken")
            if not token or max_results is not None:
                return

    def read(self, key: str, start: int, end: int, *, gen: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of ``key`` (generation ``gen`` if given) in one ranged GET."""
        if end <= start:
            return b""
        return self.read_ranged(key, start, end, gen=gen)[0]

    def read_ranged(self, key: str, start: int, end: int | None = None, *,
                    gen: int | None = None) -> tuple[bytes, int | None, int | None]:
        """One GET of bytes ``[start, end)`` (to the end when ``end`` is None).

        Returns:
            The bytes, the object's total size and its generation, as the answer's headers tell
            them (None when a header is missing).
        """
        headers: dict[str, str] = {}
        if end is not None:
            headers["Range"] = f"bytes={start}-{end - 1}"
        elif start:
            headers["Range"] = f"bytes={start}-"
        try:
            got, data = self.call("GET", "b/{}/o/{}", self.bucket, key, alt="media",
                                     generation=gen, headers=headers)
        except Exception as exc:
            if getattr(exc, "code", None) == 416:  # start is at or past the end of the object
                return b"", None, gen
            raise
        data = bytes(data)
        crange = got.get("Content-Range", "").rpartition("/")[2]
        total: int | None
        if crange:
            total = int(crange) if crange.isascii() and crange.isdigit() else None
        elif "Range" in headers:  # a server that ignored the range sent the whole object
            total, data = len(data), data[start:end]
        else:
            total = len(data)
        g = got.get("x-goog-generation")
        return data, total, int(g) if g and g.isascii() and g.isdigit() else gen

    def upload(self, key: str, data: bytes, *, metadata: Mapping[str, str] | None = None,
               if_generation_match: int | None = None, ctype: str = TEXT_TYPE) -> dict[str, Any]:
        """Write ``key`` whole in one multipart request; ``if_generation_match=0``: create-only."""
        resource: dict[str, Any] = {"name": key, "contentType": ctype}
        if metadata:
            resource["metadata"] = dict(metadata)
        boundary = "rlio-" + secrets.token_hex(16)
        body = b"".join([
            f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(),
            json.dumps(resource).encode(),
            f"\r\n--{boundary}\r\nContent-Type: {ctype}\r\n\r\n".encode(),
            data,
            f"\r\n--{boundary}--".encode(),
        ])
        out: dict[str, Any] = self.call(
            "POST", f"{self.fs._location}/upload/storage/v1/b/{quote(self.bucket, safe='')}/o",
            uploadType="multipart", ifGenerationMatch=if_generation_match,
            headers={"Content-Type": f'multipart/related; boundary="{boundary}"'},
            data=body, json_out=True,
        )
        return out

    def compose(self, key: str, sources: Sequence[tuple[str, int | None]], *,
                metadata: Mapping[str, str], if_generation_match: int,
                if_metageneration_match: int | None = None,
                ctype: str = TEXT_TYPE) -> dict[str, Any]:
        """Concatenate ``sources`` (name, generation or None) into ``key``, conditionally."""
        src = [{"name": n} if g is None else {"name": n, "generation": str(g)} for n, g in sources]
        out: dict[str, Any] = self.call(
            "POST", "b/{}/o/{}/compose", self.bucket, key,
            ifGenerationMatch=if_generation_match,
            ifMetagenerationMatch=if_metageneration_match, json_out=True,
            json={"kind": "storage#composeRequest", "sourceObjects": src,
                  "destination": {"contentType": ctype, "metadata": dict(metadata)}},
        )
        return out

    def patch_metadata(self, key: str, metadata: Mapping[str, str], *, if_generation_match: int,
                       if_metageneration_match: int) -> dict[str, Any]:
        """Replace the custom metadata of ``key`` (bumping its metageneration), conditionally."""
        out: dict[str, Any] = self.call(
            "PATCH", "b/{}/o/{}", self.bucket, key, ifGenerationMatch=if_generation_match,
            ifMetagenerationMatch=if_metageneration_match, json_out=True,
            json={"metadata": dict(metadata)},
        )
        return out

    def delete(self, key: str, *, if_generation_match: int | None = None) -> bool:
        """Delete ``key``; False when it was already gone."""
        try:
            self.call("DELETE", "b/{}/o/{}", self.bucket, key,
                         ifGenerationMatch=if_generation_match)
        except FileNotFoundError:
            return False
        return True
