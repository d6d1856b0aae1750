"""gs:// leases and ordered durability against the precondition-enforcing emulator: failed
renewals stop a holder before its lease expires, a vanished lease object is reported as such, a
checkpoint is never durable before the metrics logged ahead of it (the store's fencing of every
cloud: test_cloud_fencing.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from gcs_emulator import Emulator

from rlio import LeaseLostError, RunInUseError, RunWriter
from rlio.storage import open_storage
from rlio.storage.gcs.storage import GcsStorage
from rlio.storage.lease import LEASE_NAME


def _records(uri: str, rel: str) -> list[dict[str, object]]:
    st = open_storage(uri)
    if st.stat(rel) is None:
        return []
    return [json.loads(x) for x in st.read_bytes(rel).splitlines() if x.strip()]


def _take_over(uri: str, *, timeout: float = 30.0) -> RunWriter:
    """A new holder of ``uri``, as soon as the old holder's lease expired."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return RunWriter(uri, resume=True, lease_seconds=1.5)
        except RunInUseError:
            assert time.monotonic() < deadline, "the old lease never expired"
            time.sleep(0.1)


def test_a_storm_of_failed_renewals_stops_the_holder_before_its_lease_expires(
        gs_uri: str, emulator: Emulator) -> None:
    """Renewals answered 503: the holder stops acknowledging on its own (LeaseLostError) before
    another writer could take the run, so no checkpoint of it follows the taker's."""
    run = RunWriter(gs_uri, lease_seconds=1.5)
    run.record_checkpoint("000001", batch=1, state_path="tinker://A/1")
    emulator.set_faults([{"op": "upload", "name": r"\.rlio-lease$", "mode": "503",
                          "times": 10_000}])
    deadline = time.monotonic() + 30
    with pytest.raises(LeaseLostError, match="may have expired"):
        i = 1
        while time.monotonic() < deadline:
            i += 1
            run.record_checkpoint(f"{i:06d}", batch=i, state_path=f"tinker://A/{i}")
    last_acked = f"tinker://A/{i - 1}"
    emulator.set_faults([])
    with pytest.raises(LeaseLostError):
        run.close()
    b = _take_over(gs_uri)
    with b:
        assert b.resume_state is not None
        assert b.resume_state.checkpoint["state_path"] == last_acked
        b.record_checkpoint("b", batch=100, state_path="tinker://B/100")
    assert _records(gs_uri, "checkpoints.jsonl")[-1]["state_path"] == "tinker://B/100"


def test_a_vanished_lease_object_is_reported_as_such(gs_uri: str, emulator: Emulator) -> None:
    """The lease object deleted under its holder (a store reset): the holder's verbs raise
    LeaseLostError saying the object vanished, not that another writer took over."""
    run = RunWriter(gs_uri, lease_seconds=1.5)
    st = open_storage(gs_uri)
    assert isinstance(st, GcsStorage)
    st.api.delete(st.key(LEASE_NAME))
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


def test_a_checkpoint_is_durable_only_after_the_metrics_logged_before_it(
        gs_uri: str, emulator: Emulator) -> None:
    """SIGKILL right after record_checkpoint returned: every metrics line logged before it is
    in metrics.jsonl (the batch was committed first), so resume starts past nothing lost."""
    n = 40
    p = subprocess.Popen([sys.executable, "-c", _PREEMPTED, gs_uri, str(n)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"checkpointed\n"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    assert [r["step"] for r in _records(gs_uri, "metrics.jsonl")] == list(range(n))


def test_an_attached_gs_append_never_glues_onto_a_torn_tail(gs_uri: str,
                                                            emulator: Emulator) -> None:
    """A gs:// log ending in a crash's fragment: an attached writer's batch starts on a new
    line, so the fragment stays crash damage and the new record reads whole."""
    RunWriter(gs_uri).close()
    st = open_storage(gs_uri)
    assert isinstance(st, GcsStorage)
    st.api.delete(st.key("metrics.jsonl"))
    st.replace("metrics.jsonl", b'{"step": 0, "x": 1}\n{"step": 1, "x')
    with RunWriter(gs_uri, attach=True) as run:
        run.log_metrics({"eval/acc": 0.75}, step=0)
    assert st.read_bytes("metrics.jsonl") == (
        b'{"step": 0, "x": 1}\n{"step": 1, "x\n{"step":0,"eval/acc":0.75}\n')
