"""The storage contract: one suite run against every backend of ``conftest.CONTRACT_BACKENDS``.

Differences between backends are part of the contract and are asserted as such: object stores
have no directories (``walk`` yields files only) and refuse what they cannot do safely.
"""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable

import pytest

from rlio.errors import UnsafeStorageError
from rlio.storage import Storage, objects


def _lines(n: int, tag: str = "r") -> list[bytes]:
    return [b'{"%s": %d, "pad": "%s"}\n' % (tag.encode(), i, b"x" * (i % 17)) for i in range(n)]


def test_replace_writes_a_whole_file_readable_by_every_read_call(store: Storage) -> None:
    """replace() creates a file (and parent folders); read_bytes, open_read, size, stat agree."""
    data = b"".join(_lines(50))
    store.replace("iteration_000001/train_logtree.json", data)
    store.replace("config.json", b"{}")
    assert store.read_bytes("iteration_000001/train_logtree.json") == data
    with store.open_read("iteration_000001/train_logtree.json") as f:
        assert f.read() == data
    assert store.size("iteration_000001/train_logtree.json") == len(data)
    entry = store.stat("config.json")
    assert entry is not None and (entry.kind, entry.size) == ("file", 2)
    store.replace("config.json", b'{"a": 1}')
    assert store.read_bytes("config.json") == b'{"a": 1}'


def test_replace_is_atomic_for_concurrent_readers(store: Storage) -> None:
    """A reader racing replace() sees the old bytes or the new ones, never a mix or a prefix."""
    versions = [b"A" * 200_000, b"B" * 150_000 + b"\n"]
    store.replace("config.json", versions[0])
    stop = threading.Event()
    seen: list[bytes] = []

    def read() -> None:
        while not stop.is_set():
            seen.append(store.read_bytes("config.json"))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(12):
            store.replace("config.json", versions[(i + 1) % 2])
    finally:
        stop.set()
        reader.join()
    assert seen and all(s in versions for s in seen)


def test_write_mode_replaces_on_close_and_keeps_the_old_file_on_error(store: Storage) -> None:
    """open(rel, "wb") replaces the file when closed cleanly, and not at all after an exception."""
    with store.open("code.diff", "wb") as f:
        f.write(b"diff --git a b\n")
    assert store.read_bytes("code.diff") == b"diff --git a b\n"
    with pytest.raises(RuntimeError), store.open("code.diff", "wb") as f:
        f.write(b"half")
        raise RuntimeError("boom")
    assert store.read_bytes("code.diff") == b"diff --git a b\n"


def test_appends_keep_their_order_and_are_all_visible_after_flush(
        store: Storage, reopen: Callable[[], Storage]) -> None:
    """Lines appended by one handle arrive complete, in order, once flush() returns."""
    lines = _lines(300)
    app = store.appender("metrics.jsonl")
    for line in lines:
        app.append(line)
    app.flush()
    assert reopen().read_bytes("metrics.jsonl") == b"".join(lines)
    app.append(b'{"last": true}\n')
    app.close()
    app.close()  # idempotent
    assert reopen().read_bytes("metrics.jsonl").endswith(b'{"last": true}\n')
    with pytest.raises(ValueError):
        app.append(b"{}\n")


def test_durable_append_is_visible_to_another_handle_when_it_returns(
        store: Storage, reopen: Callable[[], Storage]) -> None:
    """append_durable() returns only once a fresh reader sees the line (after earlier appends)."""
    app = store.appender("checkpoints.jsonl")
    app.append(b'{"name": "000000"}\n')
    app.append_durable(b'{"name": "000001"}\n')
    try:
        assert reopen().read_bytes("checkpoints.jsonl") == (
            b'{"name": "000000"}\n{"name": "000001"}\n')
    finally:
        app.close()


