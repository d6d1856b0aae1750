"""The S3 requests rlio makes, over one boto3 client; errors as the rest of rlio knows them.

The client comes from the standard AWS environment (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, ``AWS_DEFAULT_REGION``, ``AWS_PROFILE`` and the
config files boto3 reads), with short connect timeouts and few retries so that a store that
cannot be reached fails in seconds: rlio's appenders retry transient failures themselves.

Errors: 404 is ``FileNotFoundError`` (``RunNotFoundError`` for a missing bucket); 412 (a
precondition did not hold) and 409 (a conflicting conditional write in flight) are
``FileExistsError``; no network, timeouts and 5xx/throttling that outlived the client's retries
are ``StoreUnreachable``; missing or refused credentials ``StorageUnavailableError`` (worded
by ``rlio.storage.remote``, as for every cloud).
"""

from __future__ import annotations

import contextlib
import errno
import math
import threading
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from rlio.errors import RunNotFoundError, StorageUnavailableError
from rlio.layout import TEXT_TYPE
from rlio.storage import remote

#: User metadata on a log: how many times rlio rewrote the log and the id of the last rewrite
#: (the batches each writer landed are ``rlio.storage.batching.META_APPENDS``).
META_REWRITES = "rlio-rewrites"
META_REWRITE_ID = "rlio-rewrite-id"
#: User metadata on a log: the epoch of the newest lease holder that wrote it
#: (``rlio.storage.fencing``).
META_EPOCH = "rlio-epoch"
#: S3's smallest part but the last (so the smallest object a multipart append can copy), and the
#: largest part an UploadPartCopy may copy.
MIN_PART = 5 << 20
MAX_COPY_PART = 5 << 30

_AWS_HINT = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
_CREDENTIALS = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                "InvalidToken", "TokenRefreshRequired", "AllAccessDisabled"}


class ObjectInfo(NamedTuple):
    """What a HEAD (or a GET) tells of an object: size, ETag (quoted) and user metadata."""

    size: int
    etag: str
    metadata: dict[str, str]


_CLIENT_LOCK = threading.Lock()  # making boto3 sessions is not safe across threads


