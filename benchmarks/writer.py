"""Writer speed against the way training code commonly writes the same files.

Run: ``python benchmarks/writer.py [--dir DIR] [--repeat N]``. Prints, in one run:

1. ``log_metrics`` (20 keys) per record, against ``json.dumps`` + open/append/close per record.
   Target: rlio at least 10x faster.
2. One iteration's rollout summaries (4096 trajectories x 4 steps), atomic replace (temp file,
   fsync, rename) included, against ``json.dumps`` line by line into a file. Target: >= 3x.
3. What ``import rlio`` adds to a bare interpreter (target: <= 30 ms) and whether importing rlio
   or writing a local run imported jsonschema, fsspec or gcsfs (target: none).

Timings are the median of ``--repeat`` runs (best shown too); on a shared machine they are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

HEAVY = ("jsonschema", "fsspec", "gcsfs")


def metrics_record(i: int, rng: random.Random) -> dict[str, Any]:
    """A realistic 20-key metrics line (step + 19 metrics)."""
    rec: dict[str, Any] = {"progress/batch": i, "progress/done_frac": i / 1e6, "optim/lr": 4e-5,
                           "optim/entropy": rng.random(), "optim/kl_sample_train_v1": rng.random(),
                           "optim/kl_sample_train_v2": rng.random(),
                           "env/all/reward/total": rng.random(), "time/total": 12.5,
                           "time/sample": 9.25, "time/train": 2.5, "time/train:count": 1}
    for k in range(8):
        rec[f"env/all/metric_{k}"] = rng.random()
    return rec


def rollout_records(n: int, steps: int, rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for t in range(n):
        st = [{"step_idx": s, "ob_len": rng.randint(50, 900), "ac_len": rng.randint(5, 400),
               "reward": round(rng.random(), 3), "episode_done": s == steps - 1,
               "metrics": {"format_ok": 1.0, "tool_calls": 1}, "logs": {"tool": "calculator"}}
              for s in range(steps)]
        final = float(rng.random() < 0.5)
        out.append({"schema_version": 1, "split": "train", "iteration": 7,
                    "group_idx": t // 16, "traj_idx": t % 16, "tags": ["math"],
                    "sampling_client_step": 7,
                    "total_reward": sum(s["reward"] for s in st) + final,
                    "final_reward": final,
                    "trajectory_metrics": {"correct": final, "turns": steps},
                    "steps": st, "final_ob_len": rng.randint(100, 2000)})
    return out


def timed(fn: Callable[[], None], repeat: int) -> tuple[float, float]:
    """(median, best) seconds of ``fn`` over ``repeat`` runs."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), min(runs)


def bench_metrics(base: str, repeat: int, n: int) -> dict[str, float]:
    from rlio import RunWriter

    rng = random.Random(0)
    records = [metrics_record(i, rng) for i in range(n)]

    def baseline() -> None:
        d = tempfile.mkdtemp(dir=base)
        path = os.path.join(d, "metrics.jsonl")
        for i, rec in enumerate(records):
            line = json.dumps({"step": i, **rec})
            with open(path, "a") as f:
                f.write(line + "\n")
        shutil.rmtree(d)

    def with_rlio(check: bool) -> Callable[[], None]:
        def run() -> None:
            d = tempfile.mkdtemp(dir=base)
            with RunWriter(d, check=check) as w:
                w.log_metrics(records[0], step=0)  # the lazy open is not per-record cost
                t0 = time.perf_counter()
                for i in range(1, n):
                    w.log_metrics(records[i], step=i)
                inner.append(time.perf_counter() - t0)
            shutil.rmtree(d)
        return run

    med, best = timed(baseline, repeat)
    out = {"baseline": med / n, "baseline_best": best / n}
    for check in (True, False):
        inner: list[float] = []
        timed(with_rlio(check), repeat)
        out[f"rlio_check={check}"] = statistics.median(inner) / (n - 1)
        out[f"rlio_check={check}_best"] = min(inner) / (n - 1)
    return out


