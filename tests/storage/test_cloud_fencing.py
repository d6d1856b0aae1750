"""Fencing by the store on every object store (gs://, s3://, az://): a holder paused past its
lease, or one whose clock lies, lands and acknowledges nothing once another writer took the run
over; resume returns the live holder's last checkpoint; epochs grow across holders."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rlio import LeaseLostError, RunInUseError, RunWriter, read_resume_state
from rlio.storage import open_storage
from rlio.storage.lease import LEASE_NAME

CLOUDS = ["gs", "s3", "az"]


@pytest.fixture(params=CLOUDS)
def cloud_uri(request: pytest.FixtureRequest) -> str:
    """A fresh run location on each object store's emulator."""
    uri: str = request.getfixturevalue(f"{request.param}_contract_uri")
    return uri


def _records(uri: str, rel: str) -> list[dict[str, object]]:
    st = open_storage(uri)
    if st.stat(rel) is None:
        return []
    return [json.loads(x) for x in st.read_bytes(rel).splitlines() if x.strip()]


def _expire(uri: str) -> None:
    """Let the run's lease go now, as its expiry would: az:// breaks the service's blob lease
    (its shortest lease is 15 s); gs:// and s3:// leases of 1.5 s expire by themselves."""
    if not uri.startswith("az://"):
        return
    from azure.storage.blob import BlobLeaseClient

    from rlio.storage.azure.storage import AzureStorage

    st = open_storage(uri)
    assert isinstance(st, AzureStorage)
    BlobLeaseClient(st.api.blob(st.key(LEASE_NAME))).break_lease(lease_break_period=0)


def _take_over(uri: str, *, timeout: float = 30.0) -> RunWriter:
    """A new holder of ``uri`` with ``resume=True``, as soon as the old holder's lease is gone."""
    _expire(uri)
    deadline = time.monotonic() + timeout
    while True:
        try:
            return RunWriter(uri, resume=True, lease_seconds=1.5)
        except RunInUseError:
            assert time.monotonic() < deadline, "the old lease never expired"
            time.sleep(0.1)


def test_the_store_refuses_a_holder_that_does_not_know_it_lost(cloud_uri: str) -> None:
    """A holder whose renewals stopped and whose local expiry check is defeated still lands
    nothing after a takeover: the store refuses its batch, its retry reads the newer epoch and
    raises LeaseLostError; flush, checkpoints and close all raise; resume is the new holder's."""
    a = RunWriter(cloud_uri, lease_seconds=1.5)
    a.log_metrics({"x": 0}, step=0)
    a.record_checkpoint("000001", batch=1, state_path="tinker://a/1")
    lease = a._lease
    assert lease is not None
    lease._stop.set()  # type: ignore[attr-defined]  # a holder paused in its renewals
    b = _take_over(cloud_uri)
    assert b._lease is not None and b._lease.epoch > lease.epoch
    lease.valid_until = float("inf")  # a holder whose clock lies: only the store can stop it
    a.log_metrics({"x": 1}, step=1)  # buffered; its commit is refused
    with pytest.raises(LeaseLostError):
        a.flush()
    with pytest.raises(LeaseLostError):
        a.record_checkpoint("000009", batch=9, state_path="tinker://a/9")
    with pytest.raises(LeaseLostError):
        a.close()
    b.record_checkpoint("000002", batch=2, state_path="tinker://b/2")
    b.close()
    assert [r["step"] for r in _records(cloud_uri, "metrics.jsonl")] == [0]
    assert [r["state_path"] for r in _records(cloud_uri, "checkpoints.jsonl")] == [
        "tinker://a/1", "tinker://b/2"]
    state = read_resume_state(cloud_uri)
    assert state is not None and state.checkpoint["state_path"] == "tinker://b/2"


def test_epochs_grow_across_holders(cloud_uri: str) -> None:
    """Each holder of a run, after a release or a takeover, has a larger epoch than the last."""
    epochs = []
    for _ in range(3):
        with RunWriter(cloud_uri, resume=True, lease_seconds=1.5) as run:
            run.log_metrics({"x": 0}, step=len(epochs))
            assert run._lease is not None
            epochs.append(run._lease.epoch)
    assert epochs == sorted(set(epochs)) and epochs[0] >= 1


