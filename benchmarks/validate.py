"""Validator throughput against its floor and its naive baseline.

Builds a run holding one large ``*_rollout_summaries.jsonl`` file (about 200 MB by default) in a
temporary directory, then prints, in one run:

- rlio: ``validate_run`` on the whole run, every check on (default ``jobs``, and ``jobs=1``),
  measured in a fresh subprocess so that its peak RSS is its own;
- the floor: ``orjson.loads`` on every line of the same file and nothing else (one process);
- python-jsonschema line by line (``orjson.loads`` + ``Draft202012Validator.is_valid``), measured
  on a sample of lines and extrapolated (it would take minutes on the whole file);
- the ratios against their targets (rlio >= 0.6x the floor, >= 50x python-jsonschema), for the
  default ``jobs`` and for one process.

Usage: ``python benchmarks/validate.py [--size-mb 200] [--sample 20000] [--repeat 2]``.
Timings on a shared machine are noisy: the load average is printed with the results.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

RUN_FILE = "train_iteration_000007_rollout_summaries.jsonl"
ITERATION = 7

_CHILD = """
import json, resource, sys, time
from rlio.validate import validate_run
jobs = int(sys.argv[2]) if sys.argv[2] != "auto" else None
before = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
report = validate_run(sys.argv[1], jobs=jobs)
wall = time.perf_counter() - t
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "wall": wall,
    "cpu_self": me.ru_utime + me.ru_stime - before.ru_utime - before.ru_stime,
    "cpu_children": kids.ru_utime + kids.ru_stime,
    "counts": report.counts,
    "codes": sorted({f.code for f in report.findings}),
    "rss_self_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "rss_children_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
}))
"""


def trajectory(rnd: random.Random, group: int, traj: int) -> dict[str, Any]:
    """One rollout summary as docs/format.md §6 describes it (cookbook-like: mostly single-turn)."""
    n_steps = rnd.choice((1, 1, 1, 2, 3, 5))
    steps = []
    total = 0.0
    for i in range(n_steps):
        last = i == n_steps - 1
        reward = round(rnd.random(), 4) if last else 0.0
        total += reward
        steps.append({
            "step_idx": i, "ob_len": rnd.randint(50, 3000), "ac_len": rnd.randint(10, 2000),
            "reward": reward, "episode_done": last,
            "metrics": {"format": float(rnd.random() < 0.9), "correct": float(rnd.random() < 0.5)},
            "logs": {"answer": str(rnd.randint(0, 1000))},
        })
    final = 0.0 if rnd.random() < 0.8 else -0.1
    return {
        "schema_version": 1, "split": "train", "iteration": ITERATION, "group_idx": group,
        "traj_idx": traj, "tags": ["math", "gsm8k"], "sampling_client_step": ITERATION,
        "total_reward": total + final, "final_reward": final,
        "trajectory_metrics": {"num_turns": n_steps, "stop": "eos"},
        "steps": steps, "final_ob_len": 0,
    }


def build_run(root: Path, size_mb: float) -> Path:
    """A clean run whose rollout-summary file is about ``size_mb`` MB."""
    rnd = random.Random(0)
    (root / "config.json").write_text(json.dumps({"learning_rate": 1e-5}, indent=2))
    (root / "metrics.jsonl").write_text(json.dumps({"step": ITERATION, "progress/batch": ITERATION})
                                        + "\n")
    path = root / RUN_FILE
    target = int(size_mb * 1e6)
    written = 0
    group = 0
    with path.open("wb") as f:
        while written < target:
            chunk = b"".join(orjson.dumps(trajectory(rnd, group, t)) + b"\n" for t in range(8))
            f.write(chunk)
            written += len(chunk)
            group += 1
    return path


def floor_seconds(path: Path) -> float:
    """Wall time of ``orjson.loads`` on every line, nothing else."""
    loads = orjson.loads
    t = time.perf_counter()
    with path.open("rb", buffering=1 << 20) as f:
        readline = f.readline
        while line := readline(1 << 26):
            loads(line)
    return time.perf_counter() - t


def jsonschema_rate(path: Path, sample: int) -> tuple[float, int, int]:
    """python-jsonschema's MB/s on the first ``sample`` lines: (MB/s, lines, bytes)."""
    import jsonschema

    from rlio.schema import load_schema

    schema = load_schema("rollout-summary-line")
    validator = jsonschema.validators.validator_for(schema)(schema)
    with path.open("rb") as f:
        lines = [f.readline() for _ in range(sample)]
    lines = [ln for ln in lines if ln]
    size = sum(map(len, lines))
    t = time.perf_counter()
    bad = sum(1 for ln in lines if not validator.is_valid(orjson.loads(ln)))
    dt = time.perf_counter() - t
    if bad:
        raise SystemExit(f"benchmark data is invalid: {bad} of {len(lines)} sample lines")
    return size / 1e6 / dt, len(lines), size


