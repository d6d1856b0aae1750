"""An S3 emulator for rlio's s3:// tests: moto in server mode behind a precondition-enforcing layer.

moto 5.x enforces ``If-Match`` / ``If-None-Match`` on PutObject (and ``If-None-Match`` on
CompleteMultipartUpload) but not ``If-Match`` on CompleteMultipartUpload and CopyObject nor
``x-amz-copy-source-if-match`` on UploadPartCopy and CopyObject, which rlio's multipart appends
and fencing rely on. This module serves moto's WSGI app behind a layer that answers those as S3
does (412 PreconditionFailed), and makes every check and the write it guards one atomic step
(requests are served one at a time).

Control endpoints (not S3): ``POST /_rlio/faults`` with a JSON list of rules, each
``{"op": <op>, "name": <regex on the object key>, "mode": "503"|"commit_then_503"|
"commit_then_drop"|"slow", "skip": n, "times": k, "seconds": s}``: after ``skip`` matching
requests, the next ``times`` ones fail that way (``commit_then_*`` perform the request, then
answer 503 or close the connection without an answer: the ambiguous failure; ``slow`` waits
``seconds`` before serving). Ops: ``put``, ``get``, ``head``, ``list``, ``delete``,
``copy`` (CopyObject), ``create_mpu``, ``upload_part``, ``copy_part``, ``complete``, ``abort``,
``list_mpu``.
``GET /_rlio/faults`` reports how many were injected; ``GET /_rlio/stats`` returns, per op, the
request count, the bytes received (``bytes``: request line, headers and body) and the body bytes
answered (``bytes_out``); ``POST /_rlio/stats`` resets them.

Run as a script: ``python s3_emulator.py --port 0 --bucket NAME`` prints ``READY <port>``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, unquote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # faults.py, however loaded
from faults import ChildEmulator, Faults, arguments, running, serve_until_stopped

_PRECONDITION = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed'
                 b"</Code><Message>At least one of the pre-conditions you specified did not hold"
                 b"</Message><Condition>%s</Condition></Error>")
_UNAVAILABLE = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable'
                b"</Code><Message>injected fault</Message></Error>")


def _op_of(method: str, key: str, query: dict[str, list[str]], environ: dict[str, Any]) -> str:
    """The S3 operation of a path-style request."""
    if not key:
        if method == "GET":
            return "list_mpu" if "uploads" in query else "list"
        return "other"
    if method == "PUT":
        if "uploadId" in query:
            return "copy_part" if environ.get("HTTP_X_AMZ_COPY_SOURCE") else "upload_part"
        return "copy" if environ.get("HTTP_X_AMZ_COPY_SOURCE") else "put"
    if method == "POST":
        if "uploads" in query:
            return "create_mpu"
        return "complete" if "uploadId" in query else "other"
    if method == "DELETE":
        return "abort" if "uploadId" in query else "delete"
    return {"GET": "get", "HEAD": "head"}.get(method, "other")


def _etag_of(bucket: str, key: str) -> str | None:
    """The live ETag (unquoted) of ``bucket/key`` in moto's in-process backend, or None."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    try:
        obj = backend.get_object(bucket, key)
    except Exception:  # no such bucket
        return None
    return None if obj is None else str(obj.etag).strip('"')


def _refusal(op: str, bucket: str, key: str, environ: dict[str, Any]) -> bytes | None:
    """The failed condition moto does not check itself, or None when the request may go on."""
    if op == "complete":
        live = _etag_of(bucket, key)
        want = environ.get("HTTP_IF_MATCH")
        if want is not None and (live is None or want.strip('"') != live):
            return b"If-Match"
        if environ.get("HTTP_IF_NONE_MATCH") == "*" and live is not None:
            return b"If-None-Match"
    if op == "copy":
        live = _etag_of(bucket, key)
        want = environ.get("HTTP_IF_MATCH")
        if want is not None and (live is None or want.strip('"') != live):
            return b"If-Match"
    if op in ("copy_part", "copy"):
        want = environ.get("HTTP_X_AMZ_COPY_SOURCE_IF_MATCH")
        if want is not None:
            src = unquote(environ["HTTP_X_AMZ_COPY_SOURCE"].split("?")[0]).lstrip("/")
            sb, _, sk = src.partition("/")
            if want.strip('"') != _etag_of(sb, sk):
                return b"x-amz-copy-source-If-Match"
    return None