def bench_rollouts(base: str, repeat: int) -> dict[str, float]:
    from rlio import RunWriter

    records = rollout_records(4096, 4, random.Random(1))

    def baseline() -> None:
        d = tempfile.mkdtemp(dir=base)
        with open(os.path.join(d, "train_iteration_000007_rollout_summaries.jsonl"), "w") as f:
            for rec in records:
                f.write(json.dumps(rec) + "\n")
        shutil.rmtree(d)

    def with_rlio(check: bool) -> Callable[[], None]:
        def run() -> None:
            d = tempfile.mkdtemp(dir=base)
            with RunWriter(d, check=check) as w:
                t0 = time.perf_counter()
                w.write_rollout_summaries(7, records)
                inner.append(time.perf_counter() - t0)
            shutil.rmtree(d)
        return run

    med, best = timed(baseline, repeat)
    out = {"baseline": med, "baseline_best": best}
    for check in (True, False):
        inner: list[float] = []
        timed(with_rlio(check), repeat)
        out[f"rlio_check={check}"] = statistics.median(inner)
        out[f"rlio_check={check}_best"] = min(inner)
    return out


def bench_import(repeat: int) -> tuple[float, float]:
    """(added wall ms of `import rlio`, cumulative ms -X importtime reports for rlio)."""
    def wall(code: str) -> float:
        runs = []
        for _ in range(repeat * 2):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            runs.append(time.perf_counter() - t0)
        return min(runs)

    added = (wall("import rlio") - wall("pass")) * 1e3
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import rlio"],
                          capture_output=True, text=True, check=True)
    cumulative = [int(line.split("|")[1]) for line in proc.stderr.splitlines()
                  if line.rstrip().endswith("| rlio")]
    return added, (cumulative[0] / 1e3 if cumulative else float("nan"))


def heavy_imports(base: str) -> tuple[list[str], list[str]]:
    """Heavy modules loaded by `import rlio`, and by a local writing session."""
    code = f"""
import json, sys
import rlio
after_import = [m for m in {HEAVY!r} if m in sys.modules]
from rlio.demo import run_demo
run_demo({os.path.join(base, "demo-imports")!r}, iterations=2)
print(json.dumps([after_import, [m for m in {HEAVY!r} if m in sys.modules]]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    a, b = json.loads(proc.stdout)
    return a, b


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", help="where to write (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--records", type=int, default=5000, help="metrics records per run")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="rlio-bench-", dir=args.dir)
    try:
        m = bench_metrics(base, args.repeat, args.records)
        r = bench_rollouts(base, args.repeat)
        added, cumulative = bench_import(args.repeat)
        after_import, after_write = heavy_imports(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print(f"writer benchmark (python {sys.version.split()[0]}; median of {args.repeat} runs, "
          "best in brackets; ratios of medians)")
    print("\n1. log_metrics, 20 keys, per record")
    print(f"   baseline json.dumps + open/append/close : {m['baseline'] * 1e6:8.2f} us "
          f"[{m['baseline_best'] * 1e6:.2f}]")
    for key in ("rlio_check=True", "rlio_check=False"):
        ratio = m["baseline"] / m[key]
        print(f"   RunWriter.log_metrics ({key[5:]:>11}) : {m[key] * 1e6:8.2f} us "
              f"[{m[key + '_best'] * 1e6:.2f}]  {ratio:5.1f}x  target >= 10x  "
              f"{verdict(ratio >= 10)}")
    print("\n2. rollout summaries, 4096 trajectories x 4 steps, one iteration "
          "(rlio: atomic replace with fsync included)")
    print(f"   baseline json.dumps line by line        : {r['baseline'] * 1e3:8.2f} ms "
          f"[{r['baseline_best'] * 1e3:.2f}]")
    for key in ("rlio_check=True", "rlio_check=False"):
        ratio = r["baseline"] / r[key]
        print(f"   write_rollout_summaries ({key[5:]:>11}): {r[key] * 1e3:8.2f} ms "
              f"[{r[key + '_best'] * 1e3:.2f}]  {ratio:5.1f}x  target >= 3x   "
              f"{verdict(ratio >= 3)}")
    print("\n3. import cost and heavy dependencies")
    print(f"   import rlio adds {added:6.1f} ms wall (importtime cumulative {cumulative:.1f} ms)"
          f"  target <= 30 ms  {verdict(added <= 30)}")
    print(f"   heavy modules after import rlio   : {after_import or 'none'}  "
          f"{verdict(not after_import)}")
    print(f"   heavy modules after a local run   : {after_write or 'none'}  "
          f"{verdict(not after_write)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
