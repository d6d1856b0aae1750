"""Crash tests: a real writer process is SIGKILLed at random moments, then the run is reopened.

Each round starts ``crash_child.py`` (which resumes the run with ``RunWriter(resume=True)`` and
writes logtrees, rollout summaries, metrics and checkpoints in a loop) and kills it at a seeded
random moment: a quarter of the kills land during start-up and the resume preparation, the rest
inside the loop. After every kill the run must hold: no torn record visible through rlio's
readers, every checkpoint whose ``record_checkpoint`` returned, every whole file entirely one
version, ``validate_run`` without errors, and a resume state equal to the last acknowledged
checkpoint (or the one in flight, when it reached the disk whole before the kill).
"""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from factories import run_cli

from rlio import layout as L
from rlio import read_resume_state
from rlio.storage import TEMP_INFIX

CHILD = Path(__file__).with_name("crash_child.py")
_TITLE = re.compile(r"iteration (\d+) gen (\d+)")


def read_events(acks: Path) -> list[tuple[str, Any]]:
    """The child's notes: ("start", (gen, next_batch)), ("intent", rec), ("ack", rec)."""
    if not acks.exists():
        return []
    out: list[tuple[str, Any]] = []
    for raw in acks.read_text().splitlines():
        kind, _, rest = raw.partition(" ")
        if kind == "start":
            gen, nb = rest.split()
            out.append((kind, (int(gen), int(nb))))
        elif kind in ("intent", "ack"):
            out.append((kind, json.loads(rest)))
    return out


def complete_lines(path: Path) -> tuple[list[bytes], bytes]:
    """The terminated lines of a file and its unterminated tail."""
    if not path.exists():
        return [], b""
    data = path.read_bytes()
    cut = data.rfind(b"\n") + 1
    return data[:cut].splitlines(), data[cut:]


def check_whole_file(run: Path, rel: str, gens: set[int]) -> None:
    """A per-iteration or config file is complete and all of one version (one generation)."""
    data = (run / rel).read_bytes()
    rp = L.parse_path(rel)
    where = f"{rel} ({len(data)} bytes)"
    if rp.kind == "rollout_summaries":
        assert data.endswith(b"\n"), where
        recs = [json.loads(x) for x in data.splitlines()]
        assert len(recs) == 3, where
        assert {r["trajectory_metrics"]["gen"] for r in recs} <= gens, where
        assert len({r["trajectory_metrics"]["gen"] for r in recs}) == 1, where
        assert {r["iteration"] for r in recs} == {rp.iteration}, where
    elif rp.kind == "logtree":
        doc = json.loads(data)
        m = _TITLE.fullmatch(doc["title"])
        assert m and int(m[1]) == rp.iteration and int(m[2]) in gens, where
    elif rp.kind == "html":
        text = data.decode()
        assert text.lower().startswith("<!doctype html"), where
        assert text.rstrip().endswith("</html>"), where
        m = _TITLE.search(text)
        assert m and int(m[1]) == rp.iteration and int(m[2]) in gens, where
    elif rp.kind == "config":
        assert json.loads(data)["gen"] in gens, where


def check_run(run: Path, events: list[tuple[str, Any]], *, validate: bool = True) -> None:
    """Every invariant a killed run must keep (see the module docstring)."""
    acked = [rec for kind, rec in events if kind == "ack"]
    intents = [rec for kind, rec in events if kind == "intent"]
    unacked = [rec for rec in intents if rec not in acked]  # killed inside or after the call
    gens = {v[0] for kind, v in events if kind == "start"} | {rec["gen"] for rec in intents}

    # The ledger: whole, parseable lines only, holding every acknowledged record once, in order,
    # plus any record whose call was cut short by the kill after its bytes reached the disk.
    lines, tail = complete_lines(run / L.CHECKPOINTS)
    ledger = [json.loads(x) for x in lines]  # an interleaved or torn line would fail here
    j = 0
    for rec in intents:
        if j < len(ledger) and ledger[j] == rec:
            j += 1
        else:
            assert rec not in acked, f"acknowledged checkpoint {rec} is missing"
    assert j == len(ledger), f"unexpected ledger records {ledger[j:]}"
    if tail:  # a torn tail is the start of a record whose call never returned
        encoded = [json.dumps(r, separators=(",", ":")).encode() for r in unacked]
        assert any(e.startswith(tail) for e in encoded), f"torn tail {tail!r} of no record"

    # The resume state: the last whole record, i.e. the last acknowledged checkpoint or one
    # that reached the disk whole before the kill.
    state = read_resume_state(run)
    assert (state.checkpoint if state else None) == (ledger[-1] if ledger else None)
    if state is not None:
        assert state.line == len(ledger) and state.next_batch == state.checkpoint["batch"]
        assert state.torn_tail == bool(tail)

    # Metrics: whole lines with consecutive steps (each resume moved its superseded suffix).
    mlines, _ = complete_lines(run / L.METRICS)
    steps = [json.loads(x)["step"] for x in mlines]
    assert steps == list(range(len(steps)))
    side, _ = complete_lines(run / (L.METRICS + L.SUPERSEDED_SUFFIX))
    for x in side:
        json.loads(x)

    # Whole files: each entirely one version.
    for path in sorted(run.rglob("*")):
        rel = path.relative_to(run).as_posix()
        if path.is_file() and TEMP_INFIX not in rel:
            check_whole_file(run, rel, gens)

    if validate:
        from rlio import validate_run

        report = validate_run(run)
        errors = [f for f in report.findings if str(f.severity) == "error"]
        assert not errors, errors


