"""The run lease on every object store (gs://, s3://, az://), written once: refuse a second
writer, renew, take over a killed holder's, lose a lease another writer took, attached writers."""

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
from clouds import ONE_BY_DEFAULT

from rlio import RunInUseError, RunWriter
from rlio.storage import open_storage
from rlio.storage.lease import LEASE_NAME
from rlio.storage.lease_object import META_EXPIRES, META_TOKEN
from rlio.storage.objects import ObjectStorage


# gs:// and s3:// run one lease object (lease_object): s3://'s rounds are under slow.
@pytest.fixture(params=["gs", pytest.param("s3", marks=pytest.mark.slow)])
def object_lease_uri(request: pytest.FixtureRequest) -> str:
    """A fresh run location on each store whose lease is an object (``lease_object``)."""
    uri: str = request.getfixturevalue(f"{request.param}_contract_uri")
    return uri


def _lease_meta(uri: str) -> dict[str, str] | None:
    st = open_storage(uri)
    assert isinstance(st, ObjectStorage)
    head = st._head(st.key(LEASE_NAME))
    return None if head is None else dict(head.metadata)


def test_a_second_writer_is_refused_and_the_lease_goes_with_close(cloud_uri: str) -> None:
    """A live lease refuses a second RunWriter naming the holder; close releases it, keeping
    its epoch, so the next holder's is one more."""
    with RunWriter(cloud_uri) as run:
        run.log_metrics({"x": 0}, step=0)
        with pytest.raises(RunInUseError) as err:
            RunWriter(cloud_uri)
        assert err.value.pid == os.getpid() and err.value.since
        assert open_storage(cloud_uri).lease_holder() is not None
        assert run._lease is not None
        first = run._lease.epoch
    assert open_storage(cloud_uri).lease_holder() is None
    with RunWriter(cloud_uri, resume=True) as again:
        assert again._lease is not None and again._lease.epoch == first + 1


def test_the_lease_is_renewed_past_its_expiry_while_the_writer_lives(
        object_lease_uri: str) -> None:
    """With lease_seconds=1.5 a live writer still holds the run 2 s later (renewed)."""
    uri = object_lease_uri
    with RunWriter(uri, lease_seconds=1.5) as run:
        first = float(_lease_meta(uri)[META_EXPIRES])  # type: ignore[index]
        time.sleep(2.0)
        with pytest.raises(RunInUseError):
            RunWriter(uri)
        assert float(_lease_meta(uri)[META_EXPIRES]) > first + 0.4  # type: ignore[index]
        run.log_metrics({"x": 0}, step=0)


def test_a_holder_whose_lease_was_taken_over_knows_it_lost_it(object_lease_uri: str) -> None:
    """Once another writer rewrote the lease object, the holder's next renewal is refused and
    finds another token: lost; its release leaves the taker's lease alone."""
    st = open_storage(object_lease_uri, create=True)
    assert isinstance(st, ObjectStorage)
    lease = st.acquire_lease(lease_seconds=0.6)
    key = st.key(LEASE_NAME)
    try:
        cur = st._head(key)
        assert cur is not None
        st._put_if(key, b'{"host": "other", "pid": 1}', {
            META_EXPIRES: f"{time.time() + 60:.3f}", META_TOKEN: "x"}, cur.version)
        deadline = time.monotonic() + 20
        while not lease.lost:
            assert time.monotonic() < deadline, "the holder never noticed the takeover"
            time.sleep(0.05)
    finally:
        lease.release()
    assert (_lease_meta(object_lease_uri) or {}).get(META_TOKEN) == "x"


_HOLDER = textwrap.dedent("""
    import sys
    from rlio import RunWriter
    run = RunWriter(sys.argv[1], lease_seconds=1.5)
    run.record_checkpoint("000001", batch=1, state_path="tinker://r/1")
    print("ready", flush=True)
    sys.stdin.readline()
""")


# gs:// and s3:// share one lease object (lease_object): s3:// repeats gs://'s round under slow;
# az://: its shortest lease is 15 s.
@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)
def test_a_killed_holders_lease_is_taken_over_once_expired(cloud_uri: str) -> None:
    """SIGKILL a writer: refused while its lease lives, taken over after it expires."""
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, cloud_uri], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"ready\n"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    with pytest.raises(RunInUseError) as err:
        RunWriter(cloud_uri)
    assert err.value.pid == p.pid
    deadline = time.monotonic() + 40
    while True:
        try:
            run = RunWriter(cloud_uri, resume=True)
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


# the default suite keeps one store: the appends are the one commit loop's
@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)
def test_attached_writers_append_exactly_once_beside_the_holder(cloud_uri: str) -> None:
    """Two attached processes x 40 checkpoints beside the lease holder: each record once."""
    uri = cloud_uri
    with RunWriter(uri) as run:
        procs = [subprocess.Popen([sys.executable, "-c", _ATTACHED, uri, f"a{k}", "40"])
                 for k in range(2)]
        for i in range(20):
            run.record_checkpoint(f"h-{i:04d}", writer="h", seq=i)
        for p in procs:
            assert p.wait(timeout=300) == 0
    data = open_storage(uri).read_bytes("checkpoints.jsonl")
    recs = [json.loads(x) for x in data.splitlines()]
    counts = Counter((r["writer"], r["seq"]) for r in recs)
    assert len(recs) == 100 and max(counts.values()) == 1
