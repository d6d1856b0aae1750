"""The gs:// run lease against the precondition-enforcing emulator: refuse, renew, take over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest
from gcs_emulator import Emulator

from rlio import RunInUseError, RunWriter
from rlio.storage import open_storage
from rlio.storage.gcs.lease import META_EXPIRES
from rlio.storage.gcs.storage import GcsStorage
from rlio.storage.lease import LEASE_NAME


def _lease(uri: str) -> dict[str, str] | None:
    st = open_storage(uri)
    assert isinstance(st, GcsStorage)
    res = st.api.get(st.key(LEASE_NAME))
    return None if res is None else dict(res.get("metadata") or {})


def test_a_second_gs_writer_is_refused_and_the_lease_goes_with_close(
        gs_uri: str, emulator: Emulator) -> None:
    """A live gs:// lease refuses a second RunWriter naming the holder; close deletes it."""
    with RunWriter(gs_uri) as run:
        run.log_metrics({"x": 0}, step=0)
        with pytest.raises(RunInUseError) as err:
            RunWriter(gs_uri)
        assert err.value.pid == os.getpid() and err.value.since
        assert _lease(gs_uri) is not None
    assert _lease(gs_uri) is None
    RunWriter(gs_uri, resume=True).close()


def test_the_lease_is_renewed_past_its_expiry_while_the_writer_lives(gs_uri: str,
                                                                     emulator: Emulator) -> None:
    """With lease_seconds=1.5 a live writer still holds the run 4 s later (renewed)."""
    with RunWriter(gs_uri, lease_seconds=1.5) as run:
        first = float(_lease(gs_uri)[META_EXPIRES])  # type: ignore[index]
        time.sleep(4.0)
        with pytest.raises(RunInUseError):
            RunWriter(gs_uri)
        assert float(_lease(gs_uri)[META_EXPIRES]) > first + 2  # type: ignore[index]
        run.log_metrics({"x": 0}, step=0)


_HOLDER = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1], lease_seconds=1.5)
    run.record_checkpoint("000001", batch=1, state_path="tinker://r/1")
    print("ready", flush=True)
    sys.stdin.readline()
""")


def test_a_killed_holders_lease_is_taken_over_once_expired(gs_uri: str,
                                                           emulator: Emulator) -> None:
    """SIGKILL a gs:// writer: refused while its lease lives, taken over after it expires."""
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, gs_uri], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    with pytest.raises(RunInUseError) as err:
        RunWriter(gs_uri)
    assert err.value.pid == p.pid
    deadline = time.monotonic() + 20
    while True:
        try:
            run = RunWriter(gs_uri, resume=True)
            break
        except RunInUseError:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    with run:
        assert run.resume_state is not None and run.resume_state.next_batch == 1


_ATTACHED = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    uri, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with RunWriter(uri, attach=True) as run:
        for i in range(n):
            run.record_checkpoint(f"{tag}-{i:04d}", writer=tag, seq=i)
""")


def test_attached_gs_writers_append_exactly_once_beside_the_holder(gs_uri: str,
                                                                   emulator: Emulator) -> None:
    """Two attached processes x 40 checkpoints beside the lease holder: each record once."""
    with RunWriter(gs_uri) as run:
        procs = [subprocess.Popen([sys.executable, "-c", _ATTACHED, gs_uri, f"a{k}", "40"])
                 for k in range(2)]
        for i in range(20):
            run.record_checkpoint(f"h-{i:04d}", writer="h", seq=i)
        for p in procs:
            assert p.wait(timeout=300) == 0
    data = open_storage(gs_uri).read_bytes("checkpoints.jsonl")
    recs = [json.loads(x) for x in data.splitlines()]
    counts = Counter((r["writer"], r["seq"]) for r in recs)
    assert len(recs) == 100 and max(counts.values()) == 1
