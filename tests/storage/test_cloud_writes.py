"""Appends and rewrites on every object store (gs://, s3://, az://) against its emulator:
commits whose answer is lost, appends on a stale version, move_tail racing other writers, a
rewrite whose answer is lost, stale locks, the background commit and the commit at exit. What
differs per store (how it extends an object, its orphans, what an append costs) is in
test_gcs_compose, test_s3_multipart and test_azure_append_blob."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from clouds import ONE_BY_DEFAULT, OPS, append, assert_each_once, feed

from rlio.errors import UnsafeStorageError
from rlio.storage import open_storage
from rlio.storage.lease_object import META_EXPIRES
from rlio.storage.objects import LOCKS_DIR, ObjectStorage


def _open(uri: str, *, create: bool = True) -> ObjectStorage:
    st = open_storage(uri, create=create)
    assert isinstance(st, ObjectStorage)
    return st


def _before_first_rewrite(st: ObjectStorage, hook: Callable[[], None]) -> list[int]:
    """Run ``hook`` once, just before ``st``'s first conditional rewrite of a log (another
    writer acting at that point: the emulators serve one request at a time, so a race is made
    by hand). Returns a list that counts the rewrites tried."""
    calls: list[int] = []
    orig = st._rewrite_log

    def rewrite(*args: Any, **kw: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            hook()
        orig(*args, **kw)

    st._rewrite_log = rewrite  # type: ignore[method-assign]
    return calls


#: Per store: fault rules on a log's writes that commit and then answer 503 or drop the
#: connection (and 503s outlasting the client's retries), how many fire, and which appends of
#: ``feed`` are durable (the rules' ``skip`` counts follow that request sequence).
_LOST: dict[str, tuple[list[dict[str, Any]], int, Callable[[int], bool]]] = {
    "gs": ([
        {"op": "upload", "name": r"/metrics\.jsonl$", "mode": "commit_then_503"},  # the create
        {"op": "upload", "name": r"\.rlio-parts/", "mode": "commit_then_503", "skip": 2},
        {"op": "compose", "name": r"/metrics\.jsonl$", "mode": "commit_then_503", "skip": 1,
         "times": 2},
        {"op": "compose", "name": r"/metrics\.jsonl$", "mode": "commit_then_drop", "skip": 6},
        {"op": "delete", "name": r"\.rlio-parts/", "mode": "503"},
    ], 6, lambda i: i % 3 != 0),
    "s3": ([
        {"op": "put", "name": r"/metrics\.jsonl$", "mode": "commit_then_503"},  # the create
        {"op": "put", "name": r"/metrics\.jsonl$", "mode": "commit_then_503", "skip": 2,
         "times": 2},
        {"op": "put", "name": r"/metrics\.jsonl$", "mode": "commit_then_drop", "skip": 5},
        {"op": "head", "name": r"/metrics\.jsonl$", "mode": "503", "skip": 1, "times": 3},
    ], 7, lambda i: i % 3 != 0),
    "az": ([
        {"op": "create", "name": r"/metrics\.jsonl$", "mode": "commit_then_503"},
        {"op": "append", "name": r"/metrics\.jsonl$", "mode": "commit_then_503", "skip": 1},
        {"op": "append", "name": r"/metrics\.jsonl$", "mode": "commit_then_drop", "skip": 4},
        {"op": "append", "name": r"/metrics\.jsonl$", "mode": "503", "skip": 9},
    ], 4, lambda i: i % 3 == 0),
}


def test_commits_whose_answer_is_lost_are_neither_duplicated_nor_dropped(
        cloud: str, cloud_uri: str, cloud_emulator: Any) -> None:
    """Two writers' appends whose requests commit and then answer 503 or drop the connection
    (s3://: and 503s outlasting the client's retries): every line lands once, each writer's in
    order, and nothing is left behind (``_LOST``; s3:// multipart: test_s3_multipart)."""
    st = _open(cloud_uri)
    rules, injected, durable = _LOST[cloud]
    cloud_emulator.set_faults(rules)
    feed(st, "metrics.jsonl", ("a", "b"), 12, durable)
    assert cloud_emulator.injected() == injected
    assert_each_once(st.read_bytes("metrics.jsonl"), ("a", "b"), 12)
    assert st.sweep_orphans() == 0


#: Per store: the requests of an append made on a version another writer replaced (the refused
#: one, then what the retry costs).
_STALE = {
    "gs": {"compose:412": 1, "compose": 2},
    "s3": {"put:412": 1, "put": 2, "head": 1, "get": 1},  # the HEAD and GET of the new version
    "az": {"append:412": 1},
}


def test_an_append_on_a_stale_version_is_refused_then_retried(
        cloud: str, cloud_uri: str, cloud_emulator: Any) -> None:
    """An appender writing on a version another writer replaced is refused (412) by the store,
    then lands its line once, after the other's (the requests it costs: ``_STALE``)."""
    st = _open(cloud_uri)
    a, b = st.appender("metrics.jsonl"), st.appender("metrics.jsonl")
    a.append_durable(b'{"a": 1}\n')
    b.append_durable(b'{"b": 1}\n')
    cloud_emulator.stats(reset=True)
    a.append_durable(b'{"a": 2}\n')  # a still holds the version before b's append
    a.close()
    b.close()
    ops = {op: s["requests"] for op, s in cloud_emulator.stats().items()}
    assert {op: ops.get(op, 0) for op in _STALE[cloud]} == _STALE[cloud], ops
    assert st.read_bytes("metrics.jsonl") == b'{"a": 1}\n{"b": 1}\n{"a": 2}\n'
    assert st.sweep_orphans() == 0


def test_move_tail_keeps_appends_that_land_while_it_runs(cloud_uri: str) -> None:
    """An append landing between the tail's copy and the cut is kept after the cut (412, retry);
    a moved fragment gets its newline in the sidecar, not in the log."""
    st = _open(cloud_uri)
    append(st, "metrics.jsonl", b'{"step": 0}\n{"ste')
    other = _open(cloud_uri)
    calls = _before_first_rewrite(st, lambda: append(other, "metrics.jsonl", b'{"step": 9}\n'))
    with st.lock("metrics.jsonl"):
        assert st.move_tail("metrics.jsonl", 12, "metrics.jsonl.torn") == 5
    assert len(calls) == 2
    assert st.read_bytes("metrics.jsonl") == b'{"step": 0}\n{"step": 9}\n'
    assert st.read_bytes("metrics.jsonl.torn") == b'{"ste\n'
    assert st.sweep_orphans() == 0


def test_move_tail_refuses_to_overwrite_a_foreign_rewrite(cloud_uri: str) -> None:
    """If something else rewrites the log during move_tail, the log is left as it was left and
    the error says the moved bytes are in both places."""
    st = _open(cloud_uri)
    append(st, "metrics.jsonl", b'{"step": 0}\n{"step": 1}\n')
    foreign = _open(cloud_uri)
    _before_first_rewrite(st, lambda: foreign._put(
        foreign.key("metrics.jsonl"), b'{"foreign": 1}\n', ctype="application/json"))
    with pytest.raises(UnsafeStorageError, match="both places"):
        st.move_tail("metrics.jsonl", 12, "metrics.jsonl.superseded")
    assert st.read_bytes("metrics.jsonl") == b'{"foreign": 1}\n'
    assert st.read_bytes("metrics.jsonl.superseded") == b'{"step": 1}\n'


def test_a_rewrite_whose_answer_is_lost_recognises_itself(
        cloud: str, cloud_uri: str, cloud_emulator: Any) -> None:
    """move_tail's conditional rewrite committing then answering 503 is not an error, and
    appends go on after the cut."""
    st = _open(cloud_uri)
    append(st, "checkpoints.jsonl", b'{"name": "a"}\n{"name": "b"}\n')
    cloud_emulator.set_faults([{"op": OPS[cloud]["rewrite"], "name": r"/checkpoints\.jsonl$",
                                "mode": "commit_then_503", "times": 1}])
    assert st.move_tail("checkpoints.jsonl", 14, "checkpoints.jsonl.torn") == 14
    assert cloud_emulator.injected() == 1
    assert st.read_bytes("checkpoints.jsonl") == b'{"name": "a"}\n'
    append(st, "checkpoints.jsonl", b'{"name": "c"}\n')
    assert st.read_bytes("checkpoints.jsonl") == b'{"name": "a"}\n{"name": "c"}\n'


# az://'s lock is the service's lease on a blob: it expires in the service (test_azure_lease)
@pytest.mark.parametrize("cloud", ["gs", "s3"])
def test_a_stale_lock_left_by_a_crashed_holder_is_broken(cloud_uri: str) -> None:
    """lock() takes over a lock object whose holder's expiry passed, and deletes it on exit."""
    st = _open(cloud_uri)
    key = f"{st.key(LOCKS_DIR)}/metrics.jsonl.lock"
    st._put_if(key, b"{}", {META_EXPIRES: f"{time.time() - 60:.3f}"}, None)
    with st.lock("metrics.jsonl"):
        held = st._head(key)
        assert held is not None and float(held.metadata[META_EXPIRES]) > time.time()
    assert st._head(key) is None


@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)
def test_an_unflushed_line_reaches_the_store_within_about_a_second(cloud_uri: str) -> None:
    """A single append() with no flush is committed by the timer thread, not held until close."""
    st = _open(cloud_uri)
    app = st.appender("metrics.jsonl")
    app.append(b'{"step": 0}\n')
    deadline = time.monotonic() + 30
    while st.stat("metrics.jsonl") is None or st.size("metrics.jsonl") == 0:
        assert time.monotonic() < deadline, "the buffered line never reached the log"
        time.sleep(0.1)
    assert st.read_bytes("metrics.jsonl") == b'{"step": 0}\n'
    app.close()


@pytest.mark.parametrize("cloud", ONE_BY_DEFAULT)
def test_lines_still_buffered_at_interpreter_exit_are_committed(cloud_uri: str) -> None:
    """A process that exits without closing its appender still lands what it appended."""
    code = (
        "import sys\nfrom rlio.storage import open_storage\n"
        "app = open_storage(sys.argv[1], create=True).appender('metrics.jsonl')\n"
        "app.append(b'{\"step\": 0}\\n')\n"
    )
    subprocess.run([sys.executable, "-c", code, cloud_uri], check=True, timeout=120)
    assert _open(cloud_uri, create=False).read_bytes("metrics.jsonl") == b'{"step": 0}\n'
