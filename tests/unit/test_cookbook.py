"""rlio.cookbook.RlioStorage keeps the cookbook's Storage semantics and adds rlio's guarantees.

These are rlio's own tests of the semantics the cookbook's protocol documents (paths relative to
the root, a missing file's stat is None, read_range past the end, list_dir of a missing prefix);
tests/unit/test_cookbook_loops.py runs the real cookbook's stores and loggers through it.
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

import pytest

from rlio import validate_run
from rlio.cookbook import RlioStorage
from rlio.errors import RlioError, RunInUseError, RunNotFoundError


@pytest.fixture
def storage(tmp_path: Path) -> RlioStorage:
    """A fresh local run through RlioStorage, closed after the test."""
    s = RlioStorage(tmp_path / "run")
    yield s  # type: ignore[misc]
    s.close()


def test_write_read_and_parents(storage: RlioStorage, tmp_path: Path) -> None:
    """write creates parent folders and read returns the bytes written."""
    storage.write("a/b/c.txt", b"deep")
    assert storage.read("a/b/c.txt") == b"deep"
    assert (tmp_path / "run" / "a" / "b" / "c.txt").read_bytes() == b"deep"


def test_read_missing_raises_file_not_found(storage: RlioStorage) -> None:
    """read and read_range of a missing file raise FileNotFoundError."""
    with pytest.raises(FileNotFoundError):
        storage.read("nope.txt")
    with pytest.raises(FileNotFoundError):
        storage.read_range("nope.txt", 0)


def test_append_concatenates_lines(storage: RlioStorage) -> None:
    """Appends land in order, whole, and read sees them at once."""
    storage.append("log.jsonl", b'{"a": 1}\n')
    storage.append("log.jsonl", b'{"a": 2}\n')
    assert storage.read("log.jsonl") == b'{"a": 1}\n{"a": 2}\n'


def test_exists_and_stat(storage: RlioStorage) -> None:
    """exists is false and stat None for a missing file; stat gives size and a real mtime."""
    assert not storage.exists("f.txt") and storage.stat("f.txt") is None
    storage.write("f.txt", b"12345")
    st = storage.stat("f.txt")
    assert storage.exists("f.txt") and st is not None
    assert st.size == 5 and st.mtime > 1e9
    assert storage.exists("")  # the run itself


def test_read_range_offsets_and_past_the_end(storage: RlioStorage) -> None:
    """read_range reads from an offset, a length of bytes, and nothing past the end."""
    storage.write("d.bin", b"0123456789")
    assert storage.read_range("d.bin", 3) == b"3456789"
    assert storage.read_range("d.bin", 3, 4) == b"3456"
    assert storage.read_range("d.bin", 8, 100) == b"89"
    assert storage.read_range("d.bin", 50) == b""
    assert storage.read_range("d.bin", 50, 3) == b""


def test_list_dir_children_and_missing_prefix(storage: RlioStorage) -> None:
    """list_dir names immediate children (files and folders), sorted; [] when missing."""
    storage.write("dir/b.txt", b"")
    storage.write("dir/a.txt", b"")
    storage.write("dir/sub/c.txt", b"")
    assert storage.list_dir("dir") == ["a.txt", "b.txt", "sub"]
    assert storage.list_dir("missing") == []
    assert storage.list_dir("dir/a.txt") == []
    assert "dir" in storage.list_dir("")
    assert not any(n.startswith(".rlio") for n in storage.list_dir(""))  # the lease is hidden


def test_remove_and_remove_dir(storage: RlioStorage, tmp_path: Path) -> None:
    """remove deletes (a missing file is fine); remove_dir leaves a non-empty folder alone."""
    storage.write("d/f.txt", b"x")
    storage.remove_dir("d")
    assert storage.exists("d/f.txt")
    storage.remove("d/f.txt")
    storage.remove("d/f.txt")
    storage.remove_dir("d")
    storage.remove_dir("never")
    assert not (tmp_path / "run" / "d").exists()


def test_remove_tree_spares_a_sibling_prefix(storage: RlioStorage) -> None:
    """remove_tree deletes a folder's files, nested ones too, and not a sibling sharing its name."""
    storage.write("d/a.txt", b"a")
    storage.write("d/sub/b.txt", b"b")
    storage.write("dd/keep.txt", b"k")
    assert storage.exists_tree("d")
    storage.remove_tree("d")
    assert not storage.exists_tree("d") and storage.read("dd/keep.txt") == b"k"


def test_paths_that_leave_the_root_are_refused(storage: RlioStorage) -> None:
    """A path escaping the root, or one of rlio's own names, raises ValueError."""
    for bad in ("../../etc/passwd", "a/../../x", "/etc/passwd"):
        with pytest.raises(ValueError, match="escapes"):
            storage.read(bad)
    with pytest.raises(ValueError, match="keeps for itself"):
        storage.write(".rlio-lease", b"x")


def test_url_is_a_file_uri(storage: RlioStorage, tmp_path: Path) -> None:
    """url gives file:// URIs of the root and of a path inside it."""
    assert storage.url() == (tmp_path / "run").as_uri()
    assert storage.url("runs/001/m.jsonl") == (tmp_path / "run" / "runs/001/m.jsonl").as_uri()


def test_second_owner_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    """A second RlioStorage of a run raises RunInUseError naming the holder; after close, works."""
    first = RlioStorage(tmp_path / "run")
    with pytest.raises(RunInUseError, match="holds its lease"):
        RlioStorage(tmp_path / "run")
    first.close()
    with RlioStorage(tmp_path / "run") as again:
        again.append("metrics.jsonl", b'{"step": 0}\n')


