"""The s3:// run lease against moto (conditional PutObject): refuse, renew, take over, lose."""

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
from s3_emulator import Emulator

from rlio import RunInUseError, RunWriter
from rlio.storage import open_storage
from rlio.storage.lease import LEASE_NAME
from rlio.storage.s3.lease import META_EXPIRES
from rlio.storage.s3.storage import S3Storage


def _lease(uri: str) -> dict[str, str] | None:
    st = open_storage(uri)
    assert isinstance(st, S3Storage)
    res = st.api.head(st.key(LEASE_NAME))
    return None if res is None else res.metadata


def test_a_second_s3_writer_is_refused_and_the_lease_goes_with_close(
        s3_uri: str, s3_emu: Emulator) -> None:
    """A live s3:// lease refuses a second RunWriter naming the holder; close expires it in
    place (its epoch kept for the next holder)."""
    with RunWriter(s3_uri) as run:
        run.log_metrics({"x": 0}, step=0)
        with pytest.raises(RunInUseError) as err:
            RunWriter(s3_uri)
        assert err.value.pid == os.getpid() and err.value.since
        assert _lease(s3_uri) is not None
    released = _lease(s3_uri)
    assert released is not None and released["rlio-lease-expires"] == "0"
    assert open_storage(s3_uri).lease_holder() is None
    RunWriter(s3_uri, resume=True).close()


@pytest.mark.slow
def test_the_lease_is_renewed_past_its_expiry_while_the_writer_lives(s3_uri: str,
                                                                     s3_emu: Emulator) -> None:
    """With lease_seconds=1.5 a live writer still holds the run 4 s later (renewed)."""
    with RunWriter(s3_uri, lease_seconds=1.5) as run:
        first = float(_lease(s3_uri)[META_EXPIRES])  # type: ignore[index]
        time.sleep(4.0)
        with pytest.raises(RunInUseError):
            RunWriter(s3_uri)
        assert float(_lease(s3_uri)[META_EXPIRES]) > first + 2  # type: ignore[index]
        run.log_metrics({"x": 0}, step=0)


_HOLDER = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1], lease_seconds=1.5)
    run.record_checkpoint("000001", batch=1, state_path="tinker://r/1")
    print("ready", flush=True)
    sys.stdin.readline()
""")


def test_a_killed_holders_lease_is_taken_over_once_expired(s3_uri: str,
                                                           s3_emu: Emulator) -> None:
    """SIGKILL a s3:// writer: refused while its lease lives, taken over after it expires."""
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, s3_uri], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    with pytest.raises(RunInUseError) as err:
        RunWriter(s3_uri)
    assert err.value.pid == p.pid
    deadline = time.monotonic() + 20
    while True:
        try:
            run = RunWriter(s3_uri, resume=True)
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


@pytest.mark.slow
def test_attached_s3_writers_append_exactly_once_beside_the_holder(s3_uri: str,
                                                                   s3_emu: Emulator) -> None:
    """Two attached processes x 40 checkpoints beside the lease holder: each record once."""
    with RunWriter(s3_uri) as run:
        procs = [subprocess.Popen([sys.executable, "-c", _ATTACHED, s3_uri, f"a{k}", "40"])
                 for k in range(2)]
        for i in range(20):
            run.record_checkpoint(f"h-{i:04d}", writer="h", seq=i)
        for p in procs:
            assert p.wait(timeout=300) == 0
    data = open_storage(s3_uri).read_bytes("checkpoints.jsonl")
    recs = [json.loads(x) for x in data.splitlines()]
    counts = Counter((r["writer"], r["seq"]) for r in recs)
    assert len(recs) == 100 and max(counts.values()) == 1


def test_a_holder_whose_lease_was_taken_over_knows_it_lost_it(s3_uri: str,
                                                              s3_emu: Emulator) -> None:
    """Once another writer rewrote the lease object, the holder's next renewal gets 412: lost."""
    st = open_storage(s3_uri, create=True)
    assert isinstance(st, S3Storage)
    lease = st.acquire_lease(lease_seconds=0.6)
    try:
        key = st.key(LEASE_NAME)
        cur = st.api.head(key)
        assert cur is not None
        st.api.put(key, b'{"host": "other", "pid": 1}', if_match=cur.etag,
                   metadata={META_EXPIRES: f"{time.time() + 60:.3f}", "rlio-lease-token": "x"})
        deadline = time.monotonic() + 20
        while not lease.lost:
            assert time.monotonic() < deadline, "the holder never noticed the takeover"
            time.sleep(0.05)
    finally:
        lease.release()
    assert st.api.head(st.key(LEASE_NAME)) is not None  # the taker's lease is left alone