def rlio_run(run: Path, jobs: str) -> dict[str, Any]:
    """validate_run in a fresh interpreter: wall time, findings, peak RSS."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(run), jobs], check=True,
                         capture_output=True, text=True)
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def main(argv: list[str] | None = None) -> int:
    """Build the data, measure, print the table and the ratios."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=200.0, help="rollout file size (MB)")
    ap.add_argument("--sample", type=int, default=20_000, help="lines timed for jsonschema")
    ap.add_argument("--repeat", type=int, default=2, help="best of N for rlio and the floor")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rlio-bench-validate-") as tmp:
        run = Path(tmp)
        t = time.perf_counter()
        path = build_run(run, args.size_mb)
        mb = path.stat().st_size / 1e6
        print(f"built {path.name}: {mb:.1f} MB in {time.perf_counter() - t:.1f} s "
              f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f})")
        floor = min(floor_seconds(path) for _ in range(args.repeat))
        runs = {}
        for jobs in ("auto", "1"):
            best = None
            for _ in range(args.repeat):
                r = rlio_run(run, jobs)
                if best is None or r["wall"] < best["wall"]:
                    best = r
            runs[jobs] = best
        js_rate, js_lines, js_bytes = jsonschema_rate(path, args.sample)
        floor_rate = mb / floor
        print(f"{'':32} {'MB/s':>8} {'seconds':>8}")
        print(f"{'orjson.loads per line (floor)':32} {floor_rate:8.1f} {floor:8.2f}")
        for jobs, r in runs.items():
            label = f"rlio validate_run (jobs={jobs})"
            print(f"{label:32} {mb / r['wall']:8.1f} {r['wall']:8.2f}   findings {r['counts']} "
                  f"codes {r['codes']}  peak RSS {r['rss_self_kb'] / 1024:.0f} MiB "
                  f"(+ helper {r['rss_children_kb'] / 1024:.0f} MiB)")
        print(f"{'python-jsonschema per line':32} {js_rate:8.1f} {mb / js_rate:8.1f}   "
              f"(extrapolated from the first {js_lines} lines, {js_bytes / 1e6:.1f} MB)")
        auto = runs["auto"]
        if auto["cpu_children"] > 0:
            # with a core free for each process the wall time is the longer of the two
            est = max(auto["cpu_self"], auto["cpu_children"])
            print(f"{'rlio, 2 idle cores (estimate)':32} {mb / est:8.1f} {est:8.2f}   = max(CPU "
                  f"of this process {auto['cpu_self']:.2f} s, of the helper "
                  f"{auto['cpu_children']:.2f} s); measured wall above")
        for jobs, r in runs.items():
            rate = mb / r["wall"]
            f_ok = "ok" if rate / floor_rate >= 0.6 else "BELOW TARGET"
            j_ok = "ok" if rate / js_rate >= 50 else "BELOW TARGET"
            print(f"jobs={jobs:4} ratio to the floor: {rate / floor_rate:5.2f}x (target >= 0.6x: "
                  f"{f_ok});  to python-jsonschema: {rate / js_rate:6.1f}x (target >= 50x: "
                  f"{j_ok})")
        print(f"memory: peak RSS {runs['1']['rss_self_kb'] / 1024:.0f} MiB (one process) for a "
              f"{mb:.0f} MB file; load average now {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
