"""A small Chrome DevTools Protocol client for the browser tests (test tooling, not library code).

Starts Debian's headless Chromium on a free debugging port in its own process group with a
throw-away profile, opens one page target, and records what a person would notice: console
errors, uncaught exceptions, log entries and every network request the page makes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import threading
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from typing import Any

import websocket

CHROMIUM = os.environ.get("RLIO_CHROMIUM", "/usr/bin/chromium")
_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-extensions", "--disable-default-apps", "--mute-audio",
    "--remote-allow-origins=*", "--remote-debugging-port=0", "--hide-scrollbars",
]
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


class CDPError(RuntimeError):
    """A DevTools command failed or the browser did not answer in time."""


@dataclass
class PageRecord:
    """What one page did while it was open."""

    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log_entries: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error-level log entries, as text."""
        out = [f"console.{c.get('type')}: {c.get('args')}" for c in self.console
               if c.get("type") in ("error", "assert")]
        out += [f"exception: {e.get('exceptionDetails', {}).get('text')} "
                f"{e.get('exceptionDetails', {}).get('exception', {}).get('description')}"
                for e in self.exceptions]
        out += [f"log {e['entry'].get('source')}/{e['entry'].get('level')}: "
                f"{e['entry'].get('text')} {e['entry'].get('url', '')}"
                for e in self.log_entries if e["entry"].get("level") == "error"]
        return out

    def foreign_requests(self, page_url: str) -> list[str]:
        """Requests other than the page's own document and ``data:`` URLs."""
        return [u for u in self.requests if u != page_url and not u.startswith("data:")]


