"""The fault-injecting, counting layer every emulator proxy of the storage tests shares (gs://:
``gcs_emulator``, s3://: ``s3_emulator``, az://: ``azurite``).

A test sets rules (``set_faults``): each names an ``op`` (the proxy's name for a request kind),
a ``name`` regex matched against the object's name or path, a ``mode`` the proxy knows how to
inject (``503``, a dropped connection, an answer lost after the commit, ...), and optionally
``skip`` (matching requests to let through first) and ``times`` (how many to fault, 1 by
default). The layer also counts requests, bytes received and body bytes answered per op.

It also owns what the emulator children share: starting and stopping one (``ChildEmulator``,
``stop_child``), its serving loop (``serve_until_stopped``) and the environment that points
clients at it while a session lasts (``environment``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any, Self, TypeVar


class Faults:
    """Fault rules and request counters, safe to share between the proxy's threads."""

    def __init__(self) -> None:
        self.rules: list[dict[str, Any]] = []
        self.injected = 0
        self.stats: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        """Replace the rules (and zero the count of injected faults)."""
        with self._lock:
            self.rules = [dict(r) for r in rules]
            self.injected = 0

    def take_stats(self, *, reset: bool = False) -> dict[str, dict[str, int]]:
        """Requests, bytes received and body bytes answered, per op (then zeroed with reset)."""
        with self._lock:
            out = {k: dict(v) for k, v in self.stats.items()}
            if reset:
                self.stats = {}
        return out

    def count(self, op: str, received: int, answered: int = 0) -> None:
        """Count one request of ``op``: ``received`` bytes in, ``answered`` body bytes out."""
        with self._lock:
            s = self.stats.setdefault(op, {"requests": 0, "bytes": 0, "bytes_out": 0})
            s["requests"] += 1
            s["bytes"] += received
            s["bytes_out"] += answered

    def count_out(self, op: str, answered: int) -> None:
        """Add ``answered`` body bytes to the last request of ``op``."""
        with self._lock:
            self.stats.setdefault(op, {"requests": 0, "bytes": 0, "bytes_out": 0})
            self.stats[op]["bytes_out"] += answered

    def fault_for(self, op: str, name: str) -> dict[str, Any] | None:
        """The rule to apply to this request (None: serve it); every matching rule counts it."""
        with self._lock:
            for rule in self.rules:
                if rule.get("op") != op or not re.search(rule.get("name", ""), name):
                    continue
                if rule.get("skip", 0) > 0:
                    rule["skip"] -= 1
                elif rule.get("times", 1) > 0:
                    rule["times"] = rule.get("times", 1) - 1
                    self.injected += 1
                    return rule
        return None


def stop_child(proc: subprocess.Popen[Any] | None) -> None:
    """Stop an emulator child this process started (by its pid): SIGTERM, then SIGKILL."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class ChildEmulator:
    """An emulator module run as a child process (``python <script> --port 0 --bucket B``
    printing ``READY <port>``), driven through its ``/_rlio/faults`` and ``/_rlio/stats``
    endpoints. A subclass names its ``script`` and the ``env`` that points clients at it."""

    script = ""
    label = "emulator"

    def __init__(self, *, bucket: str = "rlio-test", host: str = "127.0.0.1") -> None:
        self.bucket = bucket
        self.host = host
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        """The endpoint clients are pointed at."""
        return f"http://{self.host}:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """The environment variables that point the cloud's client (and rlio) here."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Self:
        """Start the child and wait until it listens."""
        self._proc = subprocess.Popen(
            [sys.executable, self.script, "--host", self.host, "--port", "0",
             "--bucket", self.bucket],
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"{self.label} did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def stop(self) -> None:
        """Stop the child."""
        proc, self._proc = self._proc, None
        stop_child(proc)
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
        return json.loads(raw) if raw and raw[:1] in b"[{" else raw

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        """Install fault rules (replacing any others)."""
        self._call("POST", "/_rlio/faults", rules)

    def injected(self) -> int:
        """How many faults were injected since the rules were installed."""
        return int(self._call("GET", "/_rlio/faults")["injected"])

    def stats(self, *, reset: bool = False) -> dict[str, dict[str, int]]:
        """Request counts and bytes per op since the last reset."""
        out: dict[str, dict[str, int]] = self._call("POST" if reset else "GET", "/_rlio/stats",
                                                    {} if reset else None)
        return out


@contextlib.contextmanager
def environment(env: dict[str, str], *, drop: tuple[str, ...] = ()) -> Iterator[None]:
    """``env`` set (and ``drop`` unset) in ``os.environ`` meanwhile, so the writer processes a
    test starts reach the emulator too; every name restored after."""
    saved = {k: os.environ.get(k) for k in (*env, *drop)}
    os.environ.update(env)
    for k in drop:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


E = TypeVar("E", bound=ChildEmulator)


@contextlib.contextmanager
def running(emu: E, *, drop: tuple[str, ...] = ()) -> Iterator[E]:
    """``emu`` started, with its ``env`` set (and ``drop`` unset) in ``os.environ`` meanwhile;
    stopped and the environment restored after."""
    emu.start()
    try:
        with environment(emu.env, drop=drop):
            yield emu
    finally:
        emu.stop()


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """An emulator child's command line: ``--host``, ``--port`` (0: a free one), ``--bucket``."""
    p = argparse.ArgumentParser(description="an rlio test emulator")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--bucket", action="append", default=[])
    return p.parse_args(argv)


def serve_until_stopped(srv: Any) -> None:
    """Print ``READY <port>``, then serve until SIGTERM or SIGINT (an emulator child's main)."""

    def _stop(*_: object) -> None:
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    sys.stdout.write(f"READY {srv.server_address[1]}\n")
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        srv.serve_forever(poll_interval=0.2)
    srv.server_close()