def client(where: str = "s3://") -> Any:
    """A boto3 S3 client configured from the standard AWS environment (see module);
    ``StorageUnavailableError`` at once when that environment has no credentials at all."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=1.5, read_timeout=30,
                    retries={"mode": "standard", "total_max_attempts": 3})
    try:
        with _CLIENT_LOCK:
            session = boto3.session.Session()
            credentials = session.get_credentials()
            s3 = session.client("s3", config=config)
    except Exception as exc:  # a missing profile, a malformed config file or endpoint
        raise StorageUnavailableError(f"{where}: cannot configure S3 ({exc})") from None
    if credentials is None:
        raise remote.refused(where, "no AWS credentials", _AWS_HINT)
    return s3


@contextlib.contextmanager
def translated(where: str) -> Iterator[None]:
    """Turn botocore's exceptions into the errors the module docstring names."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    try:
        yield
    except ClientError as exc:
        err = exc.response.get("Error") or {}
        code = str(err.get("Code", ""))
        status = int((exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
        if code == "NoSuchBucket":
            raise RunNotFoundError(errno.ENOENT, "no such bucket", where) from None
        if status == 404 or code in ("NoSuchKey", "NoSuchUpload", "NotFound"):
            raise FileNotFoundError(errno.ENOENT, "no such object", where) from None
        if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
            raise FileExistsError(errno.EEXIST, "precondition failed", where) from None
        if status == 416 or code == "InvalidRange":
            raise EOFError(where) from None
        if status == 403 or code in _CREDENTIALS:
            raise remote.refused(where, f"the store refused the credentials ({code or status})",
                                 _AWS_HINT) from None
        raise remote.answered(where, status or "an error", code) from None
    except (NoCredentialsError, PartialCredentialsError):
        raise remote.refused(where, "no AWS credentials", _AWS_HINT) from None
    except BotoCoreError as exc:  # no network, timeouts, a closed connection, bad endpoint
        raise remote.unreachable(where, exc) from None


def _info(out: Mapping[str, Any], size: int) -> ObjectInfo:
    return ObjectInfo(size, str(out.get("ETag", "")), dict(out.get("Metadata") or {}))


class S3Api:
    """The few S3 calls rlio needs, on one bucket (see module for the errors they raise)."""

    def __init__(self, s3: Any, bucket: str) -> None:
        self.s3 = s3
        self.bucket = bucket

    def where(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def head(self, key: str) -> ObjectInfo | None:
        """Size, ETag and metadata of ``key``, or None when absent."""
        try:
            with translated(self.where(key)):
                out = self.s3.head_object(Bucket=self.bucket, Key=key)
        except FileNotFoundError as exc:
            if isinstance(exc, RunNotFoundError):
                raise
            return None
        return _info(out, int(out.get("ContentLength", 0)))

    def modified(self, key: str) -> float | None:
        """When ``key`` last changed (its LastModified, seconds since the epoch), or None."""
        try:
            with translated(self.where(key)):
                out = self.s3.head_object(Bucket=self.bucket, Key=key)
        except FileNotFoundError as exc:
            if isinstance(exc, RunNotFoundError):
                raise
            return None
        when = out.get("LastModified")
        return when.timestamp() if when is not None else None

    def list(self, prefix: str, *, max_keys: int | None = None) -> Iterator[dict[str, Any]]:
        """``{"Key", "Size"}`` of objects whose keys start with ``prefix``, in key order."""
        token: str | None = None
        while True:
            kw: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
            if max_keys is not None:
                kw["MaxKeys"] = max_keys
            if token:
                kw["ContinuationToken"] = token
            with translated(self.where(prefix)):
                out = self.s3.list_objects_v2(**kw)
            yield from out.get("Contents") or []
            token = out.get("NextContinuationToken")
            if not token or max_keys is not None:
                return

    def read_ranged(self, key: str, start: int, end: int | None = None, *,
                    if_match: str | None = None) -> tuple[bytes, ObjectInfo]:
        """One GET of bytes ``[start, end)`` (to the end when ``end`` is None); with the object's
        total size, ETag and metadata. ``if_match``: only from that version (else 412)."""
        kw: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if end is not None:
            kw["Range"] = f"bytes={start}-{end - 1}"
        elif start:
            kw["Range"] = f"bytes={start}-"
        if if_match is not None:
            kw["IfMatch"] = if_match
        try:
            with translated(self.where(key)):
                out = self.s3.get_object(**kw)
                data = out["Body"].read()
        except EOFError:  # start is at or past the end of the object
            info = self.head(key)
            if info is None:
                raise FileNotFoundError(errno.ENOENT, "no such object", self.where(key)) from None
            return b"", info
        crange = str(out.get("ContentRange") or "").rpartition("/")[2]
        if crange.isascii() and crange.isdigit():
            total = int(crange)
        elif "Range" in kw:  # a server that ignored the range sent the whole object
            total, data = len(data), data[start:end]
        else:
            total = len(data)
        return data, _info(out, total)

    def read(self, key: str, start: int, end: int, *, if_match: str | None = None) -> bytes:
        """Bytes ``[start, end)`` of ``key`` in one ranged GET."""
        if end <= start:
            return b""
        return self.read_ranged(key, start, end, if_match=if_match)[0]

    def put(self, key: str, data: bytes, *, metadata: Mapping[str, str] | None = None,
            if_match: str | None = None, create_only: bool = False,
            ctype: str = TEXT_TYPE) -> str:
        """Write ``key`` whole (atomic); conditional on ``if_match`` or on its absence. Its ETag."""
        kw: dict[str, Any] = {"Bucket": self.bucket, "Key": key, "Body": data,
                              "ContentType": ctype, "Metadata": dict(metadata or {})}
        if if_match is not None:
            kw["IfMatch"] = if_match
        if create_only:
            kw["IfNoneMatch"] = "*"
        with translated(self.where(key)):
            return str(self.s3.put_object(**kw)["ETag"])

    def set_metadata(self, key: str, metadata: Mapping[str, str], *, size: int, if_match: str,
                     ctype: str = TEXT_TYPE) -> str:
        """Replace the user metadata of ``key`` (copied inside S3) only while it is version
        ``if_match``, so that its ETag changes; its new ETag.

        An S3 ETag names the bytes and how they were uploaded, not the metadata: a plain copy of
        a plainly uploaded object keeps its ETag. So the object is copied in the other form: as
        a one-part multipart upload (ETag ``"<md5>-1"``) when its ETag is a plain one, else
        plainly.
        """
        where = self.where(key)
        if "-" in if_match:
            with translated(where):
                out = self.s3.copy_object(
                    Bucket=self.bucket, Key=key, CopySource={"Bucket": self.bucket, "Key": key},
                    CopySourceIfMatch=if_match, IfMatch=if_match, MetadataDirective="REPLACE",
                    Metadata=dict(metadata), ContentType=ctype)
            return str(out["CopyObjectResult"]["ETag"])
        with translated(where):
            upload = self.s3.create_multipart_upload(
                Bucket=self.bucket, Key=key, ContentType=ctype, Metadata=dict(metadata))["UploadId"]
        try:
            with translated(where):
                if size:
                    etag = self.s3.upload_part_copy(
                        Bucket=self.bucket, Key=key, UploadId=upload, PartNumber=1,
                        CopySource={"Bucket": self.bucket, "Key": key},
                        CopySourceIfMatch=if_match)["CopyPartResult"]["ETag"]
                else:
                    etag = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=upload,
                                               PartNumber=1, Body=b"")["ETag"]
                done = self.s3.complete_multipart_upload(
                    Bucket=self.bucket, Key=key, UploadId=upload, IfMatch=if_match,
                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
            return str(done["ETag"])
        except BaseException:
            self.abort(key, upload)
            raise

    def append_multipart(self, key: str, size: int, data: bytes, *, if_match: str,
                         metadata: Mapping[str, str], ctype: str = TEXT_TYPE) -> str:
        """Make ``key`` its first ``size`` bytes (version ``if_match``, copied inside S3) plus
        ``data``, by one multipart upload completed only if ``key`` is still ``if_match``.

        ``size`` must be at least ``MIN_PART``. The upload is aborted when anything fails.
        Returns the new ETag.
        """
        where = self.where(key)
        with translated(where):
            upload = self.s3.create_multipart_upload(
                Bucket=self.bucket, Key=key, ContentType=ctype,
                Metadata=dict(metadata))["UploadId"]
        try:
            parts = []
            n = max(1, math.ceil(size / MAX_COPY_PART))
            step = math.ceil(size / n)
            for i, start in enumerate(range(0, size, step), start=1):
                with translated(where):
                    out = self.s3.upload_part_copy(
                        Bucket=self.bucket, Key=key, UploadId=upload, PartNumber=i,
                        CopySource={"Bucket": self.bucket, "Key": key},
                        CopySourceRange=f"bytes={start}-{min(size, start + step) - 1}",
                        CopySourceIfMatch=if_match)
                parts.append({"PartNumber": i, "ETag": out["CopyPartResult"]["ETag"]})
            with translated(where):
                out = self.s3.upload_part(Bucket=self.bucket, Key=key, UploadId=upload,
                                          PartNumber=n + 1, Body=data)
            parts.append({"PartNumber": n + 1, "ETag": out["ETag"]})
            with translated(where):
                done = self.s3.complete_multipart_upload(
                    Bucket=self.bucket, Key=key, UploadId=upload,
                    MultipartUpload={"Parts": parts}, IfMatch=if_match)
            return str(done["ETag"])
        except BaseException:
            self.abort(key, upload)
            raise

    def abort(self, key: str, upload: str) -> bool:
        """Abort a multipart upload; False when it could not be (gone, completed, offline)."""
        try:
            with translated(self.where(key)):
                self.s3.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload)
        except OSError:
            return False
        return True

    def uploads(self, prefix: str) -> Iterator[dict[str, Any]]:
        """``{"Key", "UploadId", "Initiated"}`` of the multipart uploads in progress under
        ``prefix``."""
        kw: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        while True:
            with translated(self.where(prefix)):
                out = self.s3.list_multipart_uploads(**kw)
            yield from out.get("Uploads") or []
            if not out.get("IsTruncated"):
                return
            kw["KeyMarker"] = out.get("NextKeyMarker")
            kw["UploadIdMarker"] = out.get("NextUploadIdMarker")

    def delete(self, key: str, *, if_match: str | None = None) -> bool:
        """Delete ``key`` (only version ``if_match`` if given); False when it was already gone."""
        kw: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if if_match is not None:
            kw["IfMatch"] = if_match
        try:
            with translated(self.where(key)):
                self.s3.delete_object(**kw)
        except FileNotFoundError:
            return False
        return True