class Page:
    """One page target, driven over its own websocket."""

    def __init__(self, ws_url: str, timeout: float = 30.0) -> None:
        self._ws = websocket.create_connection(ws_url, timeout=timeout, suppress_origin=True)
        self._timeout = timeout
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.target_id = ""  # the page target's id, set by Browser.new_page
        self.record = PageRecord()
        self.url = "about:blank"
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def close(self) -> None:
        self._ws.close()

    def _dispatch(self, msg: dict[str, Any]) -> None:
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.record.console.append(
                {"type": params.get("type"),
                 "args": [a.get("value", a.get("description")) for a in params.get("args", [])]})
        elif method == "Runtime.exceptionThrown":
            self.record.exceptions.append(params)
        elif method == "Log.entryAdded":
            self.record.log_entries.append(params)
        elif method == "Network.requestWillBeSent":
            self.record.requests.append(params["request"]["url"])
        self._events.append(msg)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and return its result (events that arrive meanwhile are recorded)."""
        self._next_id += 1
        mid = self._next_id
        self._ws.settimeout(self._timeout)
        self._ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise CDPError(f"{method} failed: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result
            if "method" in msg:
                self._dispatch(msg)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        """Wait for the next event named ``method`` (one already received counts)."""
        for i, msg in enumerate(self._events):
            if msg.get("method") == method:
                del self._events[: i + 1]
                return msg
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._ws.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                msg = json.loads(self._ws.recv())
            except websocket.WebSocketTimeoutException:
                break
            if "method" in msg:
                self._dispatch(msg)
                if msg["method"] == method:
                    self._events.clear()
                    return msg
        raise CDPError(f"no {method} event within {timeout}s")

    def navigate(self, url: str, *, settle: float = 0.3) -> None:
        """Open ``url`` with a fresh record, wait for its load event, let late events arrive."""
        self._events.clear()
        self.record = PageRecord()
        self.url = url
        result = self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise CDPError(f"navigation to {url} failed: {result['errorText']}")
        self.wait_event("Page.loadEventFired")
        self.pump(settle)

    def pump(self, seconds: float) -> None:
        """Record events for ``seconds`` (console messages and requests that arrive late)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._ws.settimeout(left)
            try:
                msg = json.loads(self._ws.recv())
            except websocket.WebSocketTimeoutException:
                return
            if "method" in msg:
                self._dispatch(msg)

    def evaluate(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page and return its value (JSON-able)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise CDPError(f"evaluation failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """Click the centre of the first element matching ``selector`` with real mouse events."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def screenshot(self, *, scale: float = 1.0, full_page: bool = False) -> bytes:
        """A PNG of the viewport (or the whole page), optionally scaled down."""
        params: dict[str, Any] = {"format": "png"}
        if full_page or scale != 1.0:
            metrics = self.send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            vp = metrics.get("cssLayoutViewport") or metrics["layoutViewport"]
            height = min(size["height"], 16000) if full_page else vp["clientHeight"]
            params["clip"] = {"x": 0, "y": 0, "width": vp["clientWidth"], "height": height,
                              "scale": scale}
            params["captureBeyondViewport"] = full_page
        return base64.b64decode(self.send("Page.captureScreenshot", **params)["data"])


class Browser:
    """A headless Chromium in its own process group; ``close`` kills the whole group."""

    def __init__(self, *, width: int = 1280, height: int = 900) -> None:
        self._profile = tempfile.mkdtemp(prefix="rlio-chromium-")
        self._stderr: queue.Queue[str] = queue.Queue()
        self._proc = subprocess.Popen(
            [CHROMIUM, *_FLAGS, f"--user-data-dir={self._profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True, text=True, errors="replace",
        )
        threading.Thread(target=self._drain, daemon=True).start()
        self._pages: list[Page] = []
        try:
            self.ws_url = self._wait_listening(timeout=30.0)
        except BaseException:
            self.close()
            raise
        self.port = int(self.ws_url.split(":")[2].split("/")[0])

    def _drain(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._stderr.put(line)

    def _wait_listening(self, timeout: float) -> str:
        deadline, seen = time.monotonic() + timeout, []
        while time.monotonic() < deadline:
            try:
                line = self._stderr.get(timeout=0.2)
            except queue.Empty:
                if self._proc.poll() is not None:
                    break
                continue
            seen.append(line)
            m = _LISTENING.search(line)
            if m:
                return m.group(1)
        raise CDPError(f"{CHROMIUM} did not start a DevTools endpoint; stderr: {''.join(seen)}")

    def new_page(self) -> Page:
        """Open a fresh page target and connect to it."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank",
                                     method="PUT")
        with urllib.request.urlopen(req, timeout=10) as resp:  # loopback only
            target = json.load(resp)
        page = Page(target["webSocketDebuggerUrl"])
        page.target_id = target["id"]
        self._pages.append(page)
        return page

    def alive(self) -> bool:
        """Whether the browser process is still running."""
        return self._proc.poll() is None

    def close_page(self, page: Page) -> None:
        """Close one page: its connection and its target (the tab), so the next starts clean."""
        with contextlib.suppress(Exception):
            page.close()
        with contextlib.suppress(Exception):  # loopback only
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/close/{page.target_id}",
                                   timeout=10).close()
        if page in self._pages:
            self._pages.remove(page)

    def close(self) -> None:
        """Close the pages, kill the browser's process group and remove its profile."""
        for page in self._pages:
            with contextlib.suppress(Exception):
                page.close()
        with contextlib.suppress(ProcessLookupError):  # the group, helpers included
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc.wait(timeout=10)
        shutil.rmtree(self._profile, ignore_errors=True)


def decode_png(data: bytes) -> tuple[int, int, int, bytes]:
    """Decode an 8-bit RGB or RGBA PNG into ``(width, height, channels, raw pixel bytes)``."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, [], 0
    height = channels = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"unsupported PNG: depth {depth}, color type {color}")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    out = bytearray(height * stride)
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xFF
        elif f == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return width, height, channels, bytes(out)


def png_stats(data: bytes) -> tuple[int, float]:
    """``(distinct colours, luminance variance)`` of a PNG: a blank page has ~1 and ~0."""
    width, height, ch, px = decode_png(data)
    colours: set[bytes] = set()
    total = total_sq = 0.0
    n = width * height
    for i in range(0, len(px), ch):
        rgb = px[i:i + 3]
        colours.add(rgb)
        lum = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
        total += lum
        total_sq += lum * lum
    mean = total / n
    return len(colours), total_sq / n - mean * mean
