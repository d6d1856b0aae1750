"""Fleet validation floors: per-file overhead, start-up, and one large logtree document.

- per file: ``validate_run`` of a run of N iterations x 2 small files (a rollout-summary file
  and a logtree document each) against ``open`` + ``orjson.loads`` of the same files' lines and
  documents (goal: 2x);
- start-up: ``python -m rlio validate`` of a tiny run against ``python -c pass``, whole-process
  wall time with bytecode caches warm (goal: within 100 ms; the row's ratio is rlio / floor); the
  same through the console script's entry point (what users run), and ``python -c "import
  orjson"`` for the share of the one dependency a start pays most for;
- one 50 MB logtree JSON (``rlio demo``'s iteration logtree scaled up): validate CPU time
  against ``orjson.loads`` with the garbage collector off, the parsed value freed (goal: 1.5x),
  and the peak memory (maximum resident set, interpreter and the file's bytes included) of a
  fresh process validating it against the file size (goal: 3x); for reference, the same of a
  process that only loads it with orjson;
- one rollout-summary file of 4096 trajectories x 4 steps: ``validate_run`` of a run holding
  it against ``orjson.loads`` of its lines (goal: 2.5x);
- under the per-file and the large-logtree CPU rows, their pure-Python floor (no goal): the
  row's floor plus one type test per parsed value (``harness.touch``), the least any check of
  every value costs; its ratio is how much of the goal that alone takes.

``python benchmarks/fleet.py [--quick]`` prints the rows.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import Row, interleaved, timed, touch
from writer import rollout_records

from rlio import layout
from rlio.validate import validate_run

_REPO = Path(__file__).resolve().parents[1]
#: What the ``rlio`` console script (the venv's ``bin/rlio``) runs.
_ENTRY_POINT = "import re, sys; from rlio.cli import main; sys.exit(main())"


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


def _floor(root: Path, visit: object = None) -> None:
    """open + orjson.loads of every line and document of the run's files (each parsed value
    handed to ``visit`` when given: ``harness.touch`` for the pure-Python floor)."""
    loads = orjson.loads
    for name in os.listdir(root):
        with open(root / name, "rb") as f:
            if name.endswith(".jsonl"):
                for line in f:
                    doc = loads(line)
                    if visit is not None:
                        visit(doc)  # type: ignore[operator]
            else:
                doc = loads(f.read())
                if visit is not None:
                    visit(doc)  # type: ignore[operator]


def _lines_floor(path: Path) -> None:
    loads = orjson.loads
    with open(path, "rb") as f:
        for line in f:
            loads(line)


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


def _no_gc_loads(data: bytes, visit: object = None) -> None:
    gc.disable()
    try:
        doc = orjson.loads(data)
        if visit is not None:
            visit(doc)  # type: ignore[operator]
    finally:
        gc.enable()


def big_logtree(path: Path, target: int = 50 << 20) -> Path:
    """A logtree document of about ``target`` bytes, as ``rlio demo`` writes one, scaled up.

    Built with ``rlio.logtree.LogTree`` and the demo's cookbook-shaped groups (Group Rollout >
    Trajectory Details > ... > Turn n: sections, text, conversations with thinking and tool
    calls, stat tables), 128 distinct groups repeated until the size is reached; written
    compact, as the writer does.
    """
    from rlio.demo import _episode, _log_group
    from rlio.logtree import LogTree

    rng = random.Random(0)
    lt = LogTree("RL Iteration 0", started_at=datetime(2025, 1, 1, tzinfo=UTC))
    for g in range(128):
        _log_group(lt, g, [_episode(rng, 0.6, 3) for _ in range(4)])
    twin = layout.iteration_path("flat", 0, "html")
    head = len(lt.to_json_bytes(path=twin, compact=True))
    children = lt.root["children"]
    groups = children[2:]
    per = head / len(groups)
    children.extend(groups[k % len(groups)] for k in range(int(target / per) - len(groups)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(lt.to_json_bytes(path=twin, compact=True))
    return path


def _peak_rss(run: Path, env: dict[str, str], floor: bool = False) -> int:
    """The maximum resident set of a fresh process validating ``run`` (interpreter, imports
    and the document's bytes included), or with ``floor``, of one loading the document with
    orjson (GC off).

    Read from ``VmHWM`` (the high-water mark of the process's own address space), not
    ``ru_maxrss``: Linux carries the parent's peak across fork and exec into the child's
    ``ru_maxrss``, so a child of this (large) process would report the parent's size.
    """
    work = ("validate_run(sys.argv[1])" if not floor else
            "import gc, orjson\ngc.disable()\ndoc = orjson.loads(open(sys.argv[2], 'rb').read())")
    code = (f"import sys\nfrom rlio.validate import validate_run\n{work}\n"
            "print([x.split()[1] for x in open('/proc/self/status') if x[:6] == 'VmHWM:'][0])")
    doc = next(run.glob("*_logtree.json"))
    out = subprocess.run([sys.executable, "-c", code, str(run), str(doc)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[-1]) * 1024  # kB


def rows(quick: bool) -> list[Row]:
    """Per-file, start-up and large-document rows, each against its floor."""
    out: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        n = 200 if quick else 2000
        run = small_file_run(Path(tmp) / "small", n)
        files = 2 * n + 2
        validate_run(run)  # warm: schemas loaded and their checkers compiled
        med = interleaved({"rlio": timed(lambda: validate_run(run)),
                           "floor": timed(lambda: _floor(run)),
                           "touch": timed(lambda: _floor(run, touch))}, 3 if quick else 5)
        out.append(Row(f"validate per file ({n} iterations x 2 small files)",
                       med["rlio"] / files * 1e6, med["floor"] / files * 1e6, "us", 2.0,
                       "open + orjson.loads"))
        out.append(Row("  its pure-Python floor (+ one type test per value, harness.touch)",
                       med["touch"] / files * 1e6, med["floor"] / files * 1e6, "us", None,
                       "open + orjson.loads"))

        rollout = Path(tmp) / "rollout"
        # iteration 7: the records' own (``rollout_records`` makes iteration 7's batch); under
        # another name every record is an RL401 and the row timed 4,096 findings being built
        rollout_file = rollout / layout.iteration_path("flat", 7, "rollout_summaries")
        rollout.mkdir()
        (rollout / "metrics.jsonl").write_bytes(b'{"step":7,"progress/batch":7}\n')
        (rollout / "config.json").write_bytes(b"{}\n")
        rollout_file.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rollout_records(
            4096, 4, random.Random(1))))
        validate_run(rollout)
        med = interleaved({"rlio": timed(lambda: validate_run(rollout)),
                           "floor": timed(lambda: _lines_floor(rollout_file))},
                          5 if quick else 15)
        out.append(Row("validate_run, one 4096x4 rollout-summary file", med["rlio"] * 1e3,
                       med["floor"] * 1e3, "ms", 2.5, "orjson.loads per line"))

        tiny = small_file_run(Path(tmp) / "tiny", 2)
        env = _env()
        cmd = [sys.executable, "-m", "rlio", "validate", str(tiny)]
        # the console script's form: what the ``rlio`` entry point runs
        script = [sys.executable, "-c", _ENTRY_POINT, "validate", str(tiny)]
        bare = [sys.executable, "-c", "pass"]
        orjson_only = [sys.executable, "-c", "import orjson"]
        _process(cmd, env)  # bytecode and schema caches warm
        _process(script, env)
        _process(orjson_only, env)
        med = interleaved({"rlio": lambda: _process(cmd, env),
                           "script": lambda: _process(script, env),
                           "orjson": lambda: _process(orjson_only, env),
                           "floor": lambda: _process(bare, env)},
                          5 if quick else 15)
        out.append(Row("rlio validate start-up (tiny run)", med["rlio"] * 1e3,
                       med["floor"] * 1e3, "ms", None, "python -c pass"))
        out.append(Row("rlio validate start-up, console script (tiny run)",
                       med["script"] * 1e3, med["floor"] * 1e3, "ms", None, "python -c pass"))
        out.append(Row("breakdown: import orjson", med["orjson"] * 1e3, med["floor"] * 1e3, "ms",
                       None, "python -c pass"))

        if not quick:
            big = Path(tmp) / "big"
            (big / "metrics.jsonl").parent.mkdir(parents=True)
            (big / "metrics.jsonl").write_bytes(b"")
            doc = big_logtree(big / layout.iteration_path("flat", 0, "logtree"))
            data = doc.read_bytes()
            med = interleaved({"rlio": lambda: _cpu(lambda: validate_run(big)),
                               "floor": lambda: _cpu(lambda: _no_gc_loads(data)),
                               "touch": lambda: _cpu(lambda: _no_gc_loads(data, touch))}, 3)
            out.append(Row(f"validate one {len(data) >> 20} MB logtree (CPU)", med["rlio"],
                           med["floor"], "s", 1.5, "orjson.loads, GC off"))
            out.append(Row("  its pure-Python floor (+ one type test per value, harness.touch)",
                           med["touch"], med["floor"], "s", None, "orjson.loads, GC off"))
            peak = _peak_rss(big, env)
            out.append(Row(f"validate one {len(data) >> 20} MB logtree (peak memory)",
                           peak / 2**20, len(data) / 2**20, "MiB", 3.0, "file size"))
            peak = _peak_rss(big, env, floor=True)
            out.append(Row(f"orjson.loads one {len(data) >> 20} MB logtree (peak memory)",
                           peak / 2**20, len(data) / 2**20, "MiB", None, "file size"))
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
