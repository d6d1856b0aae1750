"""RlioStorage on gs://, s3:// and az:// (the tests' emulators): the cookbook's semantics, its
loops, the lease and the run's status."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import cookbook_files, cookbook_readers, cookbook_two_sessions

from rlio import validate_run
from rlio.cookbook import RlioStorage
from rlio.errors import RunInUseError
from rlio.storage import open_storage


@pytest.fixture(params=["gs", "s3", "az"])
def remote_uri(request: pytest.FixtureRequest) -> str:
    """A fresh run URI on each object store's emulator."""
    uri: str = request.getfixturevalue(f"{request.param}_uri")
    return uri


@pytest.fixture(params=["gs", pytest.param("s3", marks=pytest.mark.slow),
                        pytest.param("az", marks=pytest.mark.slow)])
def loop_uri(request: pytest.FixtureRequest) -> str:
    """A fresh run URI for the longer loop test: gs:// by default, s3:// and az:// when slow."""
    uri: str = request.getfixturevalue(f"{request.param}_uri")
    return uri


def test_protocol_semantics_on_object_stores(remote_uri: str) -> None:
    """write/read/append/stat/read_range/list_dir/remove keep the cookbook's meaning on object
    stores."""
    with RlioStorage(remote_uri) as s:
        assert s.url("metrics.jsonl") == remote_uri + "/metrics.jsonl"
        assert s.stat("nope") is None and not s.exists("nope")
        with pytest.raises(FileNotFoundError):
            s.read("nope")
        s.write("dir/a.txt", b"0123456789")
        s.write("dir/sub/b.txt", b"")
        assert s.read_range("dir/a.txt", 3, 4) == b"3456"
        assert s.read_range("dir/a.txt", 3) == b"3456789"
        assert s.read_range("dir/a.txt", 40) == b""
        st = s.stat("dir/a.txt")
        assert st is not None and st.size == 10 and st.mtime > 1e9
        assert s.list_dir("dir") == ["a.txt", "sub"] and s.list_dir("missing") == []
        s.append("log.jsonl", b'{"a": 1}\n')
        s.append("log.jsonl", b'{"a": 2}\n')
        assert s.read("log.jsonl") == b'{"a": 1}\n{"a": 2}\n'  # no staging: on the store
        assert open_storage(remote_uri).read_bytes("log.jsonl") == b'{"a": 1}\n{"a": 2}\n'
        s.remove("dir/a.txt")
        s.remove("dir/a.txt")
        s.remove_dir("dir")
        assert not s.exists("dir/a.txt") and s.exists("dir/sub/b.txt")


def test_a_second_owner_is_refused_on_object_stores(remote_uri: str) -> None:
    """The run's lease object refuses a second RlioStorage while the first is open."""
    with RlioStorage(remote_uri) as s:
        s.append("metrics.jsonl", b'{"step": 0}\n')
        with pytest.raises(RunInUseError):
            RlioStorage(remote_uri)
    RlioStorage(remote_uri).close()


def test_cookbook_loops_on_object_stores_match_the_local_cookbook_run(loop_uri: str,
                                                                      tmp_path: Path) -> None:
    """A two-session cookbook loop (rewound on resume) written to a store through RlioStorage
    reads as the cookbook's own local run does, holds the same bytes, and validates clean."""
    stores = pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook (.ci/run)")
    cookbook_two_sessions(tmp_path / "cookbook", lambda _d: None)
    cookbook_two_sessions(loop_uri, RlioStorage)
    baseline = cookbook_readers(stores.TrainingRunStore(stores.LocalStorage(tmp_path / "cookbook")))
    with RlioStorage(loop_uri, attach=True) as attached:
        assert cookbook_readers(stores.TrainingRunStore(attached)) == baseline
    store = open_storage(loop_uri)
    theirs = cookbook_files(tmp_path / "cookbook")
    ours = {e.path: store.read_bytes(e.path) for e in store.walk() if e.path in theirs}
    assert ours == theirs
    assert b'"step": 4' in store.read_bytes("metrics.jsonl.superseded")
    report = validate_run(loop_uri)
    assert [f for f in report.findings if f.severity in ("error", "warning")] == []



def test_status_on_object_stores_follows_the_lease(remote_uri: str) -> None:
    """A run is running while its lease is live on the store and stopped once released."""
    from rlio.status import run_status

    with RlioStorage(remote_uri) as s:
        s.append("metrics.jsonl", b'{"step": 0, "progress/batch": 0, "progress/done_frac": 0.5}\n')
        assert run_status(open_storage(remote_uri)).state == "running"
    after = run_status(open_storage(remote_uri))
    assert (after.state, after.last_step) == ("stopped", 0) and after.last_write is not None