def test_closed_storage_refuses_writes(tmp_path: Path) -> None:
    """After close (the context manager's exit) appends and writes raise ValueError."""
    with RlioStorage(tmp_path / "run") as s:
        s.write("f.txt", b"ok")
    with pytest.raises(ValueError, match="closed"):
        s.append("metrics.jsonl", b"{}\n")
    with pytest.raises(ValueError, match="closed"):
        s.write("f.txt", b"again")
    assert s.read("f.txt") == b"ok"


def test_pickled_copy_joins_attached(tmp_path: Path) -> None:
    """A pickled copy (a worker process) opens the same run without the lease and appends."""
    with RlioStorage(tmp_path / "run") as owner:
        copy = pickle.loads(pickle.dumps(owner))
        assert copy.root == owner.root
        copy.append("metrics.jsonl", b'{"step": 0, "w": 1}\n')
        copy.close()
        assert owner.read("metrics.jsonl") == b'{"step": 0, "w": 1}\n'


def test_attached_never_rewinds_nor_replaces(tmp_path: Path) -> None:
    """An attached RlioStorage's write of a log or of the owner's config is refused and changes
    nothing (no .superseded sidecar); its own per-iteration files it may write."""
    with RlioStorage(tmp_path / "run") as owner:
        owner.append("metrics.jsonl", b'{"step": 0}\n{"step": 1}\n')
        owner.write("config.json", b'{"lr": 1}')
        with RlioStorage(tmp_path / "run", attach=True) as helper:
            for rel, data in [("metrics.jsonl", b'{"step": 0}\n'), ("config.json", b"{}"),
                              ("metrics.jsonl.superseded", b"{}\n")]:
                with pytest.raises(RlioError, match="attached writer"):
                    helper.write(rel, data)
            helper.write("iteration_000001/train_logtree.json", b"{}")
        assert owner.read("metrics.jsonl") == b'{"step": 0}\n{"step": 1}\n'
        assert owner.read("config.json") == b'{"lr": 1}'
        assert not owner.exists("metrics.jsonl.superseded")


def test_attached_needs_an_existing_run(tmp_path: Path) -> None:
    """attach=True never creates a run: a missing one raises RunNotFoundError."""
    with pytest.raises(RunNotFoundError):
        RlioStorage(tmp_path / "absent", attach=True)


def test_torn_tail_repaired_on_reopen(tmp_path: Path) -> None:
    """A crash's unterminated last metrics line moves to metrics.jsonl.torn when the run reopens."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_bytes(b'{"step": 0, "x": 1}\n{"step": 1, "x"')
    with RlioStorage(run) as s:
        assert s.read("metrics.jsonl") == b'{"step": 0, "x": 1}\n'
        s.append("metrics.jsonl", b'{"step": 1, "x": 2}\n')
    assert (run / "metrics.jsonl.torn").read_bytes() == b'{"step": 1, "x"\n'
    assert validate_run(run).ok


def test_rewriting_a_log_moves_dropped_lines_to_superseded(storage: RlioStorage,
                                                           tmp_path: Path) -> None:
    """write over metrics.jsonl (a resume's rewind) keeps shared lines, sidecars the rest."""
    lines = [b'{"step": %d, "x": %d}\n' % (i, i) for i in range(4)]
    for line in lines:
        storage.append("metrics.jsonl", line)
    storage.write("metrics.jsonl", lines[0] + lines[1] + b'{"cost": 1}\n')
    run = tmp_path / "run"
    assert (run / "metrics.jsonl").read_bytes() == lines[0] + lines[1] + b'{"cost": 1}\n'
    assert (run / "metrics.jsonl.superseded").read_bytes() == lines[2] + lines[3]
    storage.append("metrics.jsonl", b'{"step": 2, "x": 9}\n')  # the appender follows the rewrite
    assert storage.read("metrics.jsonl").endswith(b'{"cost": 1}\n{"step": 2, "x": 9}\n')


def test_checkpoint_append_is_durable_and_ordered(storage: RlioStorage, tmp_path: Path) -> None:
    """A checkpoints.jsonl append lands after the metrics appended before it, both on disk."""
    storage.append("metrics.jsonl", b'{"step": 0}\n')
    storage.append("checkpoints.jsonl", b'{"name": "000001", "batch": 1}\n')
    run = tmp_path / "run"
    assert (run / "checkpoints.jsonl").read_bytes() == b'{"name": "000001", "batch": 1}\n'
    assert (run / "metrics.jsonl").read_bytes() == b'{"step": 0}\n'


def test_async_variants(tmp_path: Path) -> None:
    """The AsyncStorage methods do what the sync ones do, and the async context closes it."""
    async def main() -> RlioStorage:
        async with RlioStorage(tmp_path / "run") as s:
            await s.awrite("dir/a.txt", b"async data")
            await s.aappend("log.jsonl", b"{}\n")
            await s.aappend("log.jsonl", b"{}\n")
            assert await s.aread("dir/a.txt") == b"async data"
            assert await s.aread("log.jsonl") == b"{}\n{}\n"
            assert await s.aexists("dir/a.txt")
            st = await s.astat("dir/a.txt")
            assert st is not None and st.size == 10
            assert await s.aread_range("dir/a.txt", 6, 2) == b"da"
            assert await s.alist_dir("dir") == ["a.txt"]
            await s.aremove("dir/a.txt")
            await s.aremove_dir("dir")
            assert not await s.aexists("dir")
        return s

    s = asyncio.run(main())
    with pytest.raises(ValueError, match="closed"):
        s.append("log.jsonl", b"{}\n")
    RlioStorage(tmp_path / "run").close()  # the lease was released
