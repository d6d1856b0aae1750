"""Resume benchmark: rlio's ``read_resume_state`` vs parsing the whole checkpoint ledger.

Builds a run whose ``checkpoints.jsonl`` has 1,000,000 realistic records (~150 bytes: a rolling
checkpoint per iteration with ``state_path`` and ``sampler_path``, a sampler-only save every
tenth) plus a short ``metrics.jsonl``, in a temporary directory. Then, in one run, it times:

* the baseline, the common approach (the cookbook's ``get_last_checkpoint``): read every line,
  ``json.loads`` it, keep the last record with ``state_path``;
* rlio's ``read_resume_state`` (restart point, torn tail, superseded files and metrics range);
* rlio's full ``resume_document`` (adds the 1-based line numbers, which count newlines from the
  start of the files: O(size) at memory speed; reported separately, not hidden);

and the peak memory of rlio's call, both as Python heap (tracemalloc) and as the whole process's
maximum RSS in a fresh interpreter (``ru_maxrss``, interpreter included). Targets: rlio's resume
>= 1000x faster than the baseline and <= 50 MB peak memory.

Usage: ``python benchmarks/resume.py [--lines N] [--repeat R] [--dir D]``. Timings are medians of
``--repeat`` calls on a warm page cache (the baseline: best of two).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any

TARGET_RATIO = 1000.0
TARGET_MB = 50.0


def build_run(run: str, lines: int) -> int:
    """Write the ledger (and a short metrics file); returns the ledger's size in bytes."""
    os.makedirs(run, exist_ok=True)
    run_id = "run-8b1e4d7a"
    path = os.path.join(run, "checkpoints.jsonl")
    with open(path, "wb") as f:
        block = []
        for i in range(lines):
            name = f"{i + 1:06d}"
            if i % 10 == 9:
                rec: dict[str, Any] = {"name": name, "batch": i + 1,
                                       "sampler_path": f"tinker://{run_id}/sampler_weights/{name}"}
            else:
                rec = {"name": name, "batch": i + 1, "epoch": i // 50_000,
                       "state_path": f"tinker://{run_id}/weights/{name}",
                       "sampler_path": f"tinker://{run_id}/sampler_weights/{name}"}
            block.append(json.dumps(rec, separators=(",", ":")))
            if len(block) == 10_000:
                f.write(("\n".join(block) + "\n").encode())
                block = []
        if block:
            f.write(("\n".join(block) + "\n").encode())
    with open(os.path.join(run, "metrics.jsonl"), "wb") as f:
        for step in range(lines - 2_000, lines + 1):
            f.write(json.dumps({"step": step, "progress/batch": step,
                                "env/all/reward/total": 0.5, "optim/lr": 1e-5}).encode() + b"\n")
    return os.path.getsize(path)


def baseline(run: str) -> dict[str, Any] | None:
    """The common approach: parse every line, keep the last one with a state_path."""
    last = None
    with open(os.path.join(run, "checkpoints.jsonl"), encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            if rec.get("state_path") is not None:
                last = rec
    return last


def _median_time(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


_CHILD = """
import resource, sys, time
from rlio.resume import read_resume_state
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
state = read_resume_state(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before, after, state.next_batch)
"""


def main(argv: list[str] | None = None) -> int:
    """Build the run, measure, print the figures; exit 1 when a target is missed."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--dir", default=None, help="where to build the run (default: a temp dir)")
    args = p.parse_args(argv)

    from rlio.resume import read_resume_state, resume_document

    with tempfile.TemporaryDirectory(prefix="rlio-resume-bench-", dir=args.dir) as tmp:
        run = os.path.join(tmp, "run")
        size = build_run(run, args.lines)
        print(f"ledger: {args.lines:,} lines, {size / 1e6:.1f} MB "
              f"({size / args.lines:.0f} B/record)")

        expected = baseline(run)  # also warms the page cache
        t0 = time.perf_counter()
        expected = baseline(run)
        t_base = time.perf_counter() - t0
        state = read_resume_state(run)
        assert state is not None and state.checkpoint == expected, "rlio and baseline disagree"

        t_rlio = _median_time(lambda: read_resume_state(run), args.repeat)
        t_doc = _median_time(lambda: resume_document(read_resume_state(run)),
                             max(3, args.repeat // 20))

        tracemalloc.start()
        read_resume_state(run)
        _, heap_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        tracemalloc.start()
        resume_document(read_resume_state(run))
        _, heap_peak_doc = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        out = subprocess.run([sys.executable, "-c", _CHILD, run], check=True,
                             capture_output=True, text=True).stdout.split()
        rss_before, rss_after = int(out[0]) / 1024, int(out[1]) / 1024  # KiB -> MiB (Linux)

        ratio, ratio_doc = t_base / t_rlio, t_base / t_doc
        mb = heap_peak / 2**20
        print(f"baseline (json.loads every line):      {t_base * 1e3:10.1f} ms")
        print(f"rlio read_resume_state (median of {args.repeat}): {t_rlio * 1e3:8.3f} ms   "
              f"-> {ratio:,.0f}x faster (target >= {TARGET_RATIO:,.0f}x)")
        print(f"rlio resume_document, with line numbers: {t_doc * 1e3:8.1f} ms   "
              f"-> {ratio_doc:,.0f}x faster (O(size) newline count; not the restart path)")
        print(f"peak Python heap of read_resume_state:   {mb:8.3f} MB (target <= {TARGET_MB:.0f})")
        print(f"peak Python heap of resume_document:     {heap_peak_doc / 2**20:8.3f} MB")
        print(f"fresh process max RSS: {rss_before:.1f} MB after import, {rss_after:.1f} MB after "
              f"read_resume_state (interpreter included)")
        ok = ratio >= TARGET_RATIO and mb <= TARGET_MB and rss_after <= TARGET_MB
        print("PASS" if ok else "FAIL: a target is missed")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