def test_two_handles_appending_from_threads_lose_and_tear_nothing(store: Storage) -> None:
    """Two appenders on one file, fed from two threads, leave every line exactly once, whole."""
    def feed(tag: str) -> None:
        app = store.appender("logs.log")
        for i, line in enumerate(_lines(200, tag)):
            (app.append_durable if i % 50 == 0 else app.append)(line)
        app.close()

    threads = [threading.Thread(target=feed, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = store.read_bytes("logs.log").splitlines(keepends=True)
    assert sorted(got) == sorted(_lines(200, "a") + _lines(200, "b"))
    for tag in ("a", "b"):  # each handle's lines keep their order
        assert [g for g in got if g.startswith(b'{"%s"' % tag.encode())] == _lines(200, tag)


def test_read_range_reads_a_slice_clamped_to_the_end(store: Storage) -> None:
    """read_range() returns [start, end), shorter at the end, empty past it or for empty ranges."""
    store.replace("config.json", b"0123456789")
    assert store.read_range("config.json", 2, 5) == b"234"
    assert store.read_range("config.json", 7, 100) == b"789"
    assert store.read_range("config.json", 10, 20) == b""
    assert store.read_range("config.json", 4, 4) == b""
    store.replace("code.diff", b"")
    assert store.read_range("code.diff", 0, 10) == b""
    assert store.read_bytes("code.diff") == b""


def test_missing_files_are_none_for_stat_and_errors_for_reads(store: Storage) -> None:
    """stat() of a missing file is None; size, read_bytes, read_range and open_read raise."""
    assert store.stat("nope.json") is None
    for call in (lambda: store.size("nope.json"), lambda: store.read_bytes("nope.json"),
                 lambda: store.read_range("nope.json", 0, 5), lambda: store.open_read("nope.json")):
        with pytest.raises(FileNotFoundError):
            call()


def test_walk_lists_every_file_with_its_size(store: Storage, backend: str) -> None:
    """walk() yields each file once with its size, nested ones included; dirs only on local."""
    store.replace("config.json", b"{}")
    store.replace("iteration_000000/train.html", b"<html>")
    app = store.appender("metrics.jsonl")
    app.append_durable(b"{}\n")
    app.close()
    entries = list(store.walk())
    files = {e.path: e.size for e in entries if e.kind == "file"}
    assert files == {"config.json": 2, "iteration_000000/train.html": 6, "metrics.jsonl": 3}
    dirs = [e.path for e in entries if e.kind == "dir"]
    assert dirs == (["iteration_000000"] if backend.startswith("/") else [])
    assert store.exists()


def test_move_tail_moves_bytes_to_the_sidecar_then_cuts_the_file(store: Storage) -> None:
    """move_tail() appends [offset:] to the sidecar (newline-terminated), then truncates there."""
    app = store.appender("metrics.jsonl")
    app.append_durable(b'{"step": 0}\n{"step": 1}\n{"ste')
    app.close()
    with store.lock("metrics.jsonl"):
        assert store.move_tail("metrics.jsonl", 24, "metrics.jsonl.torn") == 5
    assert store.read_bytes("metrics.jsonl") == b'{"step": 0}\n{"step": 1}\n'
    assert store.read_bytes("metrics.jsonl.torn") == b'{"ste\n'
    with store.lock("metrics.jsonl"):
        assert store.move_tail("metrics.jsonl", 12, "metrics.jsonl.torn") == 12
        assert store.move_tail("metrics.jsonl", 12, "metrics.jsonl.torn") == 0
    assert store.read_bytes("metrics.jsonl") == b'{"step": 0}\n'
    assert store.read_bytes("metrics.jsonl.torn") == b'{"ste\n{"step": 1}\n'
    app = store.appender("metrics.jsonl")  # appends continue after the cut
    app.append_durable(b'{"step": 1}\n')
    app.close()
    assert store.read_bytes("metrics.jsonl") == b'{"step": 0}\n{"step": 1}\n'


def test_lock_excludes_a_second_holder_until_released(store: Storage) -> None:
    """A second lock(rel) holder enters only after the first one has left."""
    events: list[str] = []
    first_in = threading.Event()

    def second() -> None:
        first_in.wait()
        with store.lock("metrics.jsonl"):
            events.append("second in")

    t = threading.Thread(target=second)
    t.start()
    with store.lock("metrics.jsonl"):
        events.append("first in")
        first_in.set()
        t.join(timeout=0.6)  # the second holder is waiting meanwhile
        events.append("first out")
    t.join()
    assert events == ["first in", "first out", "second in"]


def test_append_and_update_modes_are_refused_off_local_disk(store: Storage) -> None:
    """open() in an append mode works locally (O_APPEND) and raises UnsafeStorageError elsewhere."""
    store.replace("notes.txt", b"a\n")
    if store.is_local:
        with store.open("notes.txt", "ab") as f:
            f.write(b"b\n")
        assert store.read_bytes("notes.txt") == b"a\nb\n"
    else:
        for mode in ("ab", "a", "a+b"):
            with pytest.raises(UnsafeStorageError, match="append"):
                store.open("notes.txt", mode)
        assert store.read_bytes("notes.txt") == b"a\n"
    with pytest.raises(UnsafeStorageError):
        store.open("notes.txt", "r+b")
    with pytest.raises(ValueError):
        store.open("notes.txt", "rt")


def test_replace_never_rewrites_an_existing_log_off_local_disk(store: Storage) -> None:
    """replace() of an existing append-only log raises on object stores and leaves it intact."""
    app = store.appender("checkpoints.jsonl")
    app.append_durable(b'{"name": "000001"}\n')
    app.close()
    if store.is_local:
        store.replace("checkpoints.jsonl", b"")
        assert store.read_bytes("checkpoints.jsonl") == b""
        return
    with pytest.raises(UnsafeStorageError, match="append-only"):
        store.replace("checkpoints.jsonl", b"")
    assert store.read_bytes("checkpoints.jsonl") == b'{"name": "000001"}\n'
    store.replace("logs.log", b"fresh\n")  # a log that does not exist yet may be created whole
    assert store.read_bytes("logs.log") == b"fresh\n"


def test_sweep_orphans_is_a_no_op_when_nothing_crashed(store: Storage) -> None:
    """sweep_orphans() deletes nothing a reader can see and reports 0 on a clean run."""
    store.replace("config.json", b"{}")
    assert store.sweep_orphans() == 0
    assert [e.path for e in store.walk() if e.kind == "file"] == ["config.json"]


def test_replace_all_replaces_each_file_whole(store: Storage) -> None:
    """replace_all() leaves every file with its new bytes, old ones replaced, parents created."""
    store.replace("iteration_000002/train_logtree.json", b"old")
    store.replace_all([("iteration_000002/train_logtree.json", b'{"a":1}'),
                       ("iteration_000002/train.html", b"<html></html>\n")])
    assert store.read_bytes("iteration_000002/train_logtree.json") == b'{"a":1}'
    assert store.read_bytes("iteration_000002/train.html") == b"<html></html>\n"


def test_an_append_after_a_fragment_starts_a_new_line(store: Storage) -> None:
    """A log ending in a crash's fragment: plain and durable appends start on a new line, so
    the fragment stays a line of its own and every appended record reads whole."""
    store.replace("metrics.jsonl", b'{"step": 0}\n{"step": 1, "x')
    app = store.appender("metrics.jsonl")
    try:
        app.append(b'{"step": 2}\n')
        app.append_durable(b'{"step": 3}\n')
        app.flush()
    finally:
        app.close()
    assert store.read_bytes("metrics.jsonl") == (
        b'{"step": 0}\n{"step": 1, "x\n{"step": 2}\n{"step": 3}\n')


def test_a_file_replaced_while_being_read_is_read_whole_or_refused(
        store: Storage, reopen: Callable[[], Storage], monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream opened before another writer's replace() yields the old bytes whole (local,
    memory://) or raises OSError ESTALE on its next ranged read (object stores): never a mix."""
    remote = isinstance(store, objects.ObjectStorage)
    if remote:  # read past the first chunk at once
        monkeypatch.setattr(objects, "READ_CHUNK", 64)
    old, new = b"".join(_lines(40, "old")), b"".join(_lines(40, "new"))
    store.replace("iteration_000001/train_logtree.json", old)
    with store.open_read("iteration_000001/train_logtree.json") as f:
        head = f.read(64)
        reopen().replace("iteration_000001/train_logtree.json", new)
        if remote:
            with pytest.raises(OSError) as err:
                f.read()
            assert err.value.errno == errno.ESTALE
        else:
            assert head + f.read() == old
    assert store.read_bytes("iteration_000001/train_logtree.json") == new
