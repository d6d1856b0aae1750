"""A model-based fault harness: seeded schedules drive a lease holder, attached writers and a
follower on a local run against a reference model of what was acknowledged.

Faults: SIGKILL of the holder (then a restart with resume), SIGSTOP/SIGCONT, the lease file
deleted (a second holder takes the run), the run directory renamed away and back, a fork of the
holder, a crashed writer's cut-off line. After every schedule: every acknowledged record is
present exactly once (in ``metrics.jsonl`` or a sidecar: superseded lines count as present), no
durable verb was acknowledged after its holder lost the lease, resume returns the last
acknowledged checkpoint, ``validate`` finds no error, and the follower yielded each record once
and nothing that is not in the run. A short profile runs by default, a long one under ``slow``.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rlio import Severity, layout, read_resume_state, validate_run
from rlio.reader.follow import follow_jsonl
from rlio.storage import open_storage
from rlio.storage.lease import LEASE_NAME

_OWNER = str(Path(__file__).with_name("fault_owner.py"))
_ATTACHED = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    path, tag, step, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with RunWriter(path, attach=True) as run:
        print("ready", flush=True)
        for i in range(n):
            run.log_metrics({"eval/acc": 0.5, "uid": f"{tag}-{i}"}, step=step)
""")
_TIMEOUT = 60.0


class _Stop(Exception):
    """Raised into the follower's sleep to end it."""


class Owner:
    """One lease-holder process and its replies."""

    def __init__(self, path: Path, name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen([sys.executable, _OWNER, str(path), name],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        words = self._read().split()
        assert words[0] == "ready", words
        self.next_batch, self.epoch = int(words[1]), int(words[2])
        self.lost = False  # set by the harness when it took the lease from this holder

    def _read(self) -> str:
        out = self.proc.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], _TIMEOUT)
        assert ready, f"holder {self.name} did not answer within {_TIMEOUT} s"
        return out.readline().decode().strip()

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        return self._read()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=_TIMEOUT)

    def close(self) -> str:
        reply = self.ask("close")
        self.proc.wait(timeout=_TIMEOUT)
        return reply


@dataclass
class Model:
    """What was acknowledged, and the harness's own bookkeeping."""

    acked: set[str] = field(default_factory=set)  # metrics uids whose log_metrics returned
    checkpoints: list[str] = field(default_factory=list)  # acknowledged state paths, in order
    violations: list[str] = field(default_factory=list)
    uid: int = 0


