"""open_run on gs:// and s3:// (the storage tests' enforcing emulators): the same records as the
local copy of the run."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import cookbook_run

from rlio import layout
from rlio.reader import open_run
from rlio.storage import open_storage

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "storage"))
import gcs_emulator
import s3_emulator

pytestmark = [pytest.mark.gcs, pytest.mark.s3]
BUCKET = "rlio-reader"
#: Each remote scheme and the emulator module serving it.
EMULATORS = {"gs": gcs_emulator, "s3": s3_emulator}


@pytest.fixture(scope="module", params=sorted(EMULATORS))
def remote(request: pytest.FixtureRequest) -> Iterator[str]:
    """A URI scheme whose emulator serves on a free loopback port, for this module."""
    scheme: str = request.param
    with EMULATORS[scheme].serving(BUCKET):
        yield scheme


def _upload(local: Path, scheme: str) -> str:
    """Copy a local run to a fresh prefix of ``scheme``, file by file; returns its URI."""
    uri = f"{scheme}://{BUCKET}/r-{uuid.uuid4().hex[:12]}"
    store = open_storage(uri, create=True)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            store.replace(path.relative_to(local).as_posix(), path.read_bytes())
    return uri


@pytest.mark.parametrize("layout_name", ["flat", "nested"])
def test_a_remote_run_reads_like_its_local_copy(remote: str, tmp_path: Path,
                                                layout_name: layout.Layout) -> None:
    """Metrics, checkpoints, iterations, rollouts, conversations and resume match the local run."""
    local = cookbook_run(tmp_path / "run", 3, layout_name=layout_name)
    with (local / layout.METRICS).open("ab") as f:
        f.write(b'{"step": 9, "torn')  # a torn tail, skipped on both
    a, b = open_run(local), open_run(_upload(local, remote))
    assert b.layout == a.layout == layout_name
    assert repr(b.metrics()) == repr(a.metrics())
    assert b.checkpoints() == a.checkpoints()
    assert [(i.index, i.evaluators) for i in b.iterations()] == [
        (i.index, i.evaluators) for i in a.iterations()]
    assert repr(list(b.rollouts())) == repr(list(a.rollouts()))
    assert list(b.conversations(0)) == list(a.conversations(0))
    sa, sb = a.resume_state(), b.resume_state()
    assert sa is not None and sb is not None
    assert (sb.next_batch, sb.line, sb.checkpoint) == (sa.next_batch, sa.line, sa.checkpoint)
    assert list(b.metrics_frame().columns) == list(a.metrics_frame().columns)
    assert len(list(b.follow_metrics(poll=0, idle_timeout=0))) == len(a.metrics())
