"""gs:// compose appends against the precondition-enforcing emulator: generations, parts and
their sweep, lost answers, back-pressure and the requests an append costs (what every store
shares: test_cloud_writes).

Races are made deterministic by running another writer at a chosen point of a request sequence
(``_Hooked``), since the single-threaded emulator never interleaves two requests by itself.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from clouds import BATCH, append
from gcs_emulator import Emulator

from rlio.storage import open_storage
from rlio.storage.gcs.api import PARTS_DIR, GcsApi, generation
from rlio.storage.gcs.storage import GcsStorage


def _gs(uri: str, *, create: bool = True) -> GcsStorage:
    st = open_storage(uri, create=create)
    assert isinstance(st, GcsStorage)
    return st


class _Hooked(GcsApi):
    """A GcsApi that runs ``hook`` once, just before the first call matching ``when``."""

    def __init__(self, base: GcsApi, method: str, when: Callable[..., bool],
                 hook: Callable[[], None]) -> None:
        super().__init__(base.fs, base.bucket)
        self._method, self._when, self._hook, self.fired = method, when, hook, False

    def _maybe(self, method: str, *args: Any, **kwargs: Any) -> None:
        if not self.fired and method == self._method and self._when(*args, **kwargs):
            self.fired = True
            self._hook()

    def upload(self, key: str, data: bytes, **kw: Any) -> dict[str, Any]:
        self._maybe("upload", key, data, **kw)
        return super().upload(key, data, **kw)

    def compose(self, key: str, sources: Any, **kw: Any) -> dict[str, Any]:
        self._maybe("compose", key, sources, **kw)
        return super().compose(key, sources, **kw)


def _parts(st: GcsStorage) -> list[str]:
    return [o["name"] for o in st.api.list(st.key(PARTS_DIR) + "/")]


def test_emulator_answers_preconditions_as_gcs_does(gs_uri: str, emulator: Emulator) -> None:
    """The test emulator gives 412 for stale generations, 404 for gone ones, 304 for NotMatch."""
    api = _gs(gs_uri).api
    key = gs_uri.split("/", 3)[3] + "/obj"
    g1 = generation(api.upload(key, b"one\n", if_generation_match=0))
    with pytest.raises(FileExistsError):
        api.upload(key, b"again\n", if_generation_match=0)
    g2 = generation(api.upload(key, b"two\n", if_generation_match=g1))
    assert g2 > g1
    with pytest.raises(FileExistsError):
        api.upload(key, b"stale\n", if_generation_match=g1)
    api.upload(key + ".p", b"part\n")
    with pytest.raises(FileExistsError):
        api.compose(key, [(key, None), (key + ".p", None)], metadata={}, if_generation_match=g1)
    with pytest.raises(FileNotFoundError):
        api.compose(key, [(key, g1), (key + ".p", None)], metadata={}, if_generation_match=g2)
    with pytest.raises(FileExistsError):
        api.delete(key, if_generation_match=g1)
    with pytest.raises(FileNotFoundError):
        api.read(key, 0, 4, gen=g1)
    assert api.read(key, 0, 100) == b"two\n"
    url = f"{emulator.url}/storage/v1/b/{api.bucket}/o/{key.replace('/', '%2F')}"
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{url}?ifGenerationNotMatch={g2}", timeout=10)
    assert err.value.code == 304
    assert emulator.stats()["upload:412"]["requests"] == 2


def test_a_create_only_collision_falls_back_to_compose(gs_uri: str, emulator: Emulator) -> None:
    """Two writers creating one log: the loser's create-only upload gets 412, then it composes."""
    st = _gs(gs_uri)
    other = _gs(gs_uri)
    st.api = _Hooked(st.api, "upload",
                     lambda key, data, **kw: kw.get("if_generation_match") == 0
                     and key.endswith("/checkpoints.jsonl"),
                     lambda: append(other, "checkpoints.jsonl", b'{"name": "other"}\n'))
    emulator.stats(reset=True)
    append(st, "checkpoints.jsonl", b'{"name": "mine"}\n')
    assert st.api.fired
    assert st.read_bytes("checkpoints.jsonl") == b'{"name": "other"}\n{"name": "mine"}\n'
    assert emulator.stats()["upload:412"]["requests"] == 1