class Harness:
    """Runs one seeded schedule on a fresh local run."""

    def __init__(self, root: Path, seed: int) -> None:
        self.path = root / "run"
        self.away = root / "away"
        self.rng = random.Random(seed)
        self.model = Model()
        self.owners = 0
        self.owner = self._new_owner()
        self.batch = self.owner.next_batch
        self.attached: list[tuple[subprocess.Popen[bytes], list[str]]] = []
        self.followed: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._storage = open_storage(self.path)
        self._follower = threading.Thread(target=self._follow, daemon=True)
        self._follower.start()

    # -- the actors -----------------------------------------------------------------------

    def _new_owner(self) -> Owner:
        self.owners += 1
        return Owner(self.path, f"o{self.owners}")

    def _follow(self) -> None:
        def sleep(_: float) -> None:
            if self._stop.is_set():
                raise _Stop
            time.sleep(0.02)

        try:
            for rec in follow_jsonl(self._storage, layout.METRICS, poll=0.02, sleep=sleep):
                self.followed.append(rec)
        except _Stop:
            pass

    def _restart(self) -> None:
        """A new holder (resume): the batch goes back to its restart point."""
        self.owner = self._new_owner()
        self.batch = self.owner.next_batch

    # -- actions ---------------------------------------------------------------------------

    def step(self) -> None:
        """Log a metrics line at the current batch, then (sometimes) checkpoint past it."""
        self.model.uid += 1
        uid = f"m{self.model.uid}"
        reply = self.owner.ask(f"m {uid} {self.batch}")
        if reply == "ok":
            self.model.acked.add(uid)
        elif not (reply == "lost" and self.owner.lost):
            self.model.violations.append(f"log_metrics {uid}: {reply}")
        self.batch += 1
        if self.rng.random() < 0.4:
            reply = self.owner.ask(f"c {self.batch}")
            if reply == "ok":
                if self.owner.lost:
                    self.model.violations.append(f"checkpoint {self.batch} acknowledged by "
                                                 f"{self.owner.name} after it lost the lease")
                self.model.checkpoints.append(f"tinker://{self.owner.name}/{self.batch}")
            elif not (reply == "lost" and self.owner.lost):
                self.model.violations.append(f"record_checkpoint {self.batch}: {reply}")

    def attach(self) -> None:
        """An attached writer logs a burst of eval lines while the schedule goes on."""
        tag = f"a{len(self.attached)}"
        n = self.rng.randint(20, 200)
        proc = subprocess.Popen([sys.executable, "-c", _ATTACHED, str(self.path), tag,
                                 str(self.batch), str(n)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        self.attached.append((proc, [f"{tag}-{i}" for i in range(n)]))

    def sigkill(self) -> None:
        """SIGKILL the holder, then restart with resume."""
        self.owner.kill()
        self._restart()

    def sigstop(self) -> None:
        """SIGSTOP the holder for a moment, then SIGCONT (locally its lock does not expire)."""
        os.kill(self.owner.proc.pid, signal.SIGSTOP)
        time.sleep(self.rng.uniform(0.0, 0.3))
        os.kill(self.owner.proc.pid, signal.SIGCONT)

    def delete_lease(self) -> None:
        """Delete the lease file; a second holder takes the run; the first one is fenced: its
        durable verbs are refused at once (a log_metrics it acknowledged within the lease
        recheck must still be kept)."""
        (self.path / LEASE_NAME).unlink()
        old = self.owner
        old.lost = True
        new = self._new_owner()
        self.model.uid += 1
        uid = f"m{self.model.uid}"
        reply = old.ask(f"m {uid} {self.batch}")
        if reply == "ok":
            self.model.acked.add(uid)
        elif reply != "lost":
            self.model.violations.append(f"log_metrics {uid} by {old.name}: {reply}")
        self._expect_refused(old, "c 999999")
        if old.close() == "ok":
            self.model.violations.append(f"close of {old.name} acknowledged after loss")
        self.owner, self.batch = new, new.next_batch

    def rename(self) -> None:
        """Rename the run away and back; the holder is fenced while it is away."""
        os.rename(self.path, self.away)
        self.owner.lost = True
        self._expect_refused(self.owner, f"c {self.batch}")
        if self.owner.close() == "ok":
            self.model.violations.append(f"close of {self.owner.name} acknowledged after loss")
        os.rename(self.away, self.path)
        self._restart()

    def fork(self) -> None:
        """A forked child of the holder cannot write as owner."""
        reply = self.owner.ask("fork")
        if reply != "lost,lost":
            self.model.violations.append(f"forked child of {self.owner.name}: {reply}")

    def torn(self) -> None:
        """A crashed writer's cut-off line at the end of metrics.jsonl (written under the
        file's lock, as an rlio writer killed in the middle of its append left it)."""
        metrics = self.path / layout.METRICS
        with self._storage.lock(layout.METRICS):
            with open(metrics, "rb") as f:
                f.seek(max(0, metrics.stat().st_size - 1))
                if f.read(1) not in (b"\n", b""):
                    return  # never two fragments in a row: that is not what one crash leaves
            fd = os.open(metrics, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, b'{"step": 1, "uid": "cut-o')
            finally:
                os.close(fd)

    def _expect_refused(self, owner: Owner, command: str) -> None:
        reply = owner.ask(command)
        if reply != "lost":
            self.model.violations.append(f"{command!r} by {owner.name} after loss: {reply}")

    # -- the schedule and its checks --------------------------------------------------------

    def run(self, steps: int) -> None:
        actions = [(self.step, 60), (self.attach, 6), (self.sigkill, 4), (self.sigstop, 3),
                   (self.delete_lease, 3), (self.rename, 2), (self.fork, 2), (self.torn, 3)]
        funcs, weights = zip(*actions, strict=True)
        plan = [*funcs[1:], *self.rng.choices(funcs, weights, k=max(0, steps - len(funcs) + 1))]
        self.rng.shuffle(plan)  # every fault at least once, the rest drawn by weight
        for action in plan:
            action()
        self.step()
        reply = self.owner.close()
        if reply != "ok":
            self.model.violations.append(f"final close: {reply}")
        for proc, uids in self.attached:
            if proc.wait(timeout=_TIMEOUT) == 0:
                self.model.acked.update(uids)
            else:
                self.model.violations.append(f"attached writer exited {proc.returncode}")

    def check(self) -> None:
        present = self._present()
        counts = Counter(present)
        problems = list(self.model.violations)
        problems += [f"acknowledged {u} is missing" for u in sorted(self.model.acked - set(counts))]
        problems += [f"{u} is present {n} times" for u, n in counts.items() if n > 1]
        problems += [f"unacknowledged {u} is present (a refused verb wrote)"
                     for u in counts if u == "forked"]
        state = read_resume_state(self.path)
        want = self.model.checkpoints[-1] if self.model.checkpoints else None
        got = state.checkpoint.get("state_path") if state is not None else None
        if got != want:
            problems.append(f"resume returns {got}, the last acknowledged checkpoint is {want}")
        errors = [f for f in validate_run(self.path).findings if f.severity >= Severity.ERROR]
        problems += [f"validate: {f}" for f in errors]
        problems += self._follower_problems(set(counts))
        assert not problems, "\n".join(problems[:20])

    def _present(self) -> list[str]:
        uids = []
        for rel in (layout.METRICS, layout.METRICS + layout.SUPERSEDED_SUFFIX,
                    layout.METRICS + layout.TORN_SUFFIX):
            p = self.path / rel
            if not p.exists():
                continue
            for raw in p.read_bytes().splitlines():
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue  # the crafted cut-off lines
                if isinstance(rec, dict) and "uid" in rec:
                    uids.append(rec["uid"])
        return uids

    def _follower_problems(self, present: set[str]) -> list[str]:
        final = set()
        for raw in (self.path / layout.METRICS).read_bytes().splitlines():
            try:
                final.add(json.loads(raw)["uid"])
            except (ValueError, KeyError):
                continue
        deadline = time.monotonic() + _TIMEOUT
        while time.monotonic() < deadline:
            if final <= {r.get("uid") for r in list(self.followed)}:
                break
            time.sleep(0.05)
        time.sleep(0.1)  # one more look: a phantom would come now
        self._stop.set()
        self._follower.join(timeout=_TIMEOUT)
        yielded = Counter(r.get("uid") for r in self.followed)
        out = [f"follower yielded {u} {n} times" for u, n in yielded.items() if n > 1]
        out += [f"follower never yielded {u}" for u in sorted(final - set(yielded))]
        out += [f"follower yielded {u}, which is nowhere in the run" for u in yielded
                if u not in present]
        return out

    def close(self) -> None:
        self._stop.set()
        for proc, _ in self.attached:
            if proc.poll() is None:
                proc.kill()
        if self.owner.proc.poll() is None:
            self.owner.kill()


def _run_schedule(tmp_path: Path, seed: int, steps: int) -> None:
    h = Harness(tmp_path, seed)
    try:
        h.run(steps)
        h.check()
    finally:
        h.close()


def test_short_fault_schedule(tmp_path: Path) -> None:
    """One seeded schedule of 40 actions: nothing acknowledged lost or doubled, no durable
    acknowledgement after a lease loss, resume at the last acknowledged checkpoint, validate
    clean, the follower saw each record once."""
    _run_schedule(tmp_path, seed=23, steps=40)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_long_fault_schedules(tmp_path: Path, seed: int) -> None:
    """Six seeded schedules of 200 actions each, checked as the short one."""
    _run_schedule(tmp_path, seed=seed, steps=200)
