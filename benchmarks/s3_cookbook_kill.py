"""Acknowledged records lost when a writer on s3:// is SIGKILLed: the cookbook's backend vs rlio.

Starts the S3 emulator of the test suite (moto behind the precondition-enforcing layer) on a free
loopback port. Each trial starts one training-loop process per writer, SIGKILLs it once it has
acknowledged ``--steps`` metrics lines, and counts the acknowledged records missing from the
bucket afterwards:

- cookbook: tinker-cookbook's ``TrainingRunStore(storage_from_uri("s3://..."))`` (its fsspec
  backend over s3fs), ``write_metrics`` per step and ``write_checkpoint`` every 5 steps, as its
  training loops write them. Acknowledged: the call returned. Its backend stages appends in a
  local folder and uploads them on ``flush()``/``close()``, which a killed process never reaches.
- rlio: ``RunWriter("s3://...")``, ``log_metrics`` per step and ``record_checkpoint`` every 5
  steps. ``record_*`` is durable when it returns; ``log_*`` lines are committed within about a
  second (docs/format.md §1), so the last second of metrics lines may be lost, never a
  checkpoint record.

The cookbook runs in its own interpreter (``--cookbook-python``: one with tinker-cookbook 0.6.1
and s3fs installed; s3fs pins an older botocore than rlio's boto3, so it cannot share rlio's
environment). Both read the standard AWS variables pointing at the emulator.

Run: ``.venv/bin/python benchmarks/s3_cookbook_kill.py --cookbook-python /path/to/python``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

COOKBOOK = r"""
import sys
import time
from tinker_cookbook.stores import TrainingRunStore, storage_from_uri

store = TrainingRunStore(storage_from_uri(sys.argv[1]))
store.write_config({"lr": 1e-4})
i = 0
while True:
    store.write_metrics({"progress/batch": i, "env/all/reward/total": 0.5}, step=i)
    print("m", i, flush=True)
    time.sleep(float(sys.argv[2]))  # the step's work
    if i % 5 == 4:
        store.write_checkpoint({"name": f"{i + 1:06d}", "batch": i + 1,
                                "state_path": f"tinker://run/{i + 1}"})
        print("c", i + 1, flush=True)
    i += 1
"""

RLIO = r"""
import sys
import time
from rlio import RunWriter

with RunWriter(sys.argv[1]) as run:
    run.write_config({"lr": 1e-4})
    i = 0
    while True:
        run.log_metrics({"progress/batch": i, "env/all/reward/total": 0.5}, step=i)
        print("m", i, flush=True)
        time.sleep(float(sys.argv[2]))  # the step's work
        if i % 5 == 4:
            run.record_checkpoint(f"{i + 1:06d}", batch=i + 1,
                                  state_path=f"tinker://run/{i + 1}")
            print("c", i + 1, flush=True)
        i += 1
"""


def _emulator_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "s3_emulator", ROOT / "tests" / "storage" / "s3_emulator.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _kill_after(cmd: list[str], steps: int) -> tuple[set[int], set[int]]:
    """Run ``cmd`` until it acknowledged ``steps`` metrics lines, SIGKILL it; what it acked."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    metrics: set[int] = set()
    checkpoints: set[int] = set()
    for line in proc.stdout:
        kind, n = line.split()
        (metrics if kind == "m" else checkpoints).add(int(n))
        if len(metrics) >= steps:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    if len(metrics) < steps:
        raise RuntimeError(f"{cmd[0]} stopped early: {err[-2000:]}")
    return metrics, checkpoints


def _stored(s3: Any, bucket: str, key: str, field: str) -> set[int]:
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return set()
    return {json.loads(line)[field] for line in body.splitlines() if line.strip()}


def main(argv: list[str] | None = None) -> int:
    """Print acknowledged and lost records per writer, summed over the trials."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cookbook-python", required=True,
                   help="an interpreter with tinker-cookbook 0.6.1 and s3fs")
    p.add_argument("--steps", type=int, default=40, help="metrics lines acknowledged per kill")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--step-seconds", type=float, default=0.1,
                   help="work per training step (rlio commits log_* lines about every second)")
    args = p.parse_args(argv)
    mod = _emulator_module()
    bucket = "rlio-kill"
    with mod.serving(bucket):
        import boto3

        s3 = boto3.client("s3")
        os.environ["PYTHONPATH"] = str(ROOT)
        totals = {w: [0, 0, 0, 0] for w in ("cookbook", "rlio")}
        for _ in range(args.trials):
            for writer, cmd in (("cookbook", [args.cookbook_python, "-c", COOKBOOK]),
                                ("rlio", [sys.executable, "-c", RLIO])):
                prefix = f"{writer}-{uuid.uuid4().hex[:8]}"
                acked_m, acked_c = _kill_after(
                    [*cmd, f"s3://{bucket}/{prefix}", str(args.step_seconds)], args.steps)
                got_m = _stored(s3, bucket, f"{prefix}/metrics.jsonl", "step")
                got_c = _stored(s3, bucket, f"{prefix}/checkpoints.jsonl", "batch")
                t = totals[writer]
                t[0] += len(acked_m)
                t[1] += len(acked_m - got_m)
                t[2] += len(acked_c)
                t[3] += len(acked_c - got_c)
        print(f"SIGKILL after {args.steps} acknowledged metrics lines ({args.step_seconds} s "
              f"per step), {args.trials} trials each, moto on loopback")
        head = (f"{'writer':>9} | {'metrics acked':>13} {'lost':>6} | "
                f"{'checkpoints acked':>17} {'lost':>6}")
        print(head)
        print("-" * len(head))
        for writer, (am, lm, ac, lc) in totals.items():
            print(f"{writer:>9} | {am:>13} {lm:>6} | {ac:>17} {lc:>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
