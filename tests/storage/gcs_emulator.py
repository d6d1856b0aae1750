"""A GCS emulator that enforces preconditions and injects faults, for rlio's gs:// tests.

The stock ``gcp-storage-emulator`` ignores ``ifGenerationMatch`` and friends, so a writer without
preconditions would pass every test run against it. This module serves the stock emulator's handlers
behind a router that answers as GCS does:

- ``ifGenerationMatch`` / ``ifMetagenerationMatch`` that do not hold: 412 (uploads, compose,
  delete, metadata and media GETs); ``ifGenerationNotMatch`` / ``ifMetagenerationNotMatch`` that do
  not hold: 304 on GETs, 412 on writes; ``ifGenerationMatch=0``: create-only.
- A ``generation`` query parameter (GET, DELETE) or a compose source ``generation`` naming anything
  but the live generation: 404 (a bucket without object versioning keeps no old generations);
  a compose source ``objectPreconditions.ifGenerationMatch`` that does not hold: 412.

The server is single-threaded, so every check and the write it guards are one atomic step.
Deleted objects are dropped at once (no soft delete) and the in-memory metadata table is not
re-serialized on every write, so the emulator does not slow down as objects come and go.

Control endpoints (not GCS): ``POST /_rlio/faults`` with a JSON list of rules, each
``{"op": "upload"|"compose"|"delete"|"meta"|"read"|"list", "name": <regex on the object name>,
"mode": "commit_then_503"|"commit_then_drop"|"503", "skip": n, "times": k}``: after ``skip``
matching requests, the next ``times`` ones fail that way (``commit_then_*`` first perform the
request, then answer 503 or close the connection without an answer: the ambiguous failure).
``GET /_rlio/faults`` reports how many were injected; ``GET /_rlio/stats`` returns, per op, the
request count, the bytes received (``bytes``: request line, headers and body) and the body bytes
answered (``bytes_out``); ``POST /_rlio/stats`` resets them.

Run as a script: ``python gcs_emulator.py --port 0 --bucket NAME`` prints ``READY <port>``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
from functools import partial
from http import HTTPStatus
from http import server as http_server
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # faults.py, however loaded
from faults import ChildEmulator, Faults, arguments, running, serve_until_stopped

_UPLOAD_RE = re.compile(r"^/upload/storage/v1/b/(?P<bucket>[-.\w]+)/o$")
_COMPOSE_RE = re.compile(r"^(?:/storage/v1)?/b/(?P<bucket>[-.\w]+)/o/(?P<obj>.+)/compose$")
_OBJECT_RE = re.compile(r"^(?:/storage/v1)?/b/(?P<bucket>[-.\w]+)/o/(?P<obj>.+)$")
_LIST_RE = re.compile(r"^(?:/storage/v1)?/b/(?P<bucket>[-.\w]+)/o$")
_DOWNLOAD_RE = re.compile(r"^/download/storage/v1/b/(?P<bucket>[-.\w]+)/o/(?P<obj>.+)$")


def _op_of(method: str, path: str, query: dict[str, list[str]]) -> tuple[str, str | None, str]:
    """(op, bucket, object name or '') of a request, from its method and path."""
    from urllib.parse import unquote

    if method in ("POST", "PUT") and (m := _UPLOAD_RE.match(path)):
        return "upload", m["bucket"], query.get("name", [""])[0]
    if method == "POST" and (m := _COMPOSE_RE.match(path)):
        return "compose", m["bucket"], unquote(m["obj"])
    if method == "GET" and (m := _DOWNLOAD_RE.match(path)):
        return "read", m["bucket"], unquote(m["obj"])
    if method == "GET" and (m := _LIST_RE.match(path)):
        return "list", m["bucket"], ""
    if (m := _OBJECT_RE.match(path)) and "/copyTo/" not in path and "/rewriteTo/" not in path:
        obj = unquote(m["obj"])
        if method == "DELETE":
            return "delete", m["bucket"], obj
        if method == "GET":
            return ("read" if query.get("alt") == ["media"] else "meta"), m["bucket"], obj
        if method == "PATCH":
            return "patch", m["bucket"], obj
    return "other", None, ""


def _status_json(code: HTTPStatus, reason: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code.value, "message": message,
                      "errors": [{"domain": "global", "reason": reason, "message": message}]}}


class _Handler(http_server.BaseHTTPRequestHandler):
    """Routes to the stock emulator's handlers after checking preconditions and faults."""

    #: Seconds a request may stall (a client SIGSTOPped mid-request): the server serves one
    #: request at a time, so without it every other client would wait for the paused one.
    timeout = 10.0

    def __init__(self, storage: Any, state: Faults, *args: Any, **kwargs: Any) -> None:
        self.storage = storage
        self.state = state
        super().__init__(*args, **kwargs)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def do_PATCH(self) -> None:
        self._route("PATCH")

    def _send_json(self, code: HTTPStatus, obj: Any) -> None:
        body = b"" if code == HTTPStatus.NOT_MODIFIED else json.dumps(obj).encode()
        self.send_response(code.value, code.phrase)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _control(self, method: str, path: str) -> bool:
        if path == "/_rlio/faults":
            if method == "POST":
                n = int(self.headers.get("Content-Length") or 0)
                self.state.set_faults(json.loads(self.rfile.read(n) or b"[]"))
            self._send_json(HTTPStatus.OK, {"rules": self.state.rules,
                                            "injected": self.state.injected})
            return True
        if path == "/_rlio/stats":
            self._send_json(HTTPStatus.OK, self.state.take_stats(reset=method == "POST"))
            return True
        return False

    def _route(self, method: str) -> None:
        from gcp_storage_emulator import server as emu

        from_override = self.headers.get("x-http-method-override")
        method = from_override or method
        request = emu.Request(self, method)
        if self._control(method, request.path):
            return
        op, bucket, name = _op_of(method, request.path, request.query)
        nbytes = (len(self.raw_requestline) + len(str(self.headers))
                  + int(self.headers.get("Content-Length") or 0))
        self.state.count(op, nbytes)
        if op == "upload" and method == "POST" and not name:
            name = _upload_name(request)
        if bucket is not None and name:
            refusal = self._precondition(op, method, bucket, name, request)
            if refusal is not None:
                self.state.count(f"{op}:{refusal[0].value}", 0)
                self._send_json(refusal[0], refusal[1])
                return
        rule = self.state.fault_for(op, name) if name else None
        fault = None if rule is None else str(rule["mode"])
        if fault == "503":
            self._send_json(HTTPStatus.SERVICE_UNAVAILABLE, _status_json(
                HTTPStatus.SERVICE_UNAVAILABLE, "backendError", "injected fault"))
            return
        response = emu.Response(self)
        handler = _find_handler(emu, request, method)
        if handler is None:
            response.status = HTTPStatus.NOT_IMPLEMENTED
        else:
            handler(request, response, self.storage)
        if fault == "commit_then_503":
            self._send_json(HTTPStatus.SERVICE_UNAVAILABLE, _status_json(
                HTTPStatus.SERVICE_UNAVAILABLE, "backendError", "injected fault after commit"))
            return
        if fault == "commit_then_drop":
            self.close_connection = True
            return
        live = self._live(bucket, name) if bucket is not None and name else None
        if op == "read" and live is not None:
            response["x-goog-generation"] = str(live["generation"])  # as GCS sends it
        content = response._content
        self.state.count_out(op, len(content.encode() if isinstance(content, str) else content))
        response.close()

    def _live(self, bucket: str, name: str) -> dict[str, Any] | None:
        return self.storage.objects.get(bucket, {}).get(name)  # type: ignore[no-any-return]

    def _precondition(self, op: str, method: str, bucket: str, name: str,
                      request: Any) -> tuple[HTTPStatus, dict[str, Any]] | None:
        q = {k: v[0] for k, v in request.query.items()}
        obj = self._live(bucket, name)
        write = op in ("upload", "compose", "delete", "patch")
        if op in ("meta", "read", "delete") and "generation" in q and (
                obj is None or str(obj["generation"]) != q["generation"]):
            return HTTPStatus.NOT_FOUND, _status_json(
                HTTPStatus.NOT_FOUND, "notFound", f"No such object: {bucket}/{name}")
        if op == "compose":
            for src in (request.data or {}).get("sourceObjects", []):
                live = self._live(bucket, src.get("name", ""))
                if live is None or ("generation" in src
                                    and str(src["generation"]) != str(live["generation"])):
                    return HTTPStatus.NOT_FOUND, _status_json(
                        HTTPStatus.NOT_FOUND, "notFound",
                        f"No such object: {bucket}/{src.get('name')}")
                pre = (src.get("objectPreconditions") or {}).get("ifGenerationMatch")
                if pre is not None and str(pre) != str(live["generation"]):
                    return _failed()
        gen = int(obj["generation"]) if obj else 0
        metagen = int(obj["metageneration"]) if obj else None
        if "ifGenerationMatch" in q and int(q["ifGenerationMatch"]) != gen:
            return _failed()
        if "ifMetagenerationMatch" in q and metagen != int(q["ifMetagenerationMatch"]):
            return _failed()
        not_match = (("ifGenerationNotMatch" in q and int(q["ifGenerationNotMatch"]) == gen)
                     or ("ifMetagenerationNotMatch" in q
                         and metagen == int(q["ifMetagenerationNotMatch"])))
        if not_match:
            return _failed() if write else (HTTPStatus.NOT_MODIFIED, {})
        return None


