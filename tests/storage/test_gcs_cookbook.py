"""RlioStorage on gs:// (the enforcing emulator): the cookbook's semantics, its loops, the lease."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import cookbook_files, cookbook_readers, cookbook_two_sessions

from rlio import validate_run
from rlio.cookbook import RlioStorage
from rlio.errors import RunInUseError
from rlio.storage import open_storage


def test_protocol_semantics_on_gs(gs_uri: str) -> None:
    """write/read/append/stat/read_range/list_dir/remove keep the cookbook's meaning on gs://."""
    with RlioStorage(gs_uri) as s:
        assert s.url("metrics.jsonl") == gs_uri + "/metrics.jsonl"
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
        assert open_storage(gs_uri).read_bytes("log.jsonl") == b'{"a": 1}\n{"a": 2}\n'
        s.remove("dir/a.txt")
        s.remove("dir/a.txt")
        s.remove_dir("dir")
        assert not s.exists("dir/a.txt") and s.exists("dir/sub/b.txt")


def test_a_second_owner_is_refused_on_gs(gs_uri: str) -> None:
    """The run's lease object refuses a second RlioStorage while the first is open."""
    with RlioStorage(gs_uri) as s:
        s.append("metrics.jsonl", b'{"step": 0}\n')
        with pytest.raises(RunInUseError):
            RlioStorage(gs_uri)
    RlioStorage(gs_uri).close()


def test_cookbook_loops_on_gs_match_the_local_cookbook_run(gs_uri: str, tmp_path: Path) -> None:
    """A two-session cookbook loop (rewound on resume) written to gs:// through RlioStorage
    reads as the cookbook's own local run does, holds the same bytes, and validates clean."""
    stores = pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook (.ci/run)")
    cookbook_two_sessions(tmp_path / "cookbook", lambda _d: None)
    cookbook_two_sessions(gs_uri, RlioStorage)
    baseline = cookbook_readers(stores.TrainingRunStore(stores.LocalStorage(tmp_path / "cookbook")))
    with RlioStorage(gs_uri, attach=True) as attached:
        assert cookbook_readers(stores.TrainingRunStore(attached)) == baseline
    store = open_storage(gs_uri)
    theirs = cookbook_files(tmp_path / "cookbook")
    ours = {e.path: store.read_bytes(e.path) for e in store.walk() if e.path in theirs}
    assert ours == theirs
    assert b'"step": 4' in store.read_bytes("metrics.jsonl.superseded")
    report = validate_run(gs_uri)
    assert [f for f in report.findings if f.severity in ("error", "warning")] == []



def test_status_on_gs_follows_the_lease_object(gs_uri: str) -> None:
    """On gs:// a run is running while its lease object is live and stopped once released."""
    from rlio.status import run_status

    with RlioStorage(gs_uri) as s:
        s.append("metrics.jsonl", b'{"step": 0, "progress/batch": 0, "progress/done_frac": 0.5}\n')
        assert run_status(open_storage(gs_uri)).state == "running"
    after = run_status(open_storage(gs_uri))
    assert (after.state, after.last_step) == ("stopped", 0) and after.last_write is not None
