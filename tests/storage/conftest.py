"""Fixtures of the storage tests: the emulators and one run location per backend."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import azurite
import s3_emulator
from clouds import CLOUDS
from faults import E
from gcs_emulator import Emulator, serving

from rlio.storage import Storage, open_storage

BUCKET = "rlio-test"
CONTAINER = "rlio-test"
#: One marker scheme: a test that starts (or shares) a cloud's emulator carries its marker,
#: found from the session fixture it uses or the backend it is parametrized with.
_FIXTURE_MARKS = {"gcs_emulator": "gcs", "s3_session_emulator": "s3", "azurite_proxy": "azure"}
_PARAM_MARKS = {"gs": "gcs", "s3": "s3", "az": "azure"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tag every emulator-backed test with its cloud's marker (``-m gcs``, ``s3``, ``azure``)."""
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        marks = {mark for fixture, mark in _FIXTURE_MARKS.items() if fixture in names}
        marks |= {_PARAM_MARKS[v] for v in params.values() if isinstance(v, str)
                  and v in _PARAM_MARKS}
        for mark in sorted(marks):
            if item.get_closest_marker(mark) is None:
                item.add_marker(mark)


def _cleared(emu: E) -> Iterator[E]:
    """A session's emulator with no fault rules and zeroed counters, before and after a test."""
    emu.set_faults([])
    emu.stats(reset=True)
    yield emu
    emu.set_faults([])


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
    yield from _cleared(gcs_emulator)


@pytest.fixture(scope="session")
def s3_session_emulator() -> Iterator[s3_emulator.Emulator]:
    """moto behind the precondition-enforcing layer on a free loopback port, for the session;
    the standard AWS variables point at it meanwhile (and in writer processes tests start)."""
    with s3_emulator.serving(BUCKET) as emu:
        yield emu


@pytest.fixture
def s3_emu(s3_session_emulator: s3_emulator.Emulator) -> Iterator[s3_emulator.Emulator]:
    """The session S3 emulator with no fault rules and zeroed counters, before and after."""
    yield from _cleared(s3_session_emulator)


@pytest.fixture
def s3_uri(s3_emu: s3_emulator.Emulator) -> str:
    """A fresh s3:// run URI on the emulator (a unique prefix per test)."""
    return f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"


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
    yield from _cleared(azurite_proxy)


@pytest.fixture
def az_uri(az: azurite.FaultProxy) -> str:
    """A fresh az:// run URI on Azurite (a unique prefix per test)."""
    return f"az://{CONTAINER}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def gs_uri(emulator: Emulator) -> str:
    """A fresh run URI on the emulator (a unique prefix per test)."""
    return f"gs://{BUCKET}/t-{uuid.uuid4().hex[:12]}"


#: The backends the storage contract suite runs against. A backend joins by adding its name here
#: and a fixture ``<name>_contract_uri`` giving a fresh (not yet created) run location.
CONTRACT_BACKENDS = ["local", "memory", "gs", "s3", "az"]


@pytest.fixture
def local_contract_uri(tmp_path: Path) -> str:
    """A fresh local run folder."""
    return str(tmp_path / "run")


@pytest.fixture
def memory_contract_uri() -> str:
    """A fresh memory:// run."""
    return f"memory://rlio-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def gs_contract_uri(emulator: Emulator) -> str:
    """A fresh gs:// run on the enforcing emulator."""
    return f"gs://{BUCKET}/c-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def s3_contract_uri(s3_emu: s3_emulator.Emulator) -> str:
    """A fresh s3:// run on the enforcing S3 emulator."""
    return f"s3://{BUCKET}/c-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def az_contract_uri(az: azurite.FaultProxy) -> str:
    """A fresh az:// run on Azurite."""
    return f"az://{CONTAINER}/c-{uuid.uuid4().hex[:12]}"


#: ``cloud_uri`` runs a test on each object store (``clouds.CLOUDS``; ``clouds.ONE_BY_DEFAULT``
#: where one store covers the behaviour in the default suite).
_EMULATORS = {"gs": "emulator", "s3": "s3_emu", "az": "az"}


@pytest.fixture(params=CLOUDS)
def cloud(request: pytest.FixtureRequest) -> str:
    """Each object store's scheme."""
    name: str = request.param
    return name


@pytest.fixture
def cloud_uri(cloud: str, request: pytest.FixtureRequest) -> str:
    """A fresh run location on the ``cloud``'s emulator."""
    uri: str = request.getfixturevalue(f"{cloud}_contract_uri")
    return uri


@pytest.fixture
def cloud_emulator(cloud: str, request: pytest.FixtureRequest) -> Any:
    """The ``cloud``'s emulator (or proxy), with no fault rules and zeroed counters: every one
    answers ``set_faults``, ``injected()`` and ``stats()`` (``faults.py``)."""
    return request.getfixturevalue(_EMULATORS[cloud])


@pytest.fixture(params=CONTRACT_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """A fresh run location of each kind in ``CONTRACT_BACKENDS``."""
    uri: str = request.getfixturevalue(f"{request.param}_contract_uri")
    return uri


@pytest.fixture
def store(backend: str) -> Storage:
    """An opened (created) run of each backend."""
    return open_storage(backend, create=True)


@pytest.fixture
def reopen(backend: str) -> Callable[[], Storage]:
    """Open the same run again, as another writer or a reader would."""
    return lambda: open_storage(backend)
