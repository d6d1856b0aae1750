"""``rlio resume`` as users run it against a bare Python tail-read process, per ledger size.

The floor is what any restart needs at least: a fresh ``python -c`` that opens
``checkpoints.jsonl``, seeks to the end, reads back to the last complete line and parses it
(``orjson``, the parser rlio reads with; a stdlib ``json`` variant is shown too). rlio's side is the
console script ``rlio resume RUN`` (and ``python -m rlio resume RUN`` once), both started the same
way, interleaved in rounds. In-process rows keep what is at its floor there visible:
``read_resume_state`` against the same tail read in this process, ``record_checkpoint`` against
``orjson.dumps`` + ``os.write`` + ``fsync`` (fsync-bound), and ``import rlio`` against a bare
interpreter.

Processes run as on an installed package: with a bytecode cache (an install compiles rlio's
modules once; the standard library and orjson, the floor's imports, come compiled). The cache is
kept in the scratch directory (``PYTHONPYCACHEPREFIX``), written by one warm-up run of each
variant, even where ``PYTHONDONTWRITEBYTECODE`` is set; one more row shows the 1M-line start
without it (every rlio module compiled from source on every start, as in a source tree that may
not write ``__pycache__``).

Usage: ``python benchmarks/resume_floor.py [--quick]``; ``benchmarks/run_all.py`` prints its rows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Row, interleaved, timed

SIZES = (1_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000, 1_000_000)
GOAL = 2.0  # rlio resume within twice a bare tail-read process
_CK_BATCH = 10  # checkpoints per sample: one fsync alone varies too much to pair

_TAIL = """
import {mod}
f = open({path!r}, "rb")
end = f.seek(0, 2)
pos, buf = end, b""
while pos > 0:
    step = min(65536, pos)
    pos -= step
    f.seek(pos)
    buf = f.read(step) + buf
    cut = buf.rfind(b"\\n", 0, len(buf) - 1)
    if cut >= 0:
        break
{mod}.loads(buf[cut + 1:])
"""


def build_ledger(run: str, lines: int) -> None:
    """A run whose ``checkpoints.jsonl`` has ``lines`` realistic records (~150 bytes each, every
    tenth sampler-only) and a short ``metrics.jsonl`` a restart mostly supersedes."""
    os.makedirs(run, exist_ok=True)
    rid = "run-8b1e4d7a"
    with open(os.path.join(run, "checkpoints.jsonl"), "w") as f:
        block: list[str] = []
        for i in range(lines):
            n = f"{i + 1:06d}"
            if i % 10 == 9:
                block.append(f'{{"name":"{n}","batch":{i + 1},'
                             f'"sampler_path":"tinker://{rid}/sampler_weights/{n}"}}\n')
            else:
                block.append(f'{{"name":"{n}","batch":{i + 1},"epoch":{i // 50_000},'
                             f'"state_path":"tinker://{rid}/weights/{n}",'
                             f'"sampler_path":"tinker://{rid}/sampler_weights/{n}"}}\n')
            if len(block) == 100_000:
                f.write("".join(block))
                block = []
        f.write("".join(block))
    last_state = lines if lines % 10 else lines - 1
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        for step in range(max(0, last_state - 2_000), lines + 1):
            f.write(f'{{"step":{step},"progress/batch":{step},"env/all/reward/total":0.5}}\n')


def _env(pycache: str | None) -> dict[str, str]:
    """The environment of a timed process: bytecode cached under ``pycache`` (None: no cache)."""
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if pycache is None:  # rlio from source; the standard library keeps its own __pycache__
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def _process(argv: list[str], env: dict[str, str] | None = None) -> Callable[[], float]:
    """A variant timing one fresh process (started outside any source tree, so ``-m rlio``
    imports what ``PYTHONPATH`` or the installed package says, as for a user). It runs once
    here, untimed: a failure shows before any timing, and the bytecode cache is written."""
    cwd = tempfile.gettempdir()

    def run() -> float:
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, cwd=cwd, env=env)
        return time.perf_counter() - start

    run()
    return run


def _console_script() -> str:
    """The ``rlio`` console script next to this interpreter (what users run)."""
    here = os.path.join(os.path.dirname(sys.executable), "rlio")
    return here if os.path.exists(here) else shutil.which("rlio") or here


def _scratch() -> str:
    shm = "/dev/shm"
    return tempfile.mkdtemp(prefix="rlio-resume-floor-",
                            dir=shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None)


def _in_process_rows(run: str, rounds: int) -> list[Row]:
    import orjson

    from rlio import RunWriter
    from rlio.resume import read_resume_state

    path = os.path.join(run, "checkpoints.jsonl")

    def tail() -> object:
        with open(path, "rb") as f:
            end = f.seek(0, 2)
            f.seek(max(0, end - 65536))
            buf = f.read()
        return orjson.loads(buf[buf.rfind(b"\n", 0, len(buf) - 1) + 1:])

    med = interleaved({"rlio": timed(lambda: read_resume_state(run)), "floor": timed(tail)},
                      rounds * 20)
    rows = [Row("read_resume_state, 1M-line ledger (in process)", med["rlio"] * 1e3,
                med["floor"] * 1e3, "ms", None, "tail read + orjson.loads")]

    disk = tempfile.mkdtemp(prefix="rlio-ckpt-floor-")  # a real disk: tmpfs makes fsync free
    writer = RunWriter(os.path.join(disk, "writer"))
    fd = os.open(os.path.join(disk, "floor.jsonl"),
                 os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    counter = [0]

    def rlio_ck() -> None:
        for _ in range(_CK_BATCH):
            counter[0] += 1
            writer.record_checkpoint(f"{counter[0]:06d}", batch=counter[0],
                                     state_path=f"tinker://r/weights/{counter[0]:06d}")

    def floor_ck() -> None:
        for _ in range(_CK_BATCH):
            counter[0] += 1
            os.write(fd, orjson.dumps({"name": f"{counter[0]:06d}", "batch": counter[0],
                                       "state_path": f"tinker://r/weights/{counter[0]:06d}"})
                     + b"\n")
            os.fsync(fd)

    try:
        med = interleaved({"rlio": timed(rlio_ck), "floor": timed(floor_ck)}, rounds * 10)
    finally:
        writer.close()
        os.close(fd)
        shutil.rmtree(disk, ignore_errors=True)
    rows.append(Row("record_checkpoint (fsync-bound)", med["rlio"] * 1e3 / _CK_BATCH,
                    med["floor"] * 1e3 / _CK_BATCH,
                    "ms", 1.1, "orjson + write + fsync"))
    env = _env(os.path.join(os.path.dirname(run), "pycache"))
    med = interleaved({"rlio": _process([sys.executable, "-c", "import rlio"], env),
                       "floor": _process([sys.executable, "-c", "pass"], env)}, rounds)
    rows.append(Row("import rlio (process)", med["rlio"] * 1e3, med["floor"] * 1e3, "ms", None,
                    "python -c pass"))
    return rows


def rows(quick: bool) -> list[Row]:
    """One row per ledger size (console script vs the orjson tail-read process), then the
    ``python -m`` start, the stdlib-json floor and the in-process rows."""
    rounds = 5 if quick else 9
    sizes = QUICK_SIZES if quick else SIZES
    script = _console_script()
    scratch = _scratch()
    env = _env(os.path.join(scratch, "pycache"))
    out: list[Row] = []
    try:
        for n in sizes:
            run = os.path.join(scratch, f"run{n}")
            build_ledger(run, n)
            ledger = os.path.join(run, "checkpoints.jsonl")
            floor = [sys.executable, "-c", _TAIL.format(mod="orjson", path=ledger)]
            variants = {
                "rlio": _process([script, "resume", run], env),
                "floor": _process(floor, env),
            }
            if n == 1_000_000:
                variants["module"] = _process([sys.executable, "-m", "rlio", "resume", run], env)
                variants["json"] = _process([sys.executable, "-c",
                                             _TAIL.format(mod="json", path=ledger)], env)
                bare = _env(None)
                variants["uncached"] = _process([script, "resume", run], bare)
                variants["uncached_floor"] = _process(floor, bare)
            med = interleaved(variants, rounds)
            out.append(Row(f"rlio resume (console script), {n:,}-line ledger", med["rlio"] * 1e3,
                           med["floor"] * 1e3, "ms", GOAL, "python tail read (orjson)"))
            if n == 1_000_000:
                out.append(Row(f"python -m rlio resume, {n:,}-line ledger", med["module"] * 1e3,
                               med["floor"] * 1e3, "ms", GOAL, "python tail read (orjson)"))
                out.append(Row(f"rlio resume (console script), {n:,}-line ledger",
                               med["rlio"] * 1e3, med["json"] * 1e3, "ms", None,
                               "python tail read (stdlib json)"))
                out.append(Row(f"rlio resume, {n:,}-line ledger, no bytecode cache",
                               med["uncached"] * 1e3, med["uncached_floor"] * 1e3, "ms", None,
                               "python tail read (orjson)"))
                out += _in_process_rows(run, rounds)
            if n != 1_000_000:
                shutil.rmtree(run)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    """Print this module's rows."""
    from run_all import module_main

    return module_main(rows, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