def wait_for(acks: Path, prefix: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if acks.exists() and any(x.startswith(prefix) for x in acks.read_text().splitlines()):
            return
        if proc.poll() is not None:
            raise AssertionError(f"child exited {proc.returncode}: {proc.stderr.read()!r}"
                                 if proc.stderr else f"child exited {proc.returncode}")
        time.sleep(0.005)
    raise AssertionError(f"child did not write {prefix!r} within {timeout}s")


def spawn(run: Path, acks: Path, gen: int, layout: str, seed: int,
          iterations: int | None = None) -> subprocess.Popen[bytes]:
    args = [sys.executable, str(CHILD), str(run), str(acks), str(gen), layout, str(seed)]
    if iterations is not None:
        args.append(str(iterations))
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def crash_rounds(tmp: Path, *, kills: int, seed: int, layout: str, validate: bool = True) -> int:
    """Kill a writer ``kills`` times at random moments, checking the run after each; then finish.

    Returns the number of kills that landed while the child was running.
    """
    rng = random.Random(seed)
    run, acks = tmp / "run", tmp / "acks.txt"
    # Generation 0 runs one iteration to completion: config.json and metrics.jsonl exist (the
    # validator requires both) and no checkpoint yet, so the first kills also cover a restart
    # without a checkpoint.
    setup = spawn(run, acks, 0, layout, seed, iterations=1)
    _, err = setup.communicate(timeout=300)
    assert setup.returncode == 0, err
    expected_start = 0
    landed = 0
    for gen in range(1, kills + 1):
        proc = spawn(run, acks, gen, layout, seed * 10_000 + gen)
        if rng.random() < 0.25:
            time.sleep(rng.uniform(0.0, 0.5))  # start-up, resume preparation, first iteration
        else:
            wait_for(acks, f"start {gen} ", proc, timeout=120)
            time.sleep(rng.uniform(0.0, 0.15))
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else b""
            raise AssertionError(f"child {gen} exited {proc.returncode} before the kill: {err!r}")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
        landed += 1
        if proc.stderr:
            proc.stderr.close()
        events = read_events(acks)
        starts = [v for k, v in events if k == "start" and v[0] == gen]
        assert starts in ([], [(gen, expected_start)]), "the child restarted elsewhere"
        check_run(run, events, validate=validate)
        state = read_resume_state(run)
        expected_start = state.next_batch if state is not None else 0

    # A last process runs to completion: the resumed run is whole and has no repeated step.
    proc = spawn(run, acks, kills + 1, layout, seed, iterations=6)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    events = read_events(acks)
    check_run(run, events, validate=validate)
    last = [rec for kind, rec in events if kind == "ack"][-1]
    assert last["gen"] == kills + 1
    resumed = run_cli("resume", str(run), "--format", "json")
    assert resumed.returncode == 0, resumed.stderr
    doc = json.loads(resumed.stdout)
    assert doc["checkpoint"] == last and doc["torn_tail"] is False
    assert doc["superseded"] == {"metrics_lines": None, "iteration_files": []}
    if validate:
        validated = run_cli("validate", str(run))
        assert validated.returncode == 0, validated.stdout + validated.stderr
    return landed


@pytest.mark.parametrize(("layout", "kills", "seed"), [("flat", 8, 1), ("nested", 6, 2)])
def test_random_kills_fast_subset(tmp_path: Path, layout: str, kills: int, seed: int) -> None:
    """A few SIGKILLs at random moments never lose an acknowledged checkpoint or tear a record."""
    assert crash_rounds(tmp_path, kills=kills, seed=seed, layout=layout) == kills


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(8))
def test_random_kills_stress(tmp_path: Path, round_: int) -> None:
    """26 SIGKILLs per run over 8 runs (208 kills): every invariant holds after each one."""
    layout = "flat" if round_ % 2 == 0 else "nested"
    assert crash_rounds(tmp_path, kills=26, seed=100 + round_, layout=layout) == 26
