"""Followers over every kind of store: follow_jsonl yields each record once across rewinds on a
local disk, memory:// and gs:// (the emulator), also when the file is rewound and rewritten while
a look is reading it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import jsonl, metrics_line
from gcs_emulator import Emulator

from rlio import layout
from rlio.reader import follow
from rlio.storage import Storage, open_storage


@pytest.fixture(params=["local", "memory", "gs"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """A fresh run on each backend: a local folder, memory://, gs:// on the emulator."""
    if request.param == "local":
        return open_storage(tmp_path / "run", create=True)
    if request.param == "memory":
        return open_storage(f"memory://follow-{uuid.uuid4().hex[:12]}", create=True)
    emu: Emulator = request.getfixturevalue("emulator")
    assert emu is not None
    return open_storage(f"gs://rlio-test/f-{uuid.uuid4().hex[:12]}", create=True)


def _append(st: Storage, data: str) -> None:
    app = st.appender(layout.METRICS)
    try:
        app.append_durable(data.encode())
    finally:
        app.close()


def _rewind(st: Storage, keep: int, relog: list[dict[str, Any]]) -> None:
    """What a resume does: the lines after the first ``keep`` move to .superseded, then the
    restarted loop logs ``relog``."""
    cut = sum(len(x) + 1 for x in st.read_bytes(layout.METRICS).split(b"\n")[:keep])
    with st.lock(layout.METRICS):
        st.move_tail(layout.METRICS, cut, layout.METRICS + layout.SUPERSEDED_SUFFIX)
    _append(st, jsonl(relog))


def _follow(st: Storage, on_record: Callable[[int], None] | None = None,
            actions: list[Callable[[], None]] | None = None) -> list[int]:
    """The steps followed, running one action per look and ``on_record`` per record."""
    todo = list(actions or [])

    def sleep(_: float) -> None:
        if todo:
            todo.pop(0)()

    got: list[int] = []
    for rec in follow.follow_jsonl(st, layout.METRICS, poll=0, idle_timeout=0.5, sleep=sleep):
        got.append(rec["step"])
        if on_record is not None:
            on_record(len(got))
    return got


def test_a_rewind_relogged_identically_between_looks(store: Storage) -> None:
    """50 lines read; a resume keeps line 0 and the same 20 steps are logged again byte for byte
    before the next look: 70 records, the re-logged ones included."""
    _append(store, jsonl(metrics_line(s) for s in range(50)))
    relog = [metrics_line(s) for s in range(1, 21)]
    got = _follow(store, actions=[lambda: _rewind(store, 1, relog)])
    assert got == [*range(50), *range(1, 21)]


def test_a_torn_tail_repaired_and_regrown(store: Storage) -> None:
    """A torn last line moved to .torn and the file regrown past it: each record once, whole."""
    _append(store, jsonl([metrics_line(0)]))
    app = store.appender(layout.METRICS)
    app.append(b'{"step": 1, "x": 1}\n')
    app.close()
    data = store.read_bytes(layout.METRICS)
    cut = len(jsonl([metrics_line(0)]).encode())
    assert len(data) > cut

    def repair_and_log() -> None:
        with store.lock(layout.METRICS):
            store.move_tail(layout.METRICS, cut, layout.METRICS + layout.TORN_SUFFIX)
        _append(store, jsonl([metrics_line(1, pad="p" * 40), metrics_line(2)]))

    got = _follow(store, actions=[repair_and_log])
    assert got == [0, 1, 1, 2]


def test_a_file_rewound_while_a_look_reads_it(store: Storage,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """When a look reading the file in small pieces meets a rewind (other lines written) between
    two pieces, no line glued from both versions is yielded and every record of each version is
    yielded once, in order."""
    monkeypatch.setattr(follow, "_CHUNK", 64)
    old = [metrics_line(s, v="old") for s in range(30)]
    new = [metrics_line(s, v="new-" + "n" * s) for s in range(2, 30)]
    _append(store, jsonl(old))
    done = []

    def rewind_once(n: int) -> None:
        if n == 5 and not done:
            done.append(1)
            _rewind(store, 2, new)

    steps = []
    for rec in follow.follow_jsonl(store, layout.METRICS, poll=0, idle_timeout=0.5,
                                   sleep=lambda _: None):
        steps.append((rec["step"], rec["v"]))
        rewind_once(len(steps))
    assert steps == [(0, "old"), (1, "old"), (2, "old"), (3, "old"), (4, "old"),
                     *((r["step"], r["v"]) for r in new)]