def _failed() -> tuple[HTTPStatus, dict[str, Any]]:
    return HTTPStatus.PRECONDITION_FAILED, _status_json(
        HTTPStatus.PRECONDITION_FAILED, "conditionNotMet",
        "At least one of the pre-conditions you specified did not hold.")


def _upload_name(request: Any) -> str:
    data = request.data
    if isinstance(data, dict):
        meta = data.get("meta", data)
        if isinstance(meta, dict):
            return str(meta.get("name") or "")
    return ""


def _find_handler(emu: Any, request: Any, method: str) -> Any:
    for regex, handlers in emu.HANDLERS:
        match = re.compile(regex).fullmatch(request.path)
        if match:
            request.set_match(match)
            handler = handlers.get(method)
            if handler is None and method == "POST" and request.query.get("uploadType"):
                from gcp_storage_emulator.handlers import objects

                handler = objects.insert
            return handler
    return None


class _Server(http_server.HTTPServer):
    request_queue_size = 256  # the stdlib's 5 drops SYNs when several clients connect at once
    allow_reuse_address = True


def make_server(host: str, port: int, buckets: list[str]) -> _Server:
    """A ready-to-serve enforcing emulator with in-memory storage and ``buckets`` created."""
    from gcp_storage_emulator.handlers import buckets as emu_buckets
    from gcp_storage_emulator.storage import Storage

    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    logging.getLogger("api.object").setLevel(logging.ERROR)
    logging.getLogger("api.bucket").setLevel(logging.ERROR)
    storage = Storage(use_memory_fs=True, data_dir="/")
    storage._write_config_to_file = lambda: None  # persistence only; O(objects) per write
    for name in buckets:
        emu_buckets.create_bucket(name, storage)
        storage.buckets[name]["softDeletePolicy"] = {"retentionDurationSeconds": "0"}
    return _Server((host, port), partial(_Handler, storage, Faults()))


class Emulator(ChildEmulator):
    """The enforcing emulator in a child process, with its control endpoints.

    Usage: ``with Emulator(bucket="b") as emu: os.environ.update(emu.env)``.
    """

    script = os.path.abspath(__file__)
    label = "GCS emulator"

    @property
    def env(self) -> dict[str, str]:
        """Environment variables that point gcsfs (and rlio) at this emulator."""
        return {"STORAGE_EMULATOR_HOST": self.url, "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}

    def wipe(self) -> None:
        """Delete every object, keeping the bucket; clear faults and stats."""
        self._call("GET", "/wipe?keep-buckets=true")
        self.set_faults([])
        self.stats(reset=True)


def serving(bucket: str) -> contextlib.AbstractContextManager[Emulator]:
    """A started emulator of ``bucket`` with ``STORAGE_EMULATOR_HOST`` (and gcsfs's flags) set in
    ``os.environ`` meanwhile, so the writer processes a test starts use it too; restored after."""
    return running(Emulator(bucket=bucket))


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM; print ``READY <port>`` once listening."""
    args = arguments(argv)
    serve_until_stopped(make_server(args.host, args.port, args.bucket or ["rlio-test"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
