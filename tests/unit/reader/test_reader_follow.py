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
