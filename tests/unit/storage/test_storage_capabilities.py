"""Storage operations every backend provides, pinned on a local folder and on memory://:
``replace`` (whole, atomic, never over an object store's log) and ``Appender.append`` (one line
visible at once; on a local disk one ``os.write``, a short write completed).
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


# -- Storage.replace ----------------------------------------------------------------------------


def test_replace_writes_the_new_bytes_whole(store: Storage) -> None:
    """Replacing a file leaves exactly the new bytes and no temp file."""
    store.replace("train_iteration_000001_rollout_summaries.jsonl", b"old\n")
    store.replace("train_iteration_000001_rollout_summaries.jsonl", b'{"a": 1}\n{"b": 2}\n')
    assert store.read_bytes("train_iteration_000001_rollout_summaries.jsonl") == (
        b'{"a": 1}\n{"b": 2}\n')
    assert _leftovers(store) == []


def test_replace_creates_a_new_file_in_a_new_folder(store: Storage) -> None:
    """A target that does not exist yet, in a folder that does not either, is created whole."""
    store.replace("iteration_000003/train_rollout_summaries.jsonl", b"x\n")
    assert store.read_bytes("iteration_000003/train_rollout_summaries.jsonl") == b"x\n"


def test_local_replace_that_fails_leaves_the_old_file(tmp_path: pathlib.Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A replace whose fsync fails propagates; the target keeps its bytes, no temp file stays."""
    store = LocalStorage(str(tmp_path))
    store.replace("config.json", b"{}")

    def fail(fd: int) -> None:
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        store.replace("config.json", b'{"new": 1}')
    monkeypatch.undo()
    assert store.read_bytes("config.json") == b"{}"
    assert _leftovers(store) == []


def test_replacing_an_existing_log_is_refused_off_local_disk(store: Storage) -> None:
    """Object-like stores never rewrite an existing log with replace; a local disk may."""
    app = store.appender("checkpoints.jsonl")
    app.append_durable(b'{"name": "000001"}\n')
    app.close()
    if isinstance(store, LocalStorage):
        store.replace("checkpoints.jsonl", b"")
        assert store.read_bytes("checkpoints.jsonl") == b""
        return
    with pytest.raises(UnsafeStorageError, match="append-only"):
        store.replace("checkpoints.jsonl", b"")
    assert store.read_bytes("checkpoints.jsonl") == b'{"name": "000001"}\n'


# -- Appender.append ----------------------------------------------------------------------------


def test_appended_lines_are_visible_at_once_and_in_order(store: Storage) -> None:
    """Each appended line is readable before the next append returns."""
    app = store.appender("metrics.jsonl")
    try:
        for i in range(4):
            app.append(b'{"step": %d}\n' % i)
            assert store.read_bytes("metrics.jsonl").splitlines()[-1] == b'{"step": %d}' % i
    finally:
        app.close()
    assert store.read_bytes("metrics.jsonl") == b"".join(b'{"step": %d}\n' % i for i in range(4))


def test_closed_appender_refuses_to_write(store: Storage) -> None:
    """After close, append raises ValueError instead of writing anywhere."""
    app = store.appender("metrics.jsonl")
    app.append(b'{"step": 0}\n')
    app.close()
    with pytest.raises(ValueError, match="closed"):
        app.append(b'{"step": 1}\n')
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


def test_local_append_is_one_os_write_per_line(tmp_path: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """On a local disk each line costs exactly one os.write of the whole line."""
    app = LocalStorage(str(tmp_path)).appender("metrics.jsonl")
    append_line = app.append
    calls = _count_writes(monkeypatch, short_first=False)
    lines = [b'{"step": %d, "pad": "%s"}\n' % (i, b"p" * i) for i in range(5)]
    for line in lines:
        append_line(line)
    monkeypatch.undo()
    app.close()
    assert calls == [len(line) for line in lines]
    assert (tmp_path / "metrics.jsonl").read_bytes() == b"".join(lines)


def test_local_append_completes_a_short_write(tmp_path: pathlib.Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """When the OS takes part of a line, the rest follows at once, nothing doubled or lost."""
    app = LocalStorage(str(tmp_path)).appender("metrics.jsonl")
    append_line = app.append
    calls = _count_writes(monkeypatch, short_first=True)
    line = b'{"step": 0, "pad": "' + b"p" * 100 + b'"}\n'
    append_line(line)
    monkeypatch.undo()
    app.close()
    assert calls == [len(line), len(line) - len(line) // 2]
    assert (tmp_path / "metrics.jsonl").read_bytes() == line
