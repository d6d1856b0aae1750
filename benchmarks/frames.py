"""``Run.metrics_frame()`` (polars, pandas) against the parse floor, and its peak memory.

The file: ``LINES`` metrics lines of 41 keys, 20 of which appear only from line ``LATE`` on (a
reader that infers columns from a prefix misses them). The time floor is one ``orjson.loads``
per line (read in 1 MiB blocks); the frames are interleaved with it in rounds (goals: polars
1.5x, pandas 2.5x). A reference row times ``polars.read_ndjson`` with its default inference
(it drops the late keys). The frames' CPU time (all threads) against the floor's is printed
too: the readers parse on two threads and the floor on one, so the time ratio holds only while
the machine has a core to spare, and the CPU ratio is what it becomes when it has none. Memory:
the high-water mark of a fresh process building each frame against one running
``polars.read_ndjson`` on the same file (goal: 1.3x). Rollout rows: one iteration's rollout
summaries (``GROUPS`` groups x 4 trajectories, 1-5 steps each) as the
trajectory frame and the step frame, against ``orjson.loads`` per line (no goal of their own:
the issue's goals name the metrics file).

Usage: ``python benchmarks/frames.py [--quick]``; ``benchmarks/run_all.py`` prints its rows.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Row, interleaved, timed

LINES = 300_000
QUICK_LINES = 60_000
GROUPS = 4096
QUICK_GROUPS = 1024
#: The share of the file before the late keys first appear (line 200,000 of 300,000).
LATE_SHARE = 2 / 3
_REPO = Path(__file__).resolve().parents[1]


def build_metrics(path: Path, lines: int) -> None:
    """``lines`` metrics lines: 21 keys throughout, 20 more from line ``LATE_SHARE * lines``."""
    rng = random.Random(3)
    early = ["optim/entropy", "optim/kl_v1", "optim/kl_v2", "env/reward/total", "time/total",
             "time/sample", "time/train"] + [f"env/all/metric_{k}" for k in range(9)]
    late = [f"eval/metric_{k}" for k in range(20)]
    late_from = int(lines * LATE_SHARE)
    with path.open("w") as f:
        block = []
        for i in range(lines):
            cells = [f'"step":{i}', f'"progress/batch":{i}', f'"progress/done_frac":{i / lines!r}',
                     '"optim/lr":4e-05', '"time/train:count":1']
            cells += [f'"{k}":{rng.random()!r}' for k in early]
            if i >= late_from:
                cells += [f'"{k}":{rng.random()!r}' for k in late]
            block.append("{" + ",".join(cells) + "}\n")
            if len(block) == 20_000:
                f.write("".join(block))
                block = []
        f.write("".join(block))


def build_rollouts(path: Path, groups: int) -> None:
    """``groups`` x 4 rollout summaries of iteration 0 (cookbook-like, mostly single-turn)."""
    import orjson

    rnd = random.Random(5)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for g in range(groups):
            for t in range(4):
                n = rnd.choice((1, 1, 2, 3, 5))
                steps = [{"step_idx": i, "ob_len": rnd.randint(50, 3000),
                          "ac_len": rnd.randint(10, 2000), "reward": 0.0 if i < n - 1 else 1.0,
                          "episode_done": i == n - 1,
                          "metrics": {"format": 1.0, "correct": float(rnd.random() < 0.5)},
                          "logs": {"answer": str(rnd.randint(0, 1000))}} for i in range(n)]
                f.write(orjson.dumps({
                    "schema_version": 1, "split": "train", "iteration": 0, "group_idx": g,
                    "traj_idx": t, "tags": ["math"], "sampling_client_step": 0,
                    "total_reward": 1.0, "final_reward": 0.0,
                    "trajectory_metrics": {"num_turns": n, "stop": "eos"}, "steps": steps,
                    "final_ob_len": 0}) + b"\n")


def _parse_floor(path: Path) -> None:
    import orjson

    loads = orjson.loads
    rest = b""
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                loads(line)


_WORK = {
    "polars": "from rlio.reader import open_run\nopen_run(sys.argv[1]).metrics_frame('polars')",
    "pandas": "from rlio.reader import open_run\nopen_run(sys.argv[1]).metrics_frame('pandas')",
    "floor": "import polars\npolars.read_ndjson(sys.argv[1] + '/metrics.jsonl')",
}


def peak_rss(run: Path, work: str) -> int:
    """The high-water mark (``VmHWM``: the process's own, not its parent's) of a fresh process
    doing ``_WORK[work]`` on ``run``, in bytes."""
    code = (f"import sys\n{_WORK[work]}\n"
            "print([x.split()[1] for x in open('/proc/self/status') if x[:6] == 'VmHWM:'][0])")
    env = dict(os.environ, PYTHONPATH=str(_REPO))
    out = subprocess.run([sys.executable, "-c", code, str(run)], env=env, capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[-1]) * 1024


def cpu_timed(fn: Callable[[], object], cpu: list[float]) -> Callable[[], float]:
    """``harness.timed``, also appending the call's CPU time (every thread's) to ``cpu``."""

    def run() -> float:
        start, used = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - used)
        return time.perf_counter() - start

    return run


def rows(quick: bool) -> list[Row]:
    """Per-line time of both frames against the parse floor; their peak memory."""
    import polars as pl

    from rlio.reader import open_run

    n = QUICK_LINES if quick else LINES
    rounds = 3 if quick else 5
    with tempfile.TemporaryDirectory(prefix="rlio-frames-") as tmp:
        run = Path(tmp)
        path = run / "metrics.jsonl"
        build_metrics(path, n)
        (run / "config.json").write_text("{}\n")
        reader = open_run(run)
        assert reader.metrics_frame("polars").width == 41
        cpu: dict[str, list[float]] = {"floor": [], "polars": [], "pandas": []}
        med = interleaved({
            "floor": cpu_timed(lambda: _parse_floor(path), cpu["floor"]),
            "polars": cpu_timed(lambda: reader.metrics_frame("polars"), cpu["polars"]),
            "pandas": cpu_timed(lambda: reader.metrics_frame("pandas"), cpu["pandas"]),
            "read_ndjson": timed(lambda: pl.read_ndjson(path)),
        }, rounds)
        per = 1e6 / n
        floor = med["floor"] * per
        cpu_med = {name: statistics.median(times) * per for name, times in cpu.items()}
        out = [
            Row(f"metrics_frame polars, {n:,} lines x 41 keys (20 late)", med["polars"] * per,
                floor, "us/line", 1.5, "orjson.loads every line"),
            Row(f"metrics_frame pandas, {n:,} lines x 41 keys (20 late)", med["pandas"] * per,
                floor, "us/line", 2.5, "orjson.loads every line"),
            Row("  polars.read_ndjson, default inference (21 of 41 keys)",
                med["read_ndjson"] * per, floor, "us/line", None, "orjson.loads every line"),
            *(Row(f"  metrics_frame {backend}, CPU time (all threads)", cpu_med[backend],
                  cpu_med["floor"], "us/line", None, "orjson.loads CPU time")
              for backend in ("polars", "pandas")),
        ]
        out += _rollout_rows(run, QUICK_GROUPS if quick else GROUPS, rounds)
        mib = 2**20
        base = peak_rss(run, "floor") / mib
        for backend in ("polars", "pandas"):
            out.append(Row(f"metrics_frame {backend} peak RSS", peak_rss(run, backend) / mib,
                           base, "MiB", 1.3, "polars.read_ndjson peak RSS"))
        return out


def _rollout_rows(run: Path, groups: int, rounds: int) -> list[Row]:
    from rlio import layout
    from rlio.reader import open_run

    path = run / layout.iteration_path("flat", 0, "rollout_summaries")
    build_rollouts(path, groups)
    reader = open_run(run)
    med = interleaved({
        "floor": timed(lambda: _parse_floor(path)),
        "traj": timed(lambda: reader.rollouts_frame(backend="polars")),
        "steps": timed(lambda: reader.rollouts_frame(steps=True, backend="polars")),
        "traj_pd": timed(lambda: reader.rollouts_frame()),
    }, rounds)
    per = 1e6 / (groups * 4)
    floor = med["floor"] * per
    return [Row(f"rollouts_frame polars, {groups}x4 trajectories", med["traj"] * per, floor,
                "us/line", None, "orjson.loads every line"),
            Row("rollouts_frame polars, steps=True", med["steps"] * per, floor, "us/line", None,
                "orjson.loads every line"),
            Row("rollouts_frame pandas", med["traj_pd"] * per, floor, "us/line", None,
                "orjson.loads every line")]


def main(argv: list[str] | None = None) -> int:
    """Print this module's rows."""
    from run_all import module_main

    return module_main(rows, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
