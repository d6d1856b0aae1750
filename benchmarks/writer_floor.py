"""The writer's hot paths against their physical floors, interleaved in one process.

Run: ``python benchmarks/writer_floor.py [--quick]``. Rows (rlio's median, the floor's median,
the ratio and the goal of issues 22 and 31, pure Python):

- ``log_metrics`` checked, per record, against ``os.write(fd, orjson.dumps(line))`` of the same
  line (step included) on an O_APPEND descriptor in the same folder: 20 floats as a training loop
  logs them (ranges and counts included; goal 2.5x), the same 20 keys as numpy scalars (float32,
  float64, int64, bool_; goal 3x) and 200 keys (goal 3x); and, as a breakdown without a goal,
  the 20 floats with ``check=False`` (the checked row less this one is what checking costs);
  the 20 floats also against the cookbook's own ``JsonLogger.log_metrics`` (goal: a ratio of
  0.1, ten times faster; skipped without tinker-cookbook).
- ``write_rollout_summaries`` of 4096 trajectories x 4 steps, checked (goal 2x, issue 31) and
  ``check=False`` (goal 1.5x), against orjson encoding each line, one write to a temp file,
  fsync, rename and directory fsync.
- under each checked row, its pure-Python floor (no goal): the row's floor plus what judging
  the line as written needs at least, ``orjson.loads`` of each line and one type test per value
  (``harness.touch``); its ratio is how much of the goal that alone takes. And its engine
  floor (no goal): the row's floor plus the one engine's verdict on each record (jsonschema-rs
  through ``rlio.schema``, what the writer asks), with no lock, no key order and no §9 rule:
  a checked write cannot cost less.
- one logtree of 64 conversations written (JSON and HTML twin), against the same document as
  compact orjson and its HTML page (rendered by rlio in both), each written to a temp file with
  fsync, both renamed, one directory fsync (goal 1.5x); the JSON's size is reported too.

Each round runs rlio and its floor in turn (``harness.interleaved``), so load hits both alike;
medians of the rounds. Writes go to a temp folder (``--dir`` to choose the disk).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson

from rlio.schema import record_schema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Row, interleaved, touch
from writer import metrics_record as writer_metrics_record
from writer import rollout_records  # the same 4096 x 4 batch the older writer benchmark times

NUMPY_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE


def metrics_record(i: int, rng: random.Random) -> dict[str, Any]:
    """20 keys as a training loop logs them: progress, optimizer, env rewards, timings."""
    return writer_metrics_record(i, rng, spread=9)


def numpy_record(i: int, rng: random.Random) -> dict[str, Any]:
    """The same 20 keys as numpy scalars: float32, float64, int64 and bool_ (where a boolean
    is valid)."""
    import numpy as np

    rec: dict[str, Any] = {}
    for n, (key, value) in enumerate(metrics_record(i, rng).items()):
        if type(value) is int:
            rec[key] = np.int64(value)
        else:
            rec[key] = np.float32(value) if n % 2 else np.float64(value)
    for k in range(3):  # booleans live outside env/ (numbers only there)
        rec[f"flags/ok_{k}"] = np.bool_(k % 2 == 0)
        rec.pop(f"env/all/metric_{k}")
    return rec


def wide_record(i: int, rng: random.Random) -> dict[str, Any]:
    """200 keys: a step counter, a few timings, many env metrics."""
    rec: dict[str, Any] = {"progress/batch": i, "time/total": 12.5}
    for k in range(198):
        rec[f"env/group_{k // 20}/metric_{k}"] = rng.random()
    return rec


def conversation(i: int, rng: random.Random) -> list[dict[str, Any]]:
    """A two-turn conversation with a few hundred characters a message."""
    words = ["the", "answer", "is", "step", "compute", "sum", "of", "numbers", "check", "done"]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    return [{"role": "system", "content": "You are a careful math assistant."},
            {"role": "user", "content": f"Problem {i}: {text(60)}"},
            {"role": "assistant", "content": text(120)},
            {"role": "user", "content": text(30)},
            {"role": "assistant", "content": f"{text(80)} \\boxed{{{i}}}"}]


# --------------------------------------------------------------------------- the variants


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic(folder: str, files: list[tuple[str, bytes]]) -> None:
    """The floor of an atomic replace: temp files written and fsync'd, renamed, one dir fsync."""
    temps = []
    for name, data in files:
        tmp = os.path.join(folder, f".{name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        temps.append((tmp, os.path.join(folder, name)))
    for tmp, final in temps:
        os.replace(tmp, final)
    _fsync_dir(folder)


def metrics_variants(base: str, records: list[dict[str, Any]],
                     *, check: bool = True) -> dict[str, Callable[[], float]]:
    """rlio's log_metrics (checked unless told) and its floor, each a callable returning
    seconds a record."""
    from rlio import RunWriter

    n = len(records)
    lines = [{"step": i, **r} for i, r in enumerate(records)]

    def rlio() -> float:
        d = tempfile.mkdtemp(dir=base)
        with RunWriter(d, check=check) as w:
            log = w.log_metrics
            t0 = time.perf_counter()
            for i in range(n):
                log(records[i], step=i)
            dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt / n

    def floor() -> float:
        d = tempfile.mkdtemp(dir=base)
        fd = os.open(os.path.join(d, "metrics.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                     0o644)
        dumps, write = orjson.dumps, os.write
        t0 = time.perf_counter()
        for line in lines:
            write(fd, dumps(line, option=NUMPY_OPTS))
        dt = time.perf_counter() - t0
        os.close(fd)
        shutil.rmtree(d)
        return dt / n

    def judged() -> float:  # what a check of the line as written needs at least
        d = tempfile.mkdtemp(dir=base)
        fd = os.open(os.path.join(d, "metrics.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                     0o644)
        dumps, loads, write = orjson.dumps, orjson.loads, os.write
        t0 = time.perf_counter()
        for line in lines:
            data = dumps(line, option=NUMPY_OPTS)
            touch(loads(data))
            write(fd, data)
        dt = time.perf_counter() - t0
        os.close(fd)
        shutil.rmtree(d)
        return dt / n

    def engine() -> float:  # the floor plus the one engine's verdict on each record
        d = tempfile.mkdtemp(dir=base)
        fd = os.open(os.path.join(d, "metrics.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                     0o644)
        dumps, write, judge = orjson.dumps, os.write, record_schema("metrics-line").check()
        t0 = time.perf_counter()
        for line in lines:
            data = dumps(line, option=NUMPY_OPTS)
            try:
                judge(line)
            except ValueError:  # numpy scalars: the engine judges the line as read back
                judge(orjson.loads(data))
            write(fd, data)
        dt = time.perf_counter() - t0
        os.close(fd)
        shutil.rmtree(d)
        return dt / n

    return ({"rlio": rlio, "floor": floor, "judged": judged, "engine": engine} if check
            else {"rlio": rlio, "floor": floor})


def cookbook_variant(base: str, records: list[dict[str, Any]]) -> Callable[[], float] | None:
    """The cookbook's own ``JsonLogger.log_metrics`` of the same records (None when
    tinker-cookbook is not installed)."""
    try:
        from tinker_cookbook.utils.ml_log import JsonLogger
    except ImportError:
        return None

    def cookbook() -> float:
        d = tempfile.mkdtemp(dir=base)
        logger = JsonLogger(d)
        t0 = time.perf_counter()
        for i, record in enumerate(records):
            logger.log_metrics(record, step=i)
        dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt / len(records)

    return cookbook


def rollout_variants(base: str, records: list[dict[str, Any]],
                     *, check: bool) -> dict[str, Callable[[], float]]:
    from rlio import RunWriter

    def rlio() -> float:
        d = tempfile.mkdtemp(dir=base)
        with RunWriter(d, check=check) as w:
            t0 = time.perf_counter()
            w.write_rollout_summaries(7, records)
            dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt

    def floor() -> float:
        d = tempfile.mkdtemp(dir=base)
        dumps = orjson.dumps
        t0 = time.perf_counter()
        data = b"".join([dumps(r, option=NUMPY_OPTS) for r in records])
        _atomic(d, [("train_iteration_000007_rollout_summaries.jsonl", data)])
        dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt

    def judged() -> float:  # the floor plus decoding each line and touching each value once
        d = tempfile.mkdtemp(dir=base)
        dumps, loads = orjson.dumps, orjson.loads
        t0 = time.perf_counter()
        lines = [dumps(r, option=NUMPY_OPTS) for r in records]
        for line in lines:
            touch(loads(line))
        _atomic(d, [("train_iteration_000007_rollout_summaries.jsonl", b"".join(lines))])
        dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt

    def engine() -> float:  # the floor plus the one engine's verdict on each record
        d = tempfile.mkdtemp(dir=base)
        dumps, judge = orjson.dumps, record_schema("rollout-summary-line").check()
        t0 = time.perf_counter()
        lines = []
        for r in records:
            lines.append(dumps(r, option=NUMPY_OPTS))
            judge(r)
        _atomic(d, [("train_iteration_000007_rollout_summaries.jsonl", b"".join(lines))])
        dt = time.perf_counter() - t0
        shutil.rmtree(d)
        return dt

    return ({"rlio": rlio, "floor": floor, "judged": judged, "engine": engine} if check
            else {"rlio": rlio, "floor": floor})


def logtree_variants(base: str, conversations: list[list[dict[str, Any]]],
                     sizes: dict[str, int]) -> dict[str, Callable[[], float]]:
    from rlio import RunWriter
    from rlio.logtree import LogTree

    def build(lt: Any) -> None:
        with lt.section("Group Rollout"):
            for messages in conversations:
                lt.conversation(messages)

    def rlio() -> float:
        d = tempfile.mkdtemp(dir=base)
        with RunWriter(d) as w:
            block = w.logtree(7, title="RL Iteration 7")
            build(block.__enter__())
            t0 = time.perf_counter()
            block.__exit__(None, None, None)  # the write: JSON and HTML twin
            dt = time.perf_counter() - t0
        sizes["rlio"] = os.path.getsize(os.path.join(d, "train_iteration_000007_logtree.json"))
        shutil.rmtree(d)
        return dt

    def floor() -> float:
        d = tempfile.mkdtemp(dir=base)
        tree = LogTree("RL Iteration 7")
        build(tree)
        doc = tree.to_json(path=os.path.join(d, "train_iteration_000007.html"))
        t0 = time.perf_counter()
        data = orjson.dumps(doc)
        _atomic(d, [("train_iteration_000007_logtree.json", data),
                    ("train_iteration_000007.html", tree.to_html().encode())])
        dt = time.perf_counter() - t0
        sizes["floor"] = len(data)
        shutil.rmtree(d)
        return dt

    return {"rlio": rlio, "floor": floor}


# ------------------------------------------------------------------------------- the table


def _row(path: str, times: dict[str, float], unit: str, scale: float, goal: float,
         floor_name: str) -> Row:
    return Row(path=path, rlio=times["rlio"] * scale, floor=times["floor"] * scale, unit=unit,
               goal=goal, floor_name=floor_name)


def _judged_row(path: str, times: dict[str, float], unit: str, scale: float,
                floor_name: str) -> Row:
    """The row's floor plus what judging its lines as written needs at least (``orjson.loads``
    of each, one type test per value: ``harness.touch``), against the row's floor."""
    return Row(path=path, rlio=times["judged"] * scale, floor=times["floor"] * scale, unit=unit,
               goal=None, floor_name=floor_name)


def _engine_row(path: str, times: dict[str, float], unit: str, scale: float,
                floor_name: str) -> Row:
    """The row's floor plus the one engine's verdict on each record (``rlio.schema``'s
    ``check()``, no lock, no other work): what a checked write costs at least."""
    return Row(path=path, rlio=times["engine"] * scale, floor=times["floor"] * scale, unit=unit,
               goal=None, floor_name=floor_name)


def rows(quick: bool, base: str | None = None) -> list[Row]:
    """Every row of this module (``quick``: fewer records and rounds, for a smoke run)."""
    rounds = 5 if quick else 9
    n = 2000 if quick else 10000
    folder = tempfile.mkdtemp(prefix="rlio-writer-floor-", dir=base)
    try:
        out = []
        rng = random.Random(0)
        floor_m = "orjson.dumps + os.write"
        for path, make, goal in (("log_metrics checked, 20 floats", metrics_record, 2.5),
                                 ("log_metrics checked, 20 numpy scalars", numpy_record, 3.0),
                                 ("log_metrics checked, 200 keys", wide_record, 3.0)):
            count = n if "200" not in path else n // 5
            records = [make(i, rng) for i in range(count)]
            variants = metrics_variants(folder, records)
            cookbook = cookbook_variant(folder, records) if make is metrics_record else None
            if cookbook is not None:
                variants["cookbook"] = cookbook
            times = interleaved(variants, rounds)
            out.append(_row(path, times, "us", 1e6, goal, floor_m))
            out.append(_judged_row(f"  its pure-Python floor, {path.split(', ', 1)[1]}", times,
                                   "us", 1e6, floor_m))
            out.append(_engine_row(f"  its engine floor, {path.split(', ', 1)[1]}", times,
                                   "us", 1e6, floor_m))
            if cookbook is not None:  # goal: 10x faster, a ratio of 0.1 or less
                out.append(Row(path="  the same against the cookbook's JsonLogger",
                               rlio=times["rlio"] * 1e6, floor=times["cookbook"] * 1e6,
                               unit="us", goal=0.1, floor_name="JsonLogger.log_metrics"))
        # A breakdown, no goal: what the check costs is the checked row less this one.
        records = [metrics_record(i, rng) for i in range(n)]
        times = interleaved(metrics_variants(folder, records, check=False), rounds)
        out.append(_row("log_metrics check=False, 20 floats (breakdown)", times, "us", 1e6,
                        None, floor_m))
        recs = rollout_records(4096, 4, random.Random(1))
        floor_r = "orjson + write + fsync + rename + dir fsync"
        for check, goal in ((True, 2.0), (False, 1.5)):
            times = interleaved(rollout_variants(folder, recs, check=check), rounds)
            out.append(_row(f"write_rollout_summaries 4096x4, check={check}", times, "ms",
                            1e3, goal, floor_r))
            if check:
                out.append(_judged_row("  its pure-Python floor, 4096x4", times, "ms", 1e3,
                                       floor_r))
                out.append(_engine_row("  its engine floor, 4096x4", times, "ms", 1e3, floor_r))
        sizes: dict[str, int] = {}
        convs = [conversation(i, random.Random(i)) for i in range(64)]
        times = interleaved(logtree_variants(folder, convs, sizes), rounds)
        out.append(_row(f"logtree write, 64 conversations (JSON {sizes['rlio'] // 1024} KB, "
                        f"compact {sizes['floor'] // 1024} KB)", times, "ms", 1e3, 1.5,
                        "compact orjson + html + 3 syncs"))
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer records and rounds")
    parser.add_argument("--dir", help="where to write (default: a temp folder)")
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"writer floors (python {sys.version.split()[0]}; load average {' '.join(load)}; "
          "medians of interleaved rounds)")
    for row in rows(args.quick, args.dir):
        verdict = {None: "", True: "ok", False: "MISS"}[row.meets_goal]
        print(f"  {row.path:<62} {row.rlio:9.2f} {row.unit} vs {row.floor:9.2f} {row.unit} "
              f"({row.floor_name})  {row.ratio:5.2f}x  "
              f"{'-' if row.goal is None else f'goal <= {row.goal}x'}  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
