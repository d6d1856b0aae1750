"""The az:// run lease (an Azure blob lease on .rlio-lease) against Azurite: refuse, renew,
fence a holder the service no longer knows, take over after a SIGKILL."""

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
from azurite import FaultProxy

from rlio import LeaseLostError, RunInUseError, RunWriter
from rlio.storage import open_storage
from rlio.storage.azure.lease import AzureLease, duration
from rlio.storage.azure.storage import AzureStorage
from rlio.storage.lease import LEASE_NAME


def _lease_state(uri: str) -> tuple[str, bytes] | None:
    """The lease blob's Azure lease state and its bytes (None when there is none)."""
    st = open_storage(uri)
    assert isinstance(st, AzureStorage)
    try:
        p = st.api.blob(st.key(LEASE_NAME)).get_blob_properties()
    except Exception:
        return None
    return str(p.lease.state), st.api.read_ranged(st.key(LEASE_NAME), 0)[0]


def test_durations_are_what_azure_grants() -> None:
    """lease_seconds maps onto Azure's 15..60 s lease durations."""
    assert [duration(s) for s in (1.5, 15, 40.4, 60, 3600)] == [15, 15, 40, 60, 60]


def test_a_second_az_writer_is_refused_and_the_lease_goes_with_close(
        az_uri: str, az: FaultProxy) -> None:
    """A live az:// lease refuses a second RunWriter naming the holder; close releases it (the
    blob and its record stay, so the next holder's epoch is one more)."""
    with RunWriter(az_uri) as run:
        run.log_metrics({"x": 0}, step=0)
        with pytest.raises(RunInUseError) as err:
            RunWriter(az_uri)
        assert err.value.pid == os.getpid() and err.value.since
        state = _lease_state(az_uri)
        assert state is not None and state[0] == "leased"
        assert json.loads(state[1])["pid"] == os.getpid()
    state = _lease_state(az_uri)
    assert state is not None and state[0] == "available"
    assert open_storage(az_uri).lease_holder() is None
    with RunWriter(az_uri, resume=True) as again:
        assert again._lease is not None and again._lease.epoch == json.loads(state[1])["epoch"] + 1


def test_a_holder_whose_lease_another_writer_took_is_fenced(az_uri: str, az: FaultProxy) -> None:
    """Once another lease id holds the blob, the old holder's renewal is refused by the service:
    its lease is lost and the writer acknowledges nothing more."""
    run = RunWriter(az_uri)
    run.log_metrics({"x": 0}, step=0)
    lease = run._lease
    assert isinstance(lease, AzureLease)
    assert lease.renew() is True and not lease.lost  # the service renews its own holder's
    now = time.monotonic()
    assert now + lease.seconds - 5 < lease.valid_until < now + lease.seconds  # less the margin
    st = open_storage(az_uri)
    assert isinstance(st, AzureStorage)
    from azure.storage.blob import BlobLeaseClient

    BlobLeaseClient(st.api.blob(st.key(LEASE_NAME))).break_lease(lease_break_period=0)
    st.api.blob(st.key(LEASE_NAME)).acquire_lease(lease_duration=15)  # another writer's now
    assert lease.renew() is False and lease.lost
    with pytest.raises(LeaseLostError):
        run.log_metrics({"x": 1}, step=1)
    with pytest.raises(LeaseLostError):  # close acknowledges nothing either
        run.close()
    state = _lease_state(az_uri)
    assert state is not None and state[0] == "leased"  # the new holder's lease was left alone


_HOLDER = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1], lease_seconds=15)
    run.record_checkpoint("000001", batch=1, state_path="tinker://r/1")
    print("ready", flush=True)
    sys.stdin.readline()
""")


@pytest.mark.slow
def test_a_killed_holders_lease_is_taken_over_once_expired(az_uri: str, az: FaultProxy) -> None:
    """SIGKILL an az:// writer: refused while its 15 s lease lives, taken over after it expires."""
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, az_uri], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    with pytest.raises(RunInUseError) as err:
        RunWriter(az_uri)
    assert err.value.pid == p.pid
    deadline = time.monotonic() + 40
    while True:
        try:
            run = RunWriter(az_uri, resume=True)
            break
        except RunInUseError:
            assert time.monotonic() < deadline
            time.sleep(0.5)
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


@pytest.mark.slow  # a few seconds of requests; the default suite keeps one of each kind
def test_attached_az_writers_append_exactly_once_beside_the_holder(az_uri: str,
                                                                   az: FaultProxy) -> None:
    """Two attached processes x 40 checkpoints beside the lease holder: each record once."""
    with RunWriter(az_uri) as run:
        procs = [subprocess.Popen([sys.executable, "-c", _ATTACHED, az_uri, f"a{k}", "40"])
                 for k in range(2)]
        for i in range(20):
            run.record_checkpoint(f"h-{i:04d}", writer="h", seq=i)
        for p in procs:
            assert p.wait(timeout=300) == 0
    data = open_storage(az_uri).read_bytes("checkpoints.jsonl")
    recs = [json.loads(x) for x in data.splitlines()]
    counts = Counter((r["writer"], r["seq"]) for r in recs)
    assert len(recs) == 100 and max(counts.values()) == 1
