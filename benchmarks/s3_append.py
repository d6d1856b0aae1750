"""Cost of one append to an s3:// log as the log grows from 0 to 50 MB: rlio vs a rewrite.

Starts the S3 emulator of the test suite (moto behind the precondition-enforcing layer,
``tests/storage/s3_emulator.py``) on a free loopback port, then, at each file size:

- rlio: ``append_durable`` of one ~150 B metrics line (one commit each: below 5 MiB one
  PutObject of the whole log with ``If-Match``; from 5 MiB a multipart upload whose first part is
  an UploadPartCopy of the log itself and whose last part is the line, completed with
  ``If-Match``), through ``rlio.storage``; and, for scale, ordinary batched ``append`` calls (one
  commit per batch) counted per line;
- baseline: read-modify-write of the whole object with ``If-Match`` (HEAD, GET, conditional
  PutObject), the cheapest safe way without multipart copies.

Requests and bytes are counted by the emulator: ``sent`` is what the client sent (request line,
headers, body), ``recv`` the body bytes it got back. The log grows between measurements by large
batched appends. Flat rlio columns past 5 MiB are the goal (below it the log is re-sent whole, at
most 5 MiB per commit). Times are wall-clock against a local emulator on a shared machine:
indicative only (moto copies parts in Python, so its copy time grows with the log; S3 copies
server-side).

Run: ``.venv/bin/python benchmarks/s3_append.py [--max-mb 50] [--samples 20]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORD = (b'{"step": %06d, "progress/batch": %06d, "env/all/reward/total": 0.4375, '
          b'"optim/lr": 0.0001, "time/total": 12.5, "pad": "xxxxxxxxxxxxxxxx"}\n')


def _emulator_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "s3_emulator", ROOT / "tests" / "storage" / "s3_emulator.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _totals(stats: dict[str, dict[str, int]]) -> tuple[int, int, int]:
    return (sum(s["requests"] for s in stats.values()),
            sum(s["bytes"] for s in stats.values()),
            sum(s.get("bytes_out", 0) for s in stats.values()))


def _measure(emu: Any, fn: Any, n: int) -> tuple[float, float, float, float]:
    """Per call: requests, bytes sent, bytes received, milliseconds (mean over ``n`` calls)."""
    emu.stats(reset=True)
    t0 = time.perf_counter()
    for i in range(n):
        fn(i)
    ms = (time.perf_counter() - t0) * 1000 / n
    req, sent, recv = _totals(emu.stats())
    return req / n, sent / n, recv / n, ms


def _fmt_bytes(n: float) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def main(argv: list[str] | None = None) -> int:
    """Print one table: per-append cost at each log size, rlio next to the rewrite baseline."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-mb", type=int, default=50)
    p.add_argument("--samples", type=int, default=20, help="durable appends measured per size")
    p.add_argument("--baseline-samples", type=int, default=3)
    args = p.parse_args(argv)
    sizes_mb = [s for s in (0, 1, 4, 6, 10, 25, 50) if s <= args.max_mb]
    mod = _emulator_module()
    with mod.Emulator(bucket="rlio-bench") as emu:
        os.environ.update(emu.env)
        sys.path.insert(0, str(ROOT))
        from rlio.storage import open_storage
        from rlio.storage.s3.storage import S3Storage

        st = open_storage("s3://rlio-bench/rlio", create=True)
        base = open_storage("s3://rlio-bench/baseline", create=True)
        assert isinstance(st, S3Storage) and isinstance(base, S3Storage)
        app = st.appender("metrics.jsonl")
        bkey = base.key("metrics.jsonl")
        filler = b"".join(RECORD % (i, i) for i in range(7_000))  # ~1 MB of ~150 B lines

        def rmw(i: int) -> None:
            while True:
                info = base.api.head(bkey)
                old = base.api.read(bkey, 0, info.size, if_match=info.etag) if info else b""
                try:
                    base.api.put(bkey, old + RECORD % (i, i),
                                 if_match=info.etag if info else None, create_only=not info)
                    return
                except FileExistsError:
                    continue

        print(f"record size {len(RECORD % (0, 0))} B; rlio: {args.samples} durable appends per "
              f"size; baseline: {args.baseline_samples} read-modify-writes per size")
        head = (f"{'log size':>9} | {'rlio req':>8} {'sent':>9} {'recv':>9} {'ms':>6} | "
                f"{'batched req/line':>16} {'sent/line':>9} | {'rewrite req':>11} "
                f"{'sent':>9} {'recv':>9} {'ms':>7}")
        print(head)
        print("-" * len(head))
        st.replace("config.json", b"{}")  # the run exists from here on
        for mb in sizes_mb:
            while mb and st.size("metrics.jsonl") < mb << 20:
                app.append_durable(filler)
            size = st.size("metrics.jsonl") if mb else 0
            if mb:  # the baseline's object starts at the same size
                base.api.put(bkey, (filler * (size // len(filler) + 1))[:size])
            w = _measure(emu, rmw, args.baseline_samples)
            r = _measure(emu, lambda i: app.append_durable(RECORD % (i, i)), args.samples)
            n_lines = 2000

            def batched(_: int, n: int = n_lines) -> None:
                for j in range(n):
                    app.append(RECORD % (j, j))
                app.flush()

            b = _measure(emu, batched, 1)
            print(f"{_fmt_bytes(size):>9} | {r[0]:>8.2f} {_fmt_bytes(r[1]):>9} "
                  f"{_fmt_bytes(r[2]):>9} {r[3]:>6.1f} | {b[0] / n_lines:>16.4f} "
                  f"{_fmt_bytes(b[1] / n_lines):>9} | {w[0]:>11.2f} {_fmt_bytes(w[1]):>9} "
                  f"{_fmt_bytes(w[2]):>9} {w[3]:>7.1f}")
        app.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
