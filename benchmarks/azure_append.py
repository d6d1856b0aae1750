"""Cost of one append to an az:// log as the log grows from 0 to 50 MB.

Starts Azurite (the az:// tests' emulator, ``tests/storage/azurite.py``: ``.ci/node`` or PATH)
behind the tests' counting proxy on free loopback ports, then, at each file size, measures
through ``rlio.storage``:

- ``append_durable`` of one ~150 B metrics line (one AppendBlock with the ``appendpos``
  condition per call);
- ordinary ``append`` calls committed as one batch by ``flush`` (one AppendBlock per batch of
  whole lines up to 4 MiB), counted per line;
- baseline: read-modify-write of a block blob of the same size with ``If-Match`` (HEAD, GET,
  conditional Put Blob), what a store without append needs for the same safety.

Requests and bytes are counted by the proxy: ``sent`` is what the client sent (request line,
headers, body), ``recv`` the body bytes it got back. The log grows between measurements by large
appends. Flat columns are the goal: an append blob appends server-side, so a batch costs its
own bytes whatever the log's size. Times are wall-clock against a local emulator on a shared
machine: indicative only.

Run: ``.venv/bin/python benchmarks/azure_append.py [--max-mb 50] [--samples 20]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORD = (b'{"step": %06d, "progress/batch": %06d, "env/all/reward/total": 0.4375, '
          b'"optim/lr": 0.0001, "time/total": 12.5, "pad": "xxxxxxxxxxxxxxxx"}\n')


def _azurite_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "azurite", ROOT / "tests" / "storage" / "azurite.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _measure(proxy: Any, fn: Any, n: int, per: int = 1) -> tuple[float, float, float, float]:
    """Per line: requests, bytes sent, bytes received, milliseconds (``n`` calls of ``per``)."""
    proxy.stats(reset=True)
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    lines = n * per
    ms = (time.perf_counter() - t0) * 1000 / lines
    s = proxy.stats()
    return (sum(v["requests"] for v in s.values()) / lines,
            sum(v["bytes"] for v in s.values()) / lines,
            sum(v["bytes_out"] for v in s.values()) / lines, ms)


def main(argv: list[str] | None = None) -> int:
    """Print one table: per-append cost at each log size."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-mb", type=int, default=50)
    p.add_argument("--samples", type=int, default=20, help="durable appends measured per size")
    p.add_argument("--batch", type=int, default=100, help="lines per batched commit")
    p.add_argument("--baseline-samples", type=int, default=3)
    args = p.parse_args(argv)
    sizes_mb = [s for s in (0, 1, 10, 50) if s <= args.max_mb]
    mod = _azurite_module()
    if mod.binary() is None:
        print("azurite-blob not found: run .ci/run (it installs it under .ci/node)")
        return 2
    with mod.serving("rlio-bench") as proxy:
        sys.path.insert(0, str(ROOT))
        from rlio.storage import open_storage
        from rlio.storage.azure.storage import AzureStorage

        st = open_storage("az://rlio-bench/rlio", create=True)
        base = open_storage("az://rlio-bench/baseline", create=True)
        assert isinstance(base, AzureStorage)
        bkey = base.key("metrics.jsonl")

        def rmw(i: int) -> None:
            while True:
                p = base.api.props(bkey)
                old = base.api.read_ranged(bkey, 0, etag=p.etag)[0]
                try:
                    base.api.upload(bkey, old + RECORD % (i, i),
                                    if_match=p.etag)
                    return
                except FileExistsError:
                    continue

        app = st.appender("metrics.jsonl")
        app.append_durable(RECORD % (0, 0))  # the log exists from here on
        filler = b"".join(RECORD % (i, i) for i in range(7_000))  # ~1 MB of ~150 B lines

        def batch(i: int) -> None:
            for j in range(args.batch):
                app.append(RECORD % (i, j))
            app.flush()

        print(f"record size {len(RECORD % (0, 0))} B; {args.samples} durable appends and "
              f"{args.samples} batches of {args.batch} lines per size")
        head = (f"{'log size':>9} | {'durable req':>11} {'sent B':>8} {'recv B':>7} {'ms':>6} | "
                f"{'batched req/line':>16} {'sent B/line':>11} {'ms/line':>7} | "
                f"{'rewrite req':>11} {'sent B':>10} {'recv B':>10} {'ms':>6}")
        print(head)
        print("-" * len(head))
        for mb in sizes_mb:
            while st.size("metrics.jsonl") < mb << 20:
                app.append_durable(filler)
            size = st.size("metrics.jsonl")
            base.api.upload(bkey, (filler * (size // len(filler) + 1))[:size])
            w = _measure(proxy, rmw, args.baseline_samples)
            d = _measure(proxy, lambda i: app.append_durable(RECORD % (i, i)), args.samples)
            b = _measure(proxy, batch, args.samples, args.batch)
            print(f"{size / (1 << 20):>6.1f} MB | {d[0]:>11.2f} {d[1]:>8.0f} {d[2]:>7.0f} "
                  f"{d[3]:>6.1f} | {b[0]:>16.3f} {b[1]:>11.1f} {b[3]:>7.3f} | "
                  f"{w[0]:>11.2f} {w[1]:>10.0f} {w[2]:>10.0f} {w[3]:>6.1f}")
        app.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
