"""follow_metrics: complete new lines as a live run appends them, never a torn one."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from factories import jsonl, metrics_line, write

from rlio import layout
from rlio.errors import NotARunError
from rlio.reader import open_run
from rlio.reader.follow import follow_jsonl
from rlio.storage import open_storage
from rlio.storage.base import Entry
from rlio.storage.local import LocalStorage


def _appender(path: Path) -> Callable[[bytes], None]:
    def append(data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    return append


def test_each_poll_yields_only_complete_lines(tmp_path: Path) -> None:
    """Lines written in pieces are yielded once each, whole, when their newline lands."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl([metrics_line(0)]))
    append = _appender(root / layout.METRICS)
    line1 = json.dumps(metrics_line(1, **{"x": float("nan")})).encode() + b"\n"
    line2 = json.dumps(metrics_line(2)).encode() + b"\n"
    # What the writer does between two looks of the reader, one action per poll.
    actions = [lambda: append(line1[:10]), lambda: append(line1[10:] + line2[:-1]),
               lambda: None, lambda: append(line2[-1:])]
    seen_at_poll: list[int] = []
    got = []

    def sleep(_: float) -> None:
        seen_at_poll.append(len(got))
        if actions:
            actions.pop(0)()

    for rec in follow_jsonl(open_storage(root), layout.METRICS, poll=0, idle_timeout=0.5,
                            sleep=sleep):
        got.append(rec)
        if len(got) == 3:
            break
    assert [r["step"] for r in got] == [0, 1, 2]
    assert seen_at_poll == [1, 1, 2, 2]  # line 1 only once complete; line 2 only at its newline


def test_a_rewind_is_followed_from_the_cut(tmp_path: Path) -> None:
    """When a resume cuts metrics.jsonl back, the re-logged lines are yielded as they come."""
    root = tmp_path / "run"
    path = root / layout.METRICS
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(4)))
    cut = len(jsonl(metrics_line(s) for s in range(2)))
    append = _appender(path)

    def rewind() -> None:
        os.truncate(path, cut)  # what moving the superseded suffix aside leaves
        append(jsonl([metrics_line(2, again=True)]).encode())

    actions = [rewind]

    def sleep(_: float) -> None:
        if actions:
            actions.pop(0)()

    got = list(follow_jsonl(open_storage(root), layout.METRICS, poll=0, idle_timeout=0.2,
                            sleep=sleep))
    assert [(r["step"], r.get("again", False)) for r in got] == [
        (0, False), (1, False), (2, False), (3, False), (2, True)]


def test_follow_waits_for_a_live_writer(tmp_path: Path) -> None:
    """A thread appending lines meanwhile: every line is yielded once, in order, none torn."""
    root = tmp_path / "run"
    write(root, layout.METRICS, "")
    run = open_run(root)
    append = _appender(root / layout.METRICS)
    done = threading.Event()

    def writer() -> None:
        for s in range(200):
            data = json.dumps(metrics_line(s)).encode() + b"\n"
            append(data[:7])
            append(data[7:])
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    got = []
    for rec in run.follow_metrics(poll=0.001, idle_timeout=2.0):
        got.append(rec["step"])
        if len(got) == 200:
            break
    thread.join()
    assert got == list(range(200))


def test_from_start_false_skips_what_is_already_there(tmp_path: Path) -> None:
    """With from_start=False only lines appended after the first look are yielded."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(3)))
    append = _appender(root / layout.METRICS)
    actions = [lambda: append(jsonl([metrics_line(3)]).encode())]

    def sleep(_: float) -> None:
        if actions:
            actions.pop(0)()

    got = list(follow_jsonl(open_storage(root), layout.METRICS, poll=0, idle_timeout=0.2,
                            from_start=False, sleep=sleep))
    assert [r["step"] for r in got] == [3]


def _follow_with(root: Path, actions: list[Callable[[], None]]) -> list[dict[str, object]]:
    """Follow metrics.jsonl, running one action per poll."""

    def sleep(_: float) -> None:
        if actions:
            actions.pop(0)()

    return list(follow_jsonl(open_storage(root), layout.METRICS, poll=0, idle_timeout=0.3,
                             sleep=sleep))


def test_a_rewind_regrown_to_the_same_size_with_the_same_lines_is_followed(
        tmp_path: Path) -> None:
    """A resume moves steps 2-3 aside and the restart logs them again byte for byte (the file
    regrows to exactly its old size): the re-logged records are yielded again, once each."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(4)))
    cut = len(jsonl(metrics_line(s) for s in range(2)))
    st = open_storage(root)

    def rewind_and_relog() -> None:
        with st.lock(layout.METRICS):
            st.move_tail(layout.METRICS, cut, layout.METRICS + layout.SUPERSEDED_SUFFIX)
        _appender(root / layout.METRICS)(jsonl(metrics_line(s) for s in (2, 3)).encode())

    got = _follow_with(root, [rewind_and_relog])
    assert [r["step"] for r in got] == [0, 1, 2, 3, 2, 3]


def test_a_rewind_to_a_shorter_file_sharing_a_line_is_followed(tmp_path: Path) -> None:
    """Cut back to steps 0-1, then regrown with different lines past the old size whose line
    at the old last line's place is the same bytes: every new record is yielded once."""
    root = tmp_path / "run"
    old = [metrics_line(0), metrics_line(1, x=1), metrics_line(2, x=2)]
    write(root, layout.METRICS, jsonl(old))
    cut = len(jsonl(old[:1]))
    st = open_storage(root)
    new = [metrics_line(1, x=3), metrics_line(2, x=2), metrics_line(3)]  # step 2 line shared

    def rewind_and_relog() -> None:
        with st.lock(layout.METRICS):
            st.move_tail(layout.METRICS, cut, layout.METRICS + layout.SUPERSEDED_SUFFIX)
        _appender(root / layout.METRICS)(jsonl(new).encode())

    got = _follow_with(root, [rewind_and_relog])
    assert got == [*old, *new]


