"""Azurite (Microsoft's Azure Blob emulator) for rlio's az:// tests, behind a fault proxy.

``Azurite`` starts ``azurite-blob`` (from ``.ci/node``, where ``.ci/run`` installs it, or from
PATH) on a free loopback port, in memory, with telemetry off. ``FaultProxy`` is a small HTTP
proxy in front of it, run on threads of the test process, that counts requests and bytes per
operation and injects faults by rules ``{"op", "name", "mode", "skip", "times"}``:

- ``op``: ``append`` (AppendBlock), ``put`` (Put Blob / blocks / block list), ``copy``,
  ``lease``, ``props`` (HEAD), ``read`` (GET of a blob), ``list``, ``delete``, ``create``
  (an empty append blob), ``other``;
- ``name``: a regex on the request path; ``skip``: matching requests let through first;
  ``times``: how many then fail;
- ``mode``: ``503`` (not forwarded), ``commit_then_503`` (forwarded, then answered 503),
  ``commit_then_drop`` (forwarded, then the connection closed without an answer: the ambiguous
  failure), ``slow`` (forwarded after ``delay`` seconds).

Shared Key signatures do not cover the host, so the proxy forwards requests unchanged.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # faults.py, however loaded
from faults import Faults, environment, stop_child

ACCOUNT = "devstoreaccount1"
#: Azurite's well-known development account key (public, in Azurite's documentation).
KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
       "KBHBeksoGMGw==")
REPO = Path(__file__).resolve().parents[2]


def binary() -> str | None:
    """The azurite-blob executable: the repository's ``.ci/node`` copy, else one on PATH."""
    local = REPO / ".ci" / "node" / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    return shutil.which("azurite-blob")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def connection_string(port: int) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint=http://127.0.0.1:{port}/{ACCOUNT};")


class Azurite:
    """An ``azurite-blob`` child process on a free loopback port (stopped by its pid)."""

    def __init__(self) -> None:
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir = tempfile.mkdtemp(prefix="rlio-azurite-")

    def start(self) -> Azurite:
        exe = binary()
        if exe is None:
            raise FileNotFoundError("azurite-blob not found (run .ci/run, or npm install azurite)")
        for _ in range(5):
            self.port = free_port()
            self._proc = subprocess.Popen(
                [exe, "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck",
                 "--loose", "--silent", "--blobHost", "127.0.0.1", "--blobPort", str(self.port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self._dir)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self._proc.poll() is None:
                with contextlib.suppress(OSError), socket.create_connection(
                        ("127.0.0.1", self.port), timeout=0.5):
                    return self
                time.sleep(0.1)
            self.stop()
        raise RuntimeError("azurite-blob did not start")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_child(proc)
        shutil.rmtree(self._dir, ignore_errors=True)


def op_of(method: str, path: str, query: dict[str, list[str]], headers: Any) -> str:
    """The operation of a Blob request (see the module docstring)."""
    comp = query.get("comp", [""])[0]
    if method == "GET":
        return "list" if comp == "list" else "read"
    if method == "HEAD":
        return "props"
    if method == "DELETE":
        return "delete"
    if method == "PUT":
        if comp == "appendblock":
            return "append"
        if comp == "lease":
            return "lease"
        if headers.get("x-ms-copy-source"):
            return "copy"
        if headers.get("x-ms-blob-type", "").lower() == "appendblob":
            return "create"
        if comp in ("", "block", "blocklist"):
            return "put"
    return "other"


class FaultProxy:
    """The fault-injecting, counting proxy in front of one Azurite (module docstring)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.faults = Faults()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms stalls

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy._serve(self)

            do_PUT = do_HEAD = do_DELETE = do_POST = do_GET

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def connection_string(self) -> str:
        return connection_string(self.port)

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        self.faults.set_faults(rules)

    def injected(self) -> int:
        """How many faults were injected since the rules were installed."""
        return self.faults.injected

    def stats(self, *, reset: bool = False) -> dict[str, dict[str, int]]:
        """Requests, bytes received (line, headers, body) and body bytes answered, per op."""
        return self.faults.take_stats(reset=reset)

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        split = urlsplit(h.path)
        op = op_of(h.command, split.path, parse_qs(split.query), h.headers)
        rule = self.faults.fault_for(op, split.path)
        mode = rule["mode"] if rule else None
        received = len(h.requestline) + len(str(h.headers)) + len(body)
        if mode == "503":
            self.faults.count(op, received, 0)
            self._answer(h, 503, [("x-ms-error-code", "ServerBusy")], b"")
            return
        if mode == "slow":
            time.sleep(float(rule.get("delay", 2.0)) if rule else 2.0)
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=60)
        try:
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.putrequest(h.command, h.path, skip_host=True, skip_accept_encoding=True)
            for k, v in h.headers.items():
                conn.putheader(k, v)
            conn.endheaders(body or None)
            resp = conn.getresponse()
            data = resp.read()
            headers = [(k, v) for k, v in resp.getheaders()
                       if k.lower() not in ("transfer-encoding", "connection", "content-length")]
            status = resp.status
        finally:
            conn.close()
        self.faults.count(op, received, len(data))
        if status == 412:  # refused by a condition: counted apart too, as the emulators do
            self.faults.count(f"{op}:412", 0)
        if mode == "commit_then_drop":
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)
            return
        if mode == "commit_then_503":
            self._answer(h, 503, [("x-ms-error-code", "ServerBusy")], b"")
            return
        if h.command == "HEAD":  # the size of the blob is its Content-Length
            length = int(resp.getheader("Content-Length") or 0)
            self._answer(h, status, headers, b"", length=length)
            return
        self._answer(h, status, headers, data)

    @staticmethod
    def _answer(h: BaseHTTPRequestHandler, status: int, headers: list[tuple[str, str]],
                data: bytes, *, length: int | None = None) -> None:
        h.send_response(status)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(data) if length is None else length))
        h.end_headers()
        if data:
            h.wfile.write(data)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def create_container(conn: str, name: str) -> None:
    from azure.storage.blob import BlobServiceClient

    with contextlib.suppress(Exception):  # already there
        BlobServiceClient.from_connection_string(conn).create_container(name)


@contextlib.contextmanager
def serving(container: str) -> Iterator[FaultProxy]:
    """Azurite behind a ``FaultProxy`` with ``container`` created, and
    ``AZURE_STORAGE_CONNECTION_STRING`` (pointing at the proxy) set in ``os.environ`` meanwhile,
    so the writer processes a test starts use it too; restored after."""
    azurite = Azurite().start()
    proxy = FaultProxy(azurite.port)
    try:
        with environment({"AZURE_STORAGE_CONNECTION_STRING": proxy.connection_string}):
            create_container(proxy.connection_string, container)
            yield proxy
    finally:
        proxy.close()
        azurite.stop()