def test_a_run_whose_lease_object_was_deleted_stays_writable(cloud_uri: str) -> None:
    """Logs naming an epoch but no lease object (deleted, or the run copied without it): the
    next holder's epoch goes past the logs' own, so its appends are not refused."""
    with RunWriter(cloud_uri, resume=True, lease_seconds=1.5) as run:
        run.record_checkpoint("000001", batch=1, state_path="tinker://a/1")
        assert run._lease is not None
        first = run._lease.epoch
    open_storage(cloud_uri).remove(LEASE_NAME)
    with RunWriter(cloud_uri, resume=True, lease_seconds=1.5) as run:
        assert run._lease is not None and run._lease.epoch > first
        run.log_metrics({"x": 1}, step=1)
        run.record_checkpoint("000002", batch=2, state_path="tinker://b/2")
    state = read_resume_state(cloud_uri)
    assert state is not None and state.checkpoint["state_path"] == "tinker://b/2"


_LOOP = textwrap.dedent("""
    import sys
    from rlio import LeaseLostError, RunWriter
    run = RunWriter(sys.argv[1], lease_seconds=1.5)
    print("ready", flush=True)
    i = 0
    try:
        while True:
            run.log_metrics({"progress/batch": i, "x": i}, step=i)
            run.record_checkpoint(f"{i + 1:06d}", batch=i + 1, state_path=f"tinker://A/{i + 1}")
            print("ack", i + 1, flush=True)
            i += 1
    except LeaseLostError:
        print("lost", flush=True)
    try:
        run.close()
    except LeaseLostError:
        pass
""")


def _pause_and_take_over(uri: str, rng: random.Random) -> None:
    """One trial: a holder acknowledging checkpoints is SIGSTOPped at a random point (after 1
    to 6 acknowledgements, a random instant later) past its lease, taken over with resume=True,
    then continued: it raises LeaseLostError, none of its checkpoints or lines follows the new
    holder's, resume returns the new holder's checkpoint, every one it acknowledged is kept."""
    p = subprocess.Popen([sys.executable, "-c", _LOOP, uri], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    acks, before = 0, rng.randint(1, 6)
    while acks < before:
        line = p.stdout.readline()
        assert line.startswith(b"ack"), line
        acks += 1
    time.sleep(rng.uniform(0, 0.05))
    os.kill(p.pid, signal.SIGSTOP)
    try:
        if not uri.startswith("az://"):
            time.sleep(1.6)  # past its lease
        b = _take_over(uri)
        b.record_checkpoint("b", batch=100, state_path="tinker://B/100")
    finally:
        os.kill(p.pid, signal.SIGCONT)
    out = p.stdout.read().split()
    assert p.wait(timeout=60) == 0
    assert out[-1] == b"lost"
    acked = {f"tinker://A/{int(n)}" for n in out[1:-1:2]} | {
        f"tinker://A/{k}" for k in range(1, acks + 1)}
    time.sleep(0.5)  # a zombie's background commit would land about now
    b.log_metrics({"x": -1}, step=100)
    b.close()
    ledger = [r["state_path"] for r in _records(uri, "checkpoints.jsonl")]
    assert ledger[-1] == "tinker://B/100"
    assert acked <= set(ledger)
    steps = [r["step"] for r in _records(uri, "metrics.jsonl")]
    assert steps[-1] == 100 and len(steps) == len(set(steps))
    state = read_resume_state(uri)
    assert state is not None and state.checkpoint["state_path"] == "tinker://B/100"


def test_a_sigstopped_holder_acknowledges_nothing_after_the_takeover(cloud_uri: str) -> None:
    """One seeded pause/takeover trial per object store (``_pause_and_take_over``)."""
    _pause_and_take_over(cloud_uri, random.Random(0))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 9))
def test_seeded_pauses_and_takeovers(cloud_uri: str, seed: int) -> None:
    """More seeded pause/takeover trials per object store, each on a fresh run."""
    _pause_and_take_over(cloud_uri, random.Random(seed))
