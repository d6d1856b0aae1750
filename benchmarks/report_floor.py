"""``rlio report`` on a long ``metrics.jsonl`` against the parse floor, per line, and its memory.

The floor is one ``orjson.loads`` of every line of the file (read in 1 MiB blocks): what any
report of every metric needs at least. rlio's side is ``render_run_report`` (validation included,
as ``rlio report`` runs it: the charts read the validator's own parse), ``validate_run`` alone
(what the report adds to it is the "over validate_run" row's ratio), and ``read_metrics`` alone
(the charts' pass when the report runs without validation), interleaved with the floor in
rounds. Two rows compare the peak Python heap (tracemalloc) of the report and of
``read_metrics`` at the full line count with a tenth of it: flat memory is a ratio near 1. Under
the report's row, its pure-Python floor (no goal): the parse floor plus one type test per value
of every line (``harness.touch``).

Usage: ``python benchmarks/report_floor.py [--quick]``; ``benchmarks/run_all.py`` prints its rows.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Row, interleaved, timed, touch

LINES = 1_000_000
QUICK_LINES = 200_000


def build_metrics(run: str, lines: int) -> None:
    """A cookbook-like run: ``metrics.jsonl`` with ``lines`` 20-key lines and a config."""
    os.makedirs(run, exist_ok=True)
    rng = random.Random(7)
    with open(os.path.join(run, "config.json"), "w") as f:
        f.write('{"model_name": "bench", "learning_rate": 4e-05}\n')
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        block = []
        for i in range(lines):
            r = [round(rng.random(), 6) for _ in range(12)]
            block.append(
                f'{{"step":{i},"progress/batch":{i},"progress/done_frac":{i / lines!r},'
                f'"optim/lr":4e-05,"optim/entropy":{r[0]},"optim/kl_sample_train_v1":{r[1]},'
                f'"optim/kl_sample_train_v2":{r[2]},"env/all/reward/total":{r[3]},'
                f'"time/total":12.5,"time/sample":9.25,"time/train":2.5,"time/train:count":1,'
                + ",".join(f'"env/all/metric_{k}":{r[4 + k]}' for k in range(8)) + "}\n")
            if len(block) == 50_000:
                f.write("".join(block))
                block = []
        f.write("".join(block))


def _parse_floor(path: str, visit: object = None) -> None:
    """One ``orjson.loads`` per line (each record handed to ``visit`` when given)."""
    import orjson

    loads = orjson.loads
    rest = b""
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if visit is None:
                    loads(line)
                else:
                    visit(loads(line))  # type: ignore[operator]


def _peak(fn: object) -> float:
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def rows(quick: bool) -> list[Row]:
    """Per-line time of the report and of its metrics pass against the parse floor; memory."""
    from rlio.report.reading import read_metrics
    from rlio.report.run_report import render_run_report
    from rlio.storage.local import LocalStorage
    from rlio.validate import validate_run

    n = QUICK_LINES if quick else LINES
    rounds = 3 if quick else 5
    scratch = tempfile.mkdtemp(prefix="rlio-report-floor-")
    try:
        run, small = os.path.join(scratch, "run"), os.path.join(scratch, "small")
        build_metrics(run, n)
        build_metrics(small, n // 10)
        path = os.path.join(run, "metrics.jsonl")
        storage = LocalStorage(run)
        med = interleaved({
            "report": timed(lambda: render_run_report(run)),
            "validate": timed(lambda: validate_run(run)),
            "metrics": timed(lambda: read_metrics(storage, ())),
            "floor": timed(lambda: _parse_floor(path)),
            "touch": timed(lambda: _parse_floor(path, touch)),
        }, rounds)
        per = 1e6 / n
        out = [
            Row(f"rlio report (render_run_report), {n:,} metrics lines", med["report"] * per,
                med["floor"] * per, "us/line", 2.5, "orjson.loads every line"),
            Row("  its pure-Python floor (+ one type test per value, harness.touch)",
                med["touch"] * per, med["floor"] * per, "us/line", None,
                "orjson.loads every line"),
            Row(f"rlio report over validate_run alone, {n:,} lines", med["report"] * per,
                med["validate"] * per, "us/line", None, "validate_run (its metrics parse)"),
            Row(f"validate_run alone, {n:,} metrics lines", med["validate"] * per,
                med["floor"] * per, "us/line", None, "orjson.loads every line"),
            Row(f"report metrics pass (read_metrics), {n:,} lines", med["metrics"] * per,
                med["floor"] * per, "us/line", None, "orjson.loads every line"),
        ]
        big = _peak(lambda: render_run_report(run))
        little = _peak(lambda: render_run_report(small))
        out.append(Row(f"rlio report peak heap, {n:,} vs {n // 10:,} lines", big, little,
                       "MiB", 1.5, "a tenth of the lines"))
        big = _peak(lambda: read_metrics(storage, ()))
        little = _peak(lambda: read_metrics(LocalStorage(small), ()))
        out.append(Row(f"read_metrics peak heap, {n:,} vs {n // 10:,} lines", big, little,
                       "MiB", 1.5, "a tenth of the lines"))
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Print this module's rows."""
    from run_all import module_main

    return module_main(rows, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
