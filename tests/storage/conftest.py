"""Fixtures of the storage tests: the enforcing GCS emulator, Azurite behind a fault proxy, and
one run location per backend."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import azurite
from gcs_emulator import Emulator, serving

from rlio.storage import Storage, open_storage

BUCKET = "rlio-test"
CONTAINER = "rlio-test"


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[Emulator]:
    """The precondition-enforcing emulator on a free loopback port, for the whole session.

    ``STORAGE_EMULATOR_HOST`` is set for this process and the writer processes tests start, and
    restored at the end.
    """
    with serving(BUCKET) as emu:
        yield emu


@pytest.fixture
def emulator(gcs_emulator: Emulator) -> Iterator[Emulator]:
    """The session emulator with no fault rules and zeroed counters, before and after the test."""
    gcs_emulator.set_faults([])
    gcs_emulator.stats(reset=True)
    yield gcs_emulator
    gcs_emulator.set_faults([])


@pytest.fixture
def gs_uri(emulator: Emulator) -> str:
    """A fresh run URI on the emulator (a unique prefix per test)."""
    return f"gs://{BUCKET}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def azurite_proxy() -> Iterator[azurite.FaultProxy]:
    """Azurite on a free loopback port behind the fault proxy, for the whole session; skipped
    (with the reason) where azurite-blob is not installed (``.ci/run`` installs it)."""
    if azurite.binary() is None:
        pytest.skip("azurite-blob is not installed (.ci/run puts it in .ci/node)")
    with azurite.serving(CONTAINER) as proxy:
        yield proxy


@pytest.fixture
def az(azurite_proxy: azurite.FaultProxy) -> Iterator[azurite.FaultProxy]:
    """The session's proxy with no fault rules and zeroed counters, before and after the test."""
    azurite_proxy.set_faults([])
    azurite_proxy.stats(reset=True)
    yield azurite_proxy
    azurite_proxy.set_faults([])


@pytest.fixture
def az_uri(az: azurite.FaultProxy) -> str:
    """A fresh run URI on Azurite (a unique prefix per test)."""
    return f"az://{CONTAINER}/t-{uuid.uuid4().hex[:12]}"


def _memory_uri() -> str:
    return f"memory://rlio-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["local", "memory", "gs", "az"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh run location of each kind: a local folder, memory://, gs:// and az://
    (emulators)."""
    kind: str = request.param
    if kind == "local":
        return str(tmp_path / "run")
    if kind == "memory":
        return _memory_uri()
    if kind == "az":
        request.getfixturevalue("az")
        return f"az://{CONTAINER}/c-{uuid.uuid4().hex[:12]}"
    request.getfixturevalue("emulator")
    return f"gs://{BUCKET}/c-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(backend: str) -> Storage:
    """An opened (created) run of each backend."""
    return open_storage(backend, create=True)


@pytest.fixture
def reopen(backend: str) -> Callable[[], Storage]:
    """Open the same run again, as another writer or a reader would."""
    return lambda: open_storage(backend)
