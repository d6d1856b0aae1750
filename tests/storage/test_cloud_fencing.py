"""Fencing and ordered durability on every object store (gs://, s3://, az://): a holder paused
past its lease, or one whose clock lies, lands and acknowledges nothing once another writer took
the run over; failed renewals stop a holder before its lease expires; a vanished lease object is
reported as such; resume returns the live holder's last checkpoint; epochs grow across holders;
a checkpoint is never durable before the metrics logged ahead of it."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from clouds import ONE_BY_DEFAULT, OPS, records, take_over

from rlio import LeaseLostError, RunWriter, read_resume_state
from rlio.storage import open_storage
from rlio.storage.lease import LEASE_NAME
from rlio.storage.objects import ObjectStorage


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
    b = take_over(cloud_uri)
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
    assert [r["step"] for r in records(cloud_uri, "metrics.jsonl")] == [0]
    assert [r["state_path"] for r in records(cloud_uri, "checkpoints.jsonl")] == [
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


def _pause_andtake_over(uri: str, rng: random.Random) -> None:
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
        b = take_over(uri)
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
    ledger = [r["state_path"] for r in records(uri, "checkpoints.jsonl")]
    assert ledger[-1] == "tinker://B/100"
    assert acked <= set(ledger)
    steps = [r["step"] for r in records(uri, "metrics.jsonl")]
    assert steps[-1] == 100 and len(steps) == len(set(steps))
    state = read_resume_state(uri)
    assert state is not None and state.checkpoint["state_path"] == "tinker://B/100"


def test_a_sigstopped_holder_acknowledges_nothing_after_the_takeover(cloud_uri: str) -> None:
    """One seeded pause/takeover trial per object store (``_pause_and_take_over``)."""
    _pause_andtake_over(cloud_uri, random.Random(0))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 9))
def test_seeded_pauses_and_takeovers(cloud_uri: str, seed: int) -> None:
    """More seeded pause/takeover trials per object store, each on a fresh run."""
    _pause_andtake_over(cloud_uri, random.Random(seed))


@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)  # az://: its shortest lease is 15 s
def test_a_storm_of_failed_renewals_stops_the_holder_before_its_lease_expires(
        cloud: str, cloud_uri: str, cloud_emulator: Any) -> None:
    """Renewals answered 503: the holder stops acknowledging on its own (LeaseLostError) before
    another writer could take the run, so no checkpoint of it follows the taker's."""
    run = RunWriter(cloud_uri, lease_seconds=1.5)
    run.record_checkpoint("000001", batch=1, state_path="tinker://A/1")
    cloud_emulator.set_faults([{"op": OPS[cloud]["renew"], "name": re.escape(LEASE_NAME) + "$",
                                "mode": "503", "times": 10_000}])
    deadline = time.monotonic() + 60
    with pytest.raises(LeaseLostError, match="may have expired"):
        i = 1
        while time.monotonic() < deadline:
            i += 1
            run.record_checkpoint(f"{i:06d}", batch=i, state_path=f"tinker://A/{i}")
    last_acked = f"tinker://A/{i - 1}"
    cloud_emulator.set_faults([])
    with pytest.raises(LeaseLostError):
        run.close()
    with take_over(cloud_uri, timeout=60) as b:
        assert b.resume_state is not None
        assert b.resume_state.checkpoint["state_path"] == last_acked
        b.record_checkpoint("b", batch=100, state_path="tinker://B/100")
    assert records(cloud_uri, "checkpoints.jsonl")[-1]["state_path"] == "tinker://B/100"


# az://'s lease is the service's lease on a blob the service will not delete while it is held
@pytest.mark.parametrize("cloud", ["gs", pytest.param("s3", marks=pytest.mark.slow)])
def test_a_vanished_lease_object_is_reported_as_such(cloud_uri: str) -> None:
    """The lease object deleted under its holder (a store reset): the holder's verbs raise
    LeaseLostError saying the object vanished, not that another writer took over."""
    run = RunWriter(cloud_uri, lease_seconds=1.5)
    open_storage(cloud_uri).remove(LEASE_NAME)
    deadline = time.monotonic() + 30
    with pytest.raises(LeaseLostError, match="vanished") as err:
        while time.monotonic() < deadline:
            run.record_checkpoint("000001", batch=1, state_path="tinker://A/1")
            time.sleep(0.05)
    assert "took" not in str(err.value)
    with pytest.raises(LeaseLostError):
        run.close()


_PREEMPTED = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1], lease_seconds=60)
    for i in range(int(sys.argv[2])):
        run.log_metrics({"progress/batch": i, "x": i}, step=i)
    run.record_checkpoint("000001", batch=int(sys.argv[2]), state_path="tinker://r/1")
    print("checkpointed", flush=True)
    sys.stdin.readline()  # preempted here (SIGKILL)
""")


@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)
def test_a_checkpoint_is_durable_only_after_the_metrics_logged_before_it(cloud_uri: str) -> None:
    """SIGKILL right after record_checkpoint returned: every metrics line logged before it is
    in metrics.jsonl (the batch was committed first), so resume starts past nothing lost."""
    n = 40
    p = subprocess.Popen([sys.executable, "-c", _PREEMPTED, cloud_uri, str(n)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"checkpointed\n"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    p.stdout.close()
    assert p.stdin is not None
    p.stdin.close()
    assert [r["step"] for r in records(cloud_uri, "metrics.jsonl")] == list(range(n))


def test_an_attached_append_never_glues_onto_a_torn_tail(cloud_uri: str) -> None:
    """A log ending in a crash's fragment: an attached writer's batch starts on a new line, so
    the fragment stays crash damage and the new record reads whole."""
    RunWriter(cloud_uri).close()
    st = open_storage(cloud_uri)
    assert isinstance(st, ObjectStorage)
    st._delete(st.key("metrics.jsonl"))
    st.replace("metrics.jsonl", b'{"step": 0, "x": 1}\n{"step": 1, "x')
    with RunWriter(cloud_uri, attach=True) as run:
        run.log_metrics({"eval/acc": 0.75}, step=0)
    assert st.read_bytes("metrics.jsonl") == (
        b'{"step": 0, "x": 1}\n{"step": 1, "x\n{"step":0,"eval/acc":0.75}\n')
