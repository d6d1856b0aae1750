"""The az:// run lease (an Azure blob lease on .rlio-lease) against Azurite: refuse, renew,
fence a holder the service no longer knows (the rest is tests/storage/test_cloud_lease.py)."""

from __future__ import annotations

import time

import pytest
from azurite import FaultProxy

from rlio import LeaseLostError, RunWriter
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
