"""Sweep scale: ``rlio compare`` and ``rlio query`` over 200 runs x 2,000 metrics lines.

Builds a sweep of ``--runs`` runs (default 200), each with ``--lines`` metrics lines (default
2,000; 24 keys a line, cookbook-style, with cumulative tokens, cost and time), a config that
differs in two keys, checkpoints, and 10 iterations of rollout summaries (16 trajectories of 2
steps each); then runs, each in a fresh process as a user would: ``rlio compare SWEEP`` (x by
step, then by cost) and ``rlio query`` (a grouped metrics query and a rollouts join). Each row
prints the wall time and the peak memory of the whole process tree (the command and its worker
processes, summed, sampled every 20 ms from /proc). Goal (issue 27): within 15 s and under
1 GiB on 2 cores.

``python benchmarks/sweep.py [--runs N] [--lines N] [--jobs N]`` prints the rows.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

_REPO = Path(__file__).resolve().parents[1]
_ITERATIONS_WITH_ROLLOUTS = 10


def _metrics_line(i: int, n: int, rng: random.Random, lr: float) -> dict[str, object]:
    r = min(1.0, 0.2 + 0.6 * i / n + rng.uniform(-0.05, 0.05))
    return {"step": i, "progress/batch": i, "progress/done_frac": (i + 1) / n, "optim/lr": lr,
            "env/all/reward/total": r, "env/all/reward/final": r, "env/all/correct": r,
            "env/all/turns_per_episode": 2.0, "env/all/ac_tokens_per_turn": 40.0,
            "env/all/ob_tokens_per_turn": 90.0, "optim/entropy": 1.2 - 0.3 * i / n,
            "optim/kl_sample_train_v1": rng.uniform(0.001, 0.004),
            "optim/kl_sample_train_v2": rng.uniform(0.001, 0.004),
            "train/loss": 1.0 - r, "tokens/sampled": 4000, "tokens/trained": 4000,
            "tokens/cumulative/sampled": 4000 * (i + 1),
            "tokens/cumulative/trained": 4000 * (i + 1),
            "cost/step_usd": 0.01, "cost/cumulative_usd": 0.01 * (i + 1),
            "time/sample": 8.0, "time/train": 2.0, "time/total": 10.0 + rng.random()}


def _trajectory(it: int, g: int, rng: random.Random) -> dict[str, object]:
    steps = [{"step_idx": s, "ob_len": 90, "ac_len": 40, "reward": 0.0, "episode_done": s == 1,
              "metrics": {"tool_calls": 1}, "logs": {}} for s in range(2)]
    final = float(rng.random() < 0.5)
    return {"schema_version": 1, "split": "train", "iteration": it, "group_idx": g // 4,
            "traj_idx": g % 4, "tags": ["bench"], "sampling_client_step": it,
            "total_reward": final, "final_reward": final, "trajectory_metrics": {"turns": 2},
            "steps": steps, "final_ob_len": 170}


def build(root: Path, runs: int, lines: int) -> Path:
    """Write the sweep under ``root/sweep``."""
    sweep = root / "sweep"
    for k in range(runs):
        run = sweep / f"lr-{k % 4}" / f"seed{k}"
        run.mkdir(parents=True)
        rng = random.Random(k)
        lr = [1e-5, 2e-5, 4e-5, 8e-5][k % 4]
        (run / "config.json").write_bytes(orjson.dumps(
            {"learning_rate": lr, "seed": k, "model_name": "bench/8b",
             "sampling": {"temperature": 1.0, "max_tokens": 512}}))
        (run / "metrics.jsonl").write_bytes(b"".join(
            orjson.dumps(_metrics_line(i, lines, rng, lr)) + b"\n" for i in range(lines)))
        (run / "checkpoints.jsonl").write_bytes(b"".join(
            orjson.dumps({"name": f"{b:06d}", "batch": b, "state_path": f"tinker://x/{b}"})
            + b"\n" for b in range(100, lines + 1, 100)))
        for it in range(0, lines, lines // _ITERATIONS_WITH_ROLLOUTS):
            (run / f"train_iteration_{it:06d}_rollout_summaries.jsonl").write_bytes(b"".join(
                orjson.dumps(_trajectory(it, g, rng)) + b"\n" for g in range(16)))
    return sweep


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and every descendant (0 once gone)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def measure(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak tree memory of one ``python -m rlio ...`` process."""
    env = {**os.environ, "PYTHONPATH": str(_REPO)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "rlio", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.02)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    _, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"rlio {' '.join(argv)} failed ({proc.returncode}): {err.decode()}")
    return wall, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    jobs = [] if args.jobs is None else ["--jobs", str(args.jobs)]
    with tempfile.TemporaryDirectory(prefix="rlio-sweep-bench-") as tmp:
        t0 = time.perf_counter()
        sweep = build(Path(tmp), args.runs, args.lines)
        print(f"built {args.runs} runs x {args.lines} metrics lines in "
              f"{time.perf_counter() - t0:.1f} s")
        out = str(Path(tmp) / "compare.html")
        rows = [
            ("compare (x step)", ["compare", str(sweep), "-o", out, *jobs]),
            ("compare (x cost)", ["compare", str(sweep), "-o", out, "--x", "cost", *jobs]),
            ("query metrics group by run",
             ["query", 'SELECT run, max("env/all/reward/total") AS best, count(*) AS n FROM '
              "metrics GROUP BY run ORDER BY best DESC LIMIT 5", str(sweep), *jobs]),
            ("query rollouts join configs",
             ["query", "SELECT c.value AS lr, avg(r.final_reward) AS reward FROM rollouts r "
              "JOIN configs c ON c.run = r.run AND c.key = 'learning_rate' GROUP BY lr",
              str(sweep), *jobs]),
        ]
        for name, argv in rows:
            wall, peak = measure(argv)
            verdict = "ok" if wall <= 15 and peak < 2**30 else "OVER GOAL"
            print(f"{name:32s} {wall:6.2f} s  peak {peak / 2**20:7.1f} MiB  "
                  f"(goal 15 s, 1024 MiB: {verdict})")
        print(f"page size {os.path.getsize(out) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
