"""Helpers the object-store tests share: a run's records, taking a run over once its holder's
lease is gone, the writer processes they start and kill, and each store's name for the request
kinds fault rules name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from rlio import RunInUseError, RunWriter
from rlio.storage import open_storage
from rlio.storage.lease import LEASE_NAME

CLOUDS = ["gs", "s3", "az"]
#: For ``parametrize("cloud", ...)`` where one store covers a behaviour in the default suite.
ONE_BY_DEFAULT = ["gs", pytest.param("s3", marks=pytest.mark.slow),
                  pytest.param("az", marks=pytest.mark.slow)]

#: Each emulator's op (``faults.py``) for: a whole-object write, the conditional rewrite of a
#: log (``move_tail``), the lease's renewal, a listing.
OPS = {
    "gs": {"put": "upload", "rewrite": "upload", "renew": "upload", "list": "list"},
    "s3": {"put": "put", "rewrite": "put", "renew": "put", "list": "list"},
    "az": {"put": "put", "rewrite": "copy", "renew": "lease", "list": "list"},
}

#: A writer attached beside the run's holder: ``uri tag n``; prints each acknowledged seq.
ATTACHED = r"""
import sys
from rlio import RunWriter

uri, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with RunWriter(uri, attach=True) as run:  # a helper beside the run's writer: no lease
    for i in range(n):
        run.record_checkpoint(f"{tag}-{i:06d}", writer=tag, seq=i)
        print(i, flush=True)  # acknowledged: record_checkpoint has returned
"""

#: The run's holder (short lease, resumes): ``uri n``; prints each acknowledged batch.
OWNER = r"""
import sys
from rlio import RunWriter, read_resume_state

uri = sys.argv[1]
# resume=True: an attached writer may have recorded into the run before this one opens it
with RunWriter(uri, lease_seconds=2.0, resume=True) as run:
    state = read_resume_state(run.log_path)  # None on a fresh run
    start = state.next_batch if state else 0
    run.write_config({"lr": 1e-4, "seed": 0})
    for i in range(start, start + int(sys.argv[2])):
        run.log_metrics({"progress/batch": i, "env/all/reward/total": 0.5}, step=i)
        run.record_checkpoint(f"{i + 1:06d}", batch=i + 1,
                              state_path=f"tinker://run/weights/{i + 1:06d}")
        print(i + 1, flush=True)  # acknowledged: record_checkpoint has returned
"""


def scheme(uri: str) -> str:
    """``gs``, ``s3`` or ``az``."""
    return uri.split("://", 1)[0]


def records(uri: str, rel: str) -> list[dict[str, Any]]:
    """The records of a run's log (none when it is missing); raises on a torn line."""
    st = open_storage(uri)
    if st.stat(rel) is None:
        return []
    data = st.read_bytes(rel)
    assert data.endswith(b"\n"), data[-80:]
    return [json.loads(x) for x in data.splitlines()]


def expire(uri: str) -> None:
    """Let the run's lease go now, as its expiry would: az:// breaks the service's blob lease
    (its shortest lease is 15 s); gs:// and s3:// leases of a few seconds expire by themselves."""
    if scheme(uri) != "az":
        return
    from azure.storage.blob import BlobLeaseClient

    from rlio.storage.azure.storage import AzureStorage

    st = open_storage(uri)
    assert isinstance(st, AzureStorage)
    BlobLeaseClient(st.api.blob(st.key(LEASE_NAME))).break_lease(lease_break_period=0)


def take_over(uri: str, *, timeout: float = 30.0) -> RunWriter:
    """A new holder of ``uri`` with ``resume=True``, as soon as the old holder's lease is gone."""
    expire(uri)
    deadline = time.monotonic() + timeout
    while True:
        try:
            return RunWriter(uri, resume=True, lease_seconds=1.5)
        except RunInUseError:
            assert time.monotonic() < deadline, "the old lease never expired"
            time.sleep(0.1)


def start(code: str, *args: str) -> subprocess.Popen[str]:
    """A Python process running ``code`` with ``args``, its output piped."""
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def kill_after(proc: subprocess.Popen[str], acks: int) -> list[int]:
    """SIGKILL ``proc`` once it acknowledged ``acks`` records; what it acknowledged."""
    assert proc.stdout is not None and proc.stderr is not None
    seen: list[int] = []
    for line in proc.stdout:
        seen.append(int(line))
        if len(seen) >= acks:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    proc.stderr.close()
    return seen


def acked(proc: subprocess.Popen[str]) -> list[int]:
    """Wait for a writer process to finish cleanly; what it acknowledged."""
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return [int(x) for x in out.split()]


def feed(st: Any, rel: str, tags: tuple[str, ...], n: int,
         durable: Callable[[int], bool] = lambda i: i % 3 != 0) -> None:
    """Each tag's thread appends ``n`` records ``{"w": tag, "i": i}`` to ``rel`` through its own
    appender, durably where ``durable(i)`` (the others wait for the timer or close)."""
    def one(tag: str) -> None:
        app = st.appender(rel)
        for i in range(n):
            line = json.dumps({"w": tag, "i": i}).encode() + b"\n"
            (app.append_durable if durable(i) else app.append)(line)
        app.close()

    threads = [threading.Thread(target=one, args=(t,)) for t in tags]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def assert_each_once(data: bytes, tags: tuple[str, ...], n: int) -> None:
    """``feed``'s records are each in ``data`` once, whole, each writer's in order."""
    got = [json.loads(line) for line in data.splitlines()]
    assert sorted((r["w"], r["i"]) for r in got) == sorted((w, i) for w in tags for i in range(n))
    for w in tags:
        assert [r["i"] for r in got if r["w"] == w] == list(range(n))


#: 64 metrics lines of about 150 bytes: one batch, for what an append costs.
BATCH = b"".join(b'{"step": %d, "loss": 0.125, "pad": "%s"}\n' % (i, b"x" * 100)
                 for i in range(64))


def append(st: Any, rel: str, data: bytes) -> None:
    """Append ``data`` durably through a fresh appender of ``st``, then close it."""
    app = st.appender(rel)
    try:
        app.append_durable(data)
    finally:
        app.close()