def test_a_repaired_torn_tail_regrown_past_it_is_followed(tmp_path: Path) -> None:
    """A torn last line the follower holds unfinished is moved to .torn and the file regrows
    past it before the next look: the new record is yielded whole, not glued to the fragment."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl([metrics_line(0)]) + '{"step": 1, "x')
    cut = len(jsonl([metrics_line(0)]))
    st = open_storage(root)

    def repair_and_log() -> None:
        with st.lock(layout.METRICS):
            st.move_tail(layout.METRICS, cut, layout.METRICS + layout.TORN_SUFFIX)
        _appender(root / layout.METRICS)(jsonl([metrics_line(1, pad="p" * 40)]).encode())

    got = _follow_with(root, [repair_and_log])
    assert [r["step"] for r in got] == [0, 1]


def test_open_run_waits_for_the_run_to_appear(tmp_path: Path) -> None:
    """open_run(wait=) returns once a trainer creates the run; without wait (or when it runs
    out) a missing run is NotARunError at once."""
    root = tmp_path / "run"
    with pytest.raises(NotARunError, match="no such file or directory"):
        open_run(root)
    with pytest.raises(NotARunError):
        open_run(root, wait=0)
    started = threading.Event()

    def trainer() -> None:
        started.wait()
        write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(3)))

    thread = threading.Thread(target=trainer)
    thread.start()
    started.set()
    run = open_run(root, wait=60, poll=0.01)
    thread.join()
    assert [r["step"] for r in run.follow_metrics(poll=0.01, idle_timeout=0)] == [0, 1, 2]


def _identical_relog(root: Path, rewind: Callable[[], None]) -> list[dict[str, object]]:
    """50 lines read; then, between two looks, ``rewind`` leaves line 0 and steps 1-20 are
    logged again byte for byte (a deterministic loop re-run from its checkpoint)."""
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(50)))

    def rewind_and_relog() -> None:
        rewind()
        _appender(root / layout.METRICS)(jsonl(metrics_line(s) for s in range(1, 21)).encode())

    return _follow_with(root, [rewind_and_relog])


def test_the_cookbooks_own_rewind_relogged_identically_is_followed(tmp_path: Path) -> None:
    """The cookbook's truncate_metrics (its own LocalStorage: a rewrite and a pre_resume copy, no
    rlio sidecar) cuts 50 lines to 1 and the same 20 steps are logged again before the next look:
    all 70 records are yielded, the re-logged ones too."""
    stores = pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook 0.6.1")
    root = tmp_path / "run"

    def rewind() -> None:
        assert stores.TrainingRunStore(stores.LocalStorage(str(root))).truncate_metrics(1) == 49

    got = _identical_relog(root, rewind)
    assert [r["step"] for r in got] == [*range(50), *range(1, 21)]


def test_rlios_rewind_relogged_identically_is_followed(tmp_path: Path) -> None:
    """The same rewind through RlioStorage (the lines move to .superseded): 70 records."""
    from rlio.cookbook import RlioStorage

    root = tmp_path / "run"

    def rewind() -> None:
        with RlioStorage(str(root)) as st:  # the holder: an attached writer never rewinds
            st.write(layout.METRICS, jsonl([metrics_line(0)]).encode())

    got = _identical_relog(root, rewind)
    assert [r["step"] for r in got] == [*range(50), *range(1, 21)]


class _AwayOnce(LocalStorage):
    """A local run that another process moves away and back while the follower looks at
    ``watched`` (its run folder renamed aside just before that stat, back just after)."""

    def __init__(self, root: str, watched: str) -> None:
        super().__init__(root)
        self.watched, self.armed = watched, False

    def stat(self, rel: str) -> Entry | None:
        if not (self.armed and rel == self.watched):
            return super().stat(rel)
        self.armed = False
        os.rename(self.root, self.root + ".away")
        try:
            return super().stat(rel)
        finally:
            os.rename(self.root + ".away", self.root)


@pytest.mark.parametrize("sidecar", [layout.SUPERSEDED_SUFFIX, layout.TORN_SUFFIX])
def test_a_run_away_and_back_while_a_sidecar_is_read_is_no_rewind(
        tmp_path: Path, sidecar: str) -> None:
    """A sidecar read as absent while the run was moved away and back is no tail move: the
    next look does not take its reappearing bytes (the same as a line read) for a cut, and no
    line is yielded twice."""
    root = tmp_path / "run"
    write(root, layout.METRICS, jsonl(metrics_line(s) for s in range(3)))
    write(root, layout.METRICS + sidecar, jsonl([metrics_line(2)]))  # an earlier rewind's
    st = _AwayOnce(str(root), layout.METRICS + sidecar)
    append = _appender(root / layout.METRICS)
    actions = [lambda: setattr(st, "armed", True), lambda: None,
               lambda: append(jsonl([metrics_line(3)]).encode())]

    def sleep(_: float) -> None:
        if actions:
            actions.pop(0)()

    got = list(follow_jsonl(st, layout.METRICS, poll=0, idle_timeout=0.3, sleep=sleep))
    assert [r["step"] for r in got] == [0, 1, 2, 3]
