"""Fleet validation floors: per-file overhead, start-up, and one large logtree document.

- per file: ``validate_run`` of a run of N iterations x 2 small files (a rollout-summary file
  and a logtree document each) against ``open`` + ``orjson.loads`` of the same files' lines and
  documents (goal: 2x);
- start-up: ``python -m rlio validate`` of a tiny run against ``python -c pass``, whole-process
  wall time with bytecode caches warm (goal: within 50 ms; the row's ratio is rlio / floor);
- one 50 MB logtree JSON: validate CPU time against ``orjson.loads`` with the garbage collector
  off (goal: 1.5x), and the peak memory (maximum resident set) of a fresh process validating
  it against the file size (goal: 3x).

``python benchmarks/fleet.py [--quick]`` prints the rows.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import Row, interleaved, timed

from rlio import layout
from rlio.validate import validate_run

_REPO = Path(__file__).resolve().parents[1]


def _trajectory(iteration: int, group: int) -> dict[str, object]:
    steps = [{"step_idx": i, "ob_len": 100 + i, "ac_len": 20, "reward": 0.25 * (i + 1),
              "episode_done": i == 1, "metrics": {"format": 1.0}, "logs": {"answer": "42"}}
             for i in range(2)]
    return {"schema_version": 1, "split": "train", "iteration": iteration, "group_idx": group,
            "traj_idx": 0, "tags": ["math"], "sampling_client_step": iteration,
            "total_reward": 0.75, "final_reward": 0.0,
            "trajectory_metrics": {"num_turns": 2}, "steps": steps, "final_ob_len": 0}


def _section(k: int) -> dict[str, object]:
    return {"tag": "section", "attrs": {"class": "lt-section"}, "children": [
        {"tag": "h2", "attrs": {}, "children": [f"Group Rollout {k}"]},
        {"tag": "p", "attrs": {}, "children": ["What is 6*7? The answer is 42."]}]}


def _logtree(i: int, nodes: int = 4) -> dict[str, object]:
    return {"title": f"RL Iteration {i}", "started_at": "2025-01-01T00:00:00+00:00",
            "path": layout.iteration_path("flat", i, "html"),
            "root": {"tag": "body", "attrs": {"class": "lt-root"}, "children": [
                {"tag": "h1", "attrs": {"class": "lt-title"}, "children": [f"Iteration {i}"]},
                *(_section(k) for k in range(nodes))]}}


def small_file_run(root: Path, iterations: int) -> Path:
    """A run of ``iterations`` iterations, each a 4-line rollout file and a small logtree."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_bytes(b'{"lr": 0.0001}')
    lines = [orjson.dumps({"step": i, "progress/batch": i, "optim/lr": 1e-5}) + b"\n"
             for i in range(iterations)]
    (root / "metrics.jsonl").write_bytes(b"".join(lines))
    for i in range(iterations):
        recs = b"".join(orjson.dumps(_trajectory(i, g)) + b"\n" for g in range(4))
        (root / layout.iteration_path("flat", i, "rollout_summaries")).write_bytes(recs)
        (root / layout.iteration_path("flat", i, "logtree")).write_bytes(
            orjson.dumps(_logtree(i)))
    return root


def _floor(root: Path) -> None:
    """open + orjson.loads of every line and document of the run's files."""
    loads = orjson.loads
    for name in os.listdir(root):
        with open(root / name, "rb") as f:
            if name.endswith(".jsonl"):
                for line in f:
                    loads(line)
            else:
                loads(f.read())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode cached
    env["PYTHONPATH"] = str(_REPO)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "rlio-bench-pyc")
    return env


def _process(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - start


def _cpu(fn: object) -> float:
    start = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - start


def _no_gc_loads(data: bytes) -> None:
    gc.disable()
    try:
        orjson.loads(data)
    finally:
        gc.enable()


def _turn(k: int) -> dict[str, object]:
    text = f"Problem {k}: " + "Let x be the number of apples; then 6 * 7 = 42. " * 12
    return {"tag": "section", "attrs": {"class": "lt-section"}, "children": [
        {"tag": "h2", "attrs": {}, "children": [f"Group Rollout {k}"]},
        {"tag": "pre", "attrs": {"class": "lt-text"}, "children": [text]}]}


def big_logtree(path: Path, target: int = 50 << 20) -> Path:
    """A logtree document of about ``target`` bytes: sections of rollout text (~700 bytes)."""
    per = len(orjson.dumps(_turn(0)))
    doc = _logtree(0, 0)
    doc["root"]["children"].extend(_turn(k) for k in range(target // per))  # type: ignore[index]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(doc))
    return path


def _peak_rss(run: Path, env: dict[str, str]) -> int:
    code = ("import resource, sys\nfrom rlio.validate import validate_run\n"
            "validate_run(sys.argv[1])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, str(run)], env=env, capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[-1]) * 1024


def rows(quick: bool) -> list[Row]:
    """Per-file, start-up and large-document rows, each against its floor."""
    out: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        n = 200 if quick else 2000
        run = small_file_run(Path(tmp) / "small", n)
        files = 2 * n + 2
        validate_run(run)  # warm: schemas compiled, decoders built
        med = interleaved({"rlio": timed(lambda: validate_run(run)),
                           "floor": timed(lambda: _floor(run))}, 3 if quick else 5)
        out.append(Row(f"validate per file ({n} iterations x 2 small files)",
                       med["rlio"] / files * 1e6, med["floor"] / files * 1e6, "us", 2.0,
                       "open + orjson.loads"))

        tiny = small_file_run(Path(tmp) / "tiny", 2)
        env = _env()
        cmd = [sys.executable, "-m", "rlio", "validate", str(tiny)]
        _process(cmd, env)  # bytecode and schema caches warm
        med = interleaved({"rlio": lambda: _process(cmd, env),
                           "floor": lambda: _process([sys.executable, "-c", "pass"], env)},
                          5 if quick else 15)
        out.append(Row("rlio validate start-up (tiny run)", med["rlio"] * 1e3,
                       med["floor"] * 1e3, "ms", None, "python -c pass"))

        if not quick:
            big = Path(tmp) / "big"
            (big / "metrics.jsonl").parent.mkdir(parents=True)
            (big / "metrics.jsonl").write_bytes(b"")
            doc = big_logtree(big / layout.iteration_path("flat", 0, "logtree"))
            data = doc.read_bytes()
            med = interleaved({"rlio": lambda: _cpu(lambda: validate_run(big)),
                               "floor": lambda: _cpu(lambda: _no_gc_loads(data))}, 3)
            out.append(Row(f"validate one {len(data) >> 20} MB logtree (CPU)", med["rlio"],
                           med["floor"], "s", 1.5, "orjson.loads, GC off"))
            peak = _peak_rss(big, env)
            out.append(Row(f"validate one {len(data) >> 20} MB logtree (peak memory)",
                           peak / 2**20, len(data) / 2**20, "MiB", 3.0, "file size"))
    return out


def main() -> None:
    """Print the rows with their ratios."""
    quick = "--quick" in sys.argv
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for r in rows(quick):
        met = "met" if r.meets_goal else "NOT met"
        goal = "" if r.goal is None else f" (goal {r.goal}x: {met})"
        extra = f", +{r.rlio - r.floor:.0f} {r.unit}" if r.unit == "ms" else ""
        print(f"{r.path}: rlio {r.rlio:.3g} {r.unit} vs {r.floor_name} {r.floor:.3g} {r.unit}"
              f" = {r.ratio:.2f}x{extra}{goal}")


if __name__ == "__main__":
    main()
