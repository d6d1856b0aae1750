"""``Storage.replace_derived``: the run report's pages are replaced atomically, never torn.

Run against a local folder (its own temp-file-and-rename path without a sync) and memory://
(the base class's, which is ``replace``).
"""

from __future__ import annotations

import os
import pathlib
import uuid

import pytest

from rlio.errors import UnsafeStorageError
from rlio.storage import TEMP_INFIX, Storage, open_storage


@pytest.fixture(params=["local", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Storage:
    """A fresh, created run on a local disk or on memory://."""
    where = str(tmp_path / "run") if request.param == "local" else f"memory://rd-{uuid.uuid4().hex}"
    return open_storage(where, create=True)


def test_replace_derived_writes_the_new_bytes_and_leaves_no_temp_file(store: Storage) -> None:
    """A page written twice holds the second bytes, in a new folder too, with no temp file left."""
    store.replace_derived("report/train/iteration_000001.html", b"<p>old</p>")
    store.replace_derived("report/train/iteration_000001.html", b"<p>new</p>")
    assert store.read_bytes("report/train/iteration_000001.html") == b"<p>new</p>"
    assert [e.path for e in store.walk() if TEMP_INFIX in e.path] == []


def test_a_log_is_never_replaced_as_a_derived_file(store: Storage) -> None:
    """An append-only log named to replace_derived takes replace's path (memory:// refuses it)."""
    store.replace("metrics.jsonl", b'{"step": 0}\n')
    if store.is_local:
        store.replace_derived("metrics.jsonl", b'{"step": 1}\n')
        assert store.read_bytes("metrics.jsonl") == b'{"step": 1}\n'
    else:
        with pytest.raises(UnsafeStorageError):
            store.replace_derived("metrics.jsonl", b'{"step": 1}\n')


def test_a_failed_local_write_keeps_the_old_page(tmp_path: pathlib.Path) -> None:
    """When the temp file cannot be written (a str, not bytes) the old page stays, no temp left."""
    store = open_storage(str(tmp_path / "run"), create=True)
    store.replace_derived("report.html", b"old")
    with pytest.raises(TypeError):
        store.replace_derived("report.html", "not bytes")  # type: ignore[arg-type]
    assert store.read_bytes("report.html") == b"old"
    assert [n for n in os.listdir(tmp_path / "run") if TEMP_INFIX in n] == []
