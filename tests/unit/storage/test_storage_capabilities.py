"""Storage capabilities every backend has: ``Storage.replacing`` and ``Appender.line_appender``.

Run against a local folder (which overrides both with its own fast paths) and memory:// (which
uses the base class's), so the shared contract and each implementation are pinned together.
"""

from __future__ import annotations

import os
import pathlib
import uuid
from typing import Any

import pytest

from rlio.errors import UnsafeStorageError
from rlio.storage import TEMP_INFIX, LocalStorage, Storage, open_storage


@pytest.fixture(params=["local", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Storage:
    """A fresh, created run on a local disk or on memory://."""
    where = str(tmp_path / "run") if request.param == "local" else f"memory://cap-{uuid.uuid4().hex}"
    return open_storage(where, create=True)


def _leftovers(store: Storage) -> list[str]:
    return [e.path for e in store.walk() if TEMP_INFIX in e.path]


# -- Storage.replacing --------------------------------------------------------------------------


def test_replacing_writes_the_pieces_in_order_and_nothing_before_the_block_exits(
        store: Storage) -> None:
    """Readers see the old bytes while pieces are written, then exactly their concatenation."""
    store.replace("train_iteration_000001_rollout_summaries.jsonl", b"old\n")
    with store.replacing("train_iteration_000001_rollout_summaries.jsonl") as write:
        write(b'{"a": 1}\n')
        write(bytearray(b'{"b": 2}\n'))
        assert store.read_bytes("train_iteration_000001_rollout_summaries.jsonl") == b"old\n"
    assert store.read_bytes("train_iteration_000001_rollout_summaries.jsonl") == (
        b'{"a": 1}\n{"b": 2}\n')
    assert _leftovers(store) == []


def test_replacing_keeps_each_piece_as_it_was_when_written(store: Storage) -> None:
    """A buffer the caller reuses after handing it over does not change what is written."""
    buf = bytearray(b"first\n")
    with store.replacing("notes.txt") as write:
        write(buf)
        buf[:] = b"XXXXX\n"
        write(b"second\n")
    assert store.read_bytes("notes.txt") == b"first\nsecond\n"


def test_replacing_creates_a_new_file_in_a_new_folder(store: Storage) -> None:
    """A target that does not exist yet, in a folder that does not either, is created whole."""
    with store.replacing("iteration_000003/train_rollout_summaries.jsonl") as write:
        write(b"x\n")
    assert store.read_bytes("iteration_000003/train_rollout_summaries.jsonl") == b"x\n"


def test_replacing_leaves_the_old_file_when_the_block_raises(store: Storage) -> None:
    """An exception inside the block propagates; the target keeps its bytes, no temp file stays."""
    store.replace("config.json", b"{}")
    with pytest.raises(KeyError), store.replacing("config.json") as write:
        write(b'{"half": ')
        raise KeyError("stop")
    assert store.read_bytes("config.json") == b"{}"
    assert _leftovers(store) == []
    with pytest.raises(KeyError), store.replacing("absent.json") as write:
        write(b"{}")
        raise KeyError("stop")
    assert store.stat("absent.json") is None


def test_replacing_an_existing_log_is_refused_off_local_disk(store: Storage) -> None:
    """Through replacing, as through replace, object-like stores never rewrite an existing log."""
    app = store.appender("checkpoints.jsonl")
    app.append_durable(b'{"name": "000001"}\n')
    app.close()
    if isinstance(store, LocalStorage):
        with store.replacing("checkpoints.jsonl") as write:
            write(b"")
        assert store.read_bytes("checkpoints.jsonl") == b""
        return
    with pytest.raises(UnsafeStorageError, match="append-only"), \
            store.replacing("checkpoints.jsonl") as write:
        write(b"")
    assert store.read_bytes("checkpoints.jsonl") == b'{"name": "000001"}\n'


# -- Appender.line_appender ---------------------------------------------------------------------


def test_line_appender_lines_are_visible_at_once_and_in_order(store: Storage) -> None:
    """Each line handed to line_appender is readable before the next call, after append's lines."""
    app = store.appender("metrics.jsonl")
    try:
        app.append(b'{"step": 0}\n')
        append_line = app.line_appender()
        for i in range(1, 4):
            append_line(b'{"step": %d}\n' % i)
            assert store.read_bytes("metrics.jsonl").splitlines()[-1] == b'{"step": %d}' % i
    finally:
        app.close()
    assert store.read_bytes("metrics.jsonl") == b"".join(b'{"step": %d}\n' % i for i in range(4))


def test_line_appender_of_a_closed_appender_refuses_to_write(store: Storage) -> None:
    """After close, the callable raises ValueError instead of writing anywhere."""
    app = store.appender("metrics.jsonl")
    append_line = app.line_appender()
    append_line(b'{"step": 0}\n')
    app.close()
    with pytest.raises(ValueError, match="closed"):
        append_line(b'{"step": 1}\n')
    assert store.read_bytes("metrics.jsonl") == b'{"step": 0}\n'


def _count_writes(monkeypatch: pytest.MonkeyPatch, *, short_first: bool) -> list[int]:
    """Patch ``os.write`` to record each call's length (optionally taking half of the first)."""
    real = os.write
    calls: list[int] = []

    def write(fd: int, data: Any) -> int:
        calls.append(len(data))
        if short_first and len(calls) == 1:
            return real(fd, bytes(data)[: len(data) // 2])
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    return calls


def test_local_line_appender_is_one_os_write_per_line(tmp_path: pathlib.Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """On a local disk each line costs exactly one os.write of the whole line."""
    app = LocalStorage(str(tmp_path)).appender("metrics.jsonl")
    append_line = app.line_appender()
    calls = _count_writes(monkeypatch, short_first=False)
    lines = [b'{"step": %d, "pad": "%s"}\n' % (i, b"p" * i) for i in range(5)]
    for line in lines:
        append_line(line)
    monkeypatch.undo()
    app.close()
    assert calls == [len(line) for line in lines]
    assert (tmp_path / "metrics.jsonl").read_bytes() == b"".join(lines)


def test_local_line_appender_completes_a_short_write(tmp_path: pathlib.Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """When the OS takes part of a line, the rest follows at once, nothing doubled or lost."""
    app = LocalStorage(str(tmp_path)).appender("metrics.jsonl")
    append_line = app.line_appender()
    calls = _count_writes(monkeypatch, short_first=True)
    line = b'{"step": 0, "pad": "' + b"p" * 100 + b'"}\n'
    append_line(line)
    monkeypatch.undo()
    app.close()
    assert calls == [len(line), len(line) - len(line) // 2]
    assert (tmp_path / "metrics.jsonl").read_bytes() == line