class Enforcer:
    """WSGI middleware in front of moto's app: preconditions, faults, counters (see module)."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.state = Faults()
        self.lock = threading.Lock()  # one request at a time: a check and its write are atomic

    def _control(self, environ: dict[str, Any], start: Callable[..., Any]) -> list[bytes]:
        path, method = environ["PATH_INFO"], environ["REQUEST_METHOD"]
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        if path == "/_rlio/faults":
            if method == "POST":
                self.state.set_faults(json.loads(body or b"[]"))
            out: Any = {"rules": self.state.rules, "injected": self.state.injected}
        else:
            out = self.state.take_stats(reset=method == "POST")
        data = json.dumps(out).encode()
        start("200 OK", [("Content-Type", "application/json"),
                         ("Content-Length", str(len(data)))])
        return [data]

    def __call__(self, environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"].startswith("/_rlio/"):
            with self.lock:
                return self._control(environ, start)
        method = environ["REQUEST_METHOD"]
        bucket, _, key = unquote(environ["PATH_INFO"]).lstrip("/").partition("/")
        query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        op = _op_of(method, key, query, environ)
        length = environ.get("CONTENT_LENGTH")
        body = environ["wsgi.input"].read(int(length)) if length else (
            environ["wsgi.input"].read() if environ.get("wsgi.input_terminated") else b"")
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        head = sum(len(k) + len(str(v)) + 4 for k, v in environ.items() if k.startswith("HTTP_"))
        with self.lock:
            self.state.count(op, len(method) + len(environ.get("RAW_URI", "")) + head + len(body))
            rule = self.state.fault_for(op, key) if key else None
        if rule is not None and rule["mode"] == "slow":
            time.sleep(float(rule.get("seconds", 1.0)))
        with self.lock:
            return self._serve(environ, start, op, bucket, key, rule)

    def _serve(self, environ: dict[str, Any], start: Callable[..., Any], op: str, bucket: str,
               key: str, rule: dict[str, Any] | None) -> Iterable[bytes]:
        mode = rule["mode"] if rule is not None else None
        failed = _refusal(op, bucket, key, environ) if key else None
        if failed is not None:
            self.state.count(f"{op}:412", 0)
            data = _PRECONDITION % failed
            start("412 Precondition Failed", [("Content-Type", "application/xml"),
                                              ("Content-Length", str(len(data)))])
            return [data]
        if mode == "503":
            return self._unavailable(start)
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured["status"], captured["headers"] = status, headers
            return lambda chunk: None

        result = self.app(environ, capture)
        try:
            data = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if str(captured.get("status", "")).startswith("412"):
            self.state.count(f"{op}:412", 0)
        if mode == "commit_then_503":
            return self._unavailable(start)
        if mode == "commit_then_drop":
            sock = environ.get("werkzeug.socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            return []
        self.state.count_out(op, len(data))
        start(captured["status"], captured["headers"])
        return [data]

    def _unavailable(self, start: Callable[..., Any]) -> list[bytes]:
        start("503 Service Unavailable", [("Content-Type", "application/xml"),
                                          ("Content-Length", str(len(_UNAVAILABLE)))])
        return [_UNAVAILABLE]


class Emulator(ChildEmulator):
    """The enforcing S3 emulator in a child process, with its control endpoints."""

    script = os.path.abspath(__file__)
    label = "S3 emulator"

    @property
    def env(self) -> dict[str, str]:
        """The standard AWS environment pointing boto3 (and rlio) at this emulator."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def serving(bucket: str) -> contextlib.AbstractContextManager[Emulator]:
    """A started emulator holding ``bucket``, with the standard AWS variables pointing at it set in
    ``os.environ`` meanwhile (so writer processes a test starts use it too); restored after."""
    return running(Emulator(bucket=bucket), drop=("AWS_PROFILE", "AWS_SESSION_TOKEN"))


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM; print ``READY <port>`` once listening."""
    args = arguments(argv)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    app = Enforcer(DomainDispatcherApplication(create_backend_app))
    srv = make_server(args.host, args.port, app, threaded=True,
                      request_handler=MotoRequestHandler)
    srv.socket.listen(256)
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    for name in args.bucket or ["rlio-test"]:
        s3_backends[DEFAULT_ACCOUNT_ID]["aws"].create_bucket(name, "us-east-1")

    serve_until_stopped(srv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