def test_a_part_swept_before_its_compose_is_uploaded_again(gs_uri: str) -> None:
    """A reopening writer sweeping an in-flight part costs a re-upload, never a lost line."""
    st = _gs(gs_uri)
    append(st, "metrics.jsonl", b'{"step": 0}\n')
    sweeper = _gs(gs_uri, create=False)
    swept: list[int] = []
    st.api = _Hooked(st.api, "compose", lambda key, sources, **kw: True,
                     lambda: swept.append(sweeper.sweep_orphans()))
    append(st, "metrics.jsonl", b'{"step": 1}\n')
    assert swept == [1]
    assert st.read_bytes("metrics.jsonl") == b'{"step": 0}\n{"step": 1}\n'
    assert _parts(st) == []


def test_orphan_parts_are_hidden_and_swept_when_a_writer_reopens(gs_uri: str) -> None:
    """Parts a crashed writer left are not run files, and open_storage(create=True) deletes them."""
    st = _gs(gs_uri)
    append(st, "metrics.jsonl", b'{"step": 0}\n')
    for i in range(3):
        st.api.upload(f"{st.key(PARTS_DIR)}/metrics.jsonl.dead{i}", b'{"lost": 1}\n')
    assert len(_parts(st)) == 3
    assert [e.path for e in _gs(gs_uri, create=False).walk()] == ["metrics.jsonl"]
    _gs(gs_uri, create=True)
    assert _parts(st) == []
    assert st.read_bytes("metrics.jsonl") == b'{"step": 0}\n'


def test_bytes_sent_per_append_do_not_grow_with_the_file(gs_uri: str, emulator: Emulator) -> None:
    """A batch costs the same requests and bytes on a 10 KB log as on a 12 MB one."""
    st = _gs(gs_uri)
    app = st.appender("metrics.jsonl")
    batch = BATCH
    app.append_durable(batch)

    def cost() -> tuple[int, int]:
        emulator.stats(reset=True)
        app.append_durable(batch)
        stats = emulator.stats()
        return (sum(s["requests"] for s in stats.values()),
                sum(s["bytes"] for s in stats.values()))

    small = cost()
    for _ in range(6):
        app.append_durable(b"x" * (2 << 20) + b"\n")
    large = cost()
    app.close()
    assert st.size("metrics.jsonl") > 12 << 20
    assert large[0] == small[0] == 2  # part upload, compose
    assert large[1] <= small[1] + 64  # only the numbers in the metadata may grow a digit


def test_append_commits_itself_when_too_much_is_pending(gs_uri: str) -> None:
    """Past max_pending buffered bytes, append() commits in the caller (back-pressure)."""
    from rlio.storage.gcs.append import GcsAppender

    st = _gs(gs_uri)
    app = GcsAppender(st.api, st.key("logs.log"), f"{st.key(PARTS_DIR)}/logs.log",
                      ctype="text/plain", display=st.display("logs.log"))
    app.interval, app.max_pending = 3600, 100
    app.append(b"a" * 60 + b"\n")
    app.append(b"b" * 60 + b"\n")  # 122 bytes pending: committed before append returns
    assert st.read_bytes("logs.log") == b"a" * 60 + b"\n" + b"b" * 60 + b"\n"
    app.close()


def test_a_failed_background_commit_is_raised_then_retried_without_loss(gs_uri: str) -> None:
    """The timer thread's error surfaces on the next append; the batch is kept and lands once."""
    st = _gs(gs_uri)
    append(st, "metrics.jsonl", b'{"step": 0}\n')

    def fail() -> None:
        raise ConnectionError("injected: network down")

    st.api = _Hooked(st.api, "compose", lambda key, sources, **kw: True, fail)
    app = st.appender("metrics.jsonl")
    app.append(b'{"step": 1}\n')
    deadline, accepted = time.monotonic() + 30, 0
    with pytest.raises(ConnectionError):
        while time.monotonic() < deadline:
            app.append(b'{"step": 2}\n')  # raises (taking nothing) once the timer thread failed
            accepted += 1
            time.sleep(0.05)
    app.close()
    assert st.read_bytes("metrics.jsonl").splitlines() == (
        [b'{"step": 0}', b'{"step": 1}'] + [b'{"step": 2}'] * accepted)
