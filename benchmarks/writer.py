"""Writer speed against the way training code commonly writes the same files.

Run: ``python benchmarks/writer.py [--dir DIR] [--repeat N]``. Prints, in one run:

1. ``log_metrics`` (20 keys) per record, against ``json.dumps`` + open/append/close per record.
   Target: rlio at least 10x faster.
2. One iteration's rollout summaries (4096 trajectories x 4 steps), atomic replace (temp file,
   fsync, rename) included, against ``json.dumps`` line by line into a file. Target: >= 3x.
3. What ``import rlio`` adds to a bare interpreter (target: <= 30 ms) and whether importing rlio
   or writing a local run imported jsonschema, fsspec or gcsfs (target: none).
4. Where the time goes: the parts of the checked paths (os.write, encoding, schema check, I/O)
   timed alone on the same records (``--no-breakdown`` skips it).

Timings are the median of ``--repeat`` runs, the variants interleaved (best shown too); on a
shared machine they are noisy.
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


def metrics_record(i: int, rng: random.Random, spread: int = 8) -> dict[str, Any]:
    """A realistic metrics line as a training loop logs it (progress, optimizer, env rewards,
    timings): 19 metrics (a 20-key line with its step), or ``11 + spread``."""
    rec: dict[str, Any] = {"progress/batch": i, "progress/done_frac": i / 1e6, "optim/lr": 4e-5,
                           "optim/entropy": rng.random(), "optim/kl_sample_train_v1": rng.random(),
                           "optim/kl_sample_train_v2": rng.random(),
                           "env/all/reward/total": rng.random(), "time/total": 12.5,
                           "time/sample": 9.25, "time/train": 2.5, "time/train:count": 1}
    for k in range(spread):
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


def interleaved(variants: dict[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """Median and best (``<name>_best``) of each variant's returned time, the variants run in
    turn ``repeat`` times so that a slow spell of a shared machine hits them all alike."""
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, run in variants.items():
            runs[name].append(run())
    out = {name: statistics.median(v) for name, v in runs.items()}
    out.update({f"{name}_best": min(v) for name, v in runs.items()})
    return out


def metrics_run(base: str, records: list[dict[str, Any]], *, check: bool) -> Callable[[], float]:
    """A run of ``log_metrics`` over ``records`` in a new run: seconds per record."""
    from rlio import RunWriter

    def run() -> float:
        d = tempfile.mkdtemp(dir=base)
        with RunWriter(d, check=check) as w:
            w.log_metrics(records[0], step=0)  # the file is open and the checker warm
            t0 = time.perf_counter()
            for i in range(1, len(records)):
                w.log_metrics(records[i], step=i)
            dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt / (len(records) - 1)
    return run


def rollouts_run(base: str, records: list[dict[str, Any]], *,
                 check: bool) -> Callable[[], float]:
    """A run of ``write_rollout_summaries`` of ``records`` in a new run: seconds."""
    from rlio import RunWriter

    def run() -> float:
        d = tempfile.mkdtemp(dir=base)
        with RunWriter(d, check=check) as w:
            t0 = time.perf_counter()
            w.write_rollout_summaries(7, records)
            dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt
    return run


def bench_metrics(base: str, repeat: int, n: int) -> dict[str, float]:
    rng = random.Random(0)
    records = [metrics_record(i, rng) for i in range(n)]

    def baseline() -> float:
        d = tempfile.mkdtemp(dir=base)
        path = os.path.join(d, "metrics.jsonl")
        t0 = time.perf_counter()
        for i, rec in enumerate(records):
            line = json.dumps({"step": i, **rec})
            with open(path, "a") as f:
                f.write(line + "\n")
        dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt / n

    return interleaved({"baseline": baseline,
                        "rlio_check=True": metrics_run(base, records, check=True),
                        "rlio_check=False": metrics_run(base, records, check=False)}, repeat)


def bench_rollouts(base: str, repeat: int) -> dict[str, float]:
    records = rollout_records(4096, 4, random.Random(1))

    def baseline() -> float:
        d = tempfile.mkdtemp(dir=base)
        t0 = time.perf_counter()
        with open(os.path.join(d, "train_iteration_000007_rollout_summaries.jsonl"), "w") as f:
            for rec in records:
                f.write(json.dumps(rec) + "\n")
        dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt

    return interleaved({"baseline": baseline,
                        "rlio_check=True": rollouts_run(base, records, check=True),
                        "rlio_check=False": rollouts_run(base, records, check=False)}, repeat)


def breakdown_metrics(base: str, repeat: int, n: int) -> dict[str, float]:
    """Per-record seconds of the parts of a checked ``log_metrics``, each timed alone."""
    import orjson

    from rlio._codec.jsonl import _LINE_OPTS, normalize_value
    from rlio.schema import record_schema

    rng = random.Random(0)
    records = [metrics_record(i, rng) for i in range(n)]
    lines = [orjson.dumps({"step": i, **r}) + b"\n" for i, r in enumerate(records)]
    check = record_schema("metrics-line").passes

    def write() -> float:
        d = tempfile.mkdtemp(dir=base)
        fd = os.open(os.path.join(d, "m.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        t0 = time.perf_counter()
        for line in lines:
            os.write(fd, line)
        dt = time.perf_counter() - t0
        os.close(fd)
        shutil.rmtree(d)
        return dt / n

    def encode() -> float:
        t0 = time.perf_counter()
        for i, rec in enumerate(records):
            orjson.dumps({"step": i, **rec}, normalize_value, _LINE_OPTS)
        return (time.perf_counter() - t0) / n

    def schema() -> float:
        t0 = time.perf_counter()
        for i, rec in enumerate(records):
            check({"step": i, **rec})
        return (time.perf_counter() - t0) / n

    return interleaved({"os.write": write, "encode": encode, "check": schema,
                        "total": metrics_run(base, records, check=True)}, repeat)


def breakdown_rollouts(base: str, repeat: int) -> dict[str, float]:
    """Seconds of the parts of a checked ``write_rollout_summaries``, each timed alone."""
    import orjson

    from rlio._codec.jsonl import _LINE_OPTS, normalize_value
    from rlio.schema import record_schema
    from rlio.storage import LocalStorage

    records = rollout_records(4096, 4, random.Random(1))
    check = record_schema("rollout-summary-line").passes
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)

    def encode() -> float:
        t0 = time.perf_counter()
        buf = bytearray()
        for rec in records:
            buf += orjson.dumps(rec, default=normalize_value, option=_LINE_OPTS)
        return time.perf_counter() - t0

    def schema() -> float:
        t0 = time.perf_counter()
        for rec in records:
            check(rec)
        return time.perf_counter() - t0

    def io() -> float:
        d = tempfile.mkdtemp(dir=base)
        t0 = time.perf_counter()
        LocalStorage(d).replace("r.jsonl", data)
        dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt

    return interleaved({"encode": encode, "schema": schema, "io": io,
                        "total": rollouts_run(base, records, check=True)}, repeat)


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
    parser.add_argument("--no-breakdown", action="store_true", help="skip section 4")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="rlio-bench-", dir=args.dir)
    try:
        m = bench_metrics(base, args.repeat, args.records)
        r = bench_rollouts(base, args.repeat)
        added, cumulative = bench_import(args.repeat)
        after_import, after_write = heavy_imports(base)
        if not args.no_breakdown:
            mb = breakdown_metrics(base, 2 * args.repeat + 1, args.records)
            rb = breakdown_rollouts(base, 2 * args.repeat + 1)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    print(f"writer benchmark (python {sys.version.split()[0]}; median of {args.repeat} "
          "interleaved runs, best in brackets; ratios of medians)")
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
    if not args.no_breakdown:
        us, total = 1e6, mb["total"]
        rest = total - mb["os.write"] - mb["encode"] - mb["check"]
        print("\n4. where the time goes (each part timed alone on the same records, in turn with "
              "the whole call; medians)")
        print(f"   log_metrics, checked, {total * us:.2f} us = os.write {mb['os.write'] * us:.2f}"
              f" + line built and encoded {mb['encode'] * us:.2f}"
              f" + schema check {mb['check'] * us:.2f} + call, lock, rest {rest * us:.2f}")
        print(f"     10x needs <= {m['baseline'] / 10 * us:.2f} us; os.write + encode alone are "
              f"{(mb['os.write'] + mb['encode']) * us:.2f} us")
        ms, total = 1e3, rb["total"]
        rest = total - rb["schema"] - rb["encode"] - rb["io"]
        print(f"   write_rollout_summaries, checked, {total * ms:.2f} ms = schema check "
              f"{rb['schema'] * ms:.2f} + orjson encode {rb['encode'] * ms:.2f} + atomic "
              f"replace with fsync {rb['io'] * ms:.2f} + order, §9 checks, rest {rest * ms:.2f}")
        print(f"     3x needs <= {r['baseline'] / 3 * ms:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
