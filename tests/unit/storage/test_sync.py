"""rlio.sync on memory://: new whole lines appended, torn tails held back, rewinds mirrored,
changed files replaced, bytes per pass flat, and the mirror validates as the local run."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from factories import cli, cookbook_run, findings, jsonl, metrics_line

from rlio import NotARunError, layout, sync
from rlio.storage import open_storage


@pytest.fixture(autouse=True)
def _sync_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The advisory sync cache of each test in its own folder (and its subprocesses')."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _uri() -> str:
    return f"memory://sync-{uuid.uuid4().hex[:12]}"


def _logs_equal(run: Path, uri: str) -> None:
    remote = open_storage(uri)
    for rel in (layout.METRICS, layout.CHECKPOINTS):
        data = (run / rel).read_bytes()
        assert remote.read_bytes(rel) == data[:data.rfind(b"\n") + 1], rel


def test_a_growing_log_sends_only_its_new_whole_lines(tmp_path: Path) -> None:
    """Each pass sends the new lines of metrics.jsonl alone (flat as the file grows), never its
    torn tail; the mirror's logs equal the local whole lines and it validates the same."""
    run, uri = cookbook_run(tmp_path / "run"), _uri()
    sync(run, uri)
    line = jsonl([metrics_line(100, pad="x" * 40)])
    sent = []
    for s in range(20):
        with (run / layout.METRICS).open("a") as f:
            f.write(jsonl([metrics_line(100 + s, pad="x" * 40)]) + ('{"step": 1' if s < 19 else ""))
        sent.append(sync(run, uri).bytes_sent)
        _logs_equal(run, uri)
    assert max(sent) <= len(line) + len('{"step": 1') + 2  # one line (and a completed tail)
    assert sync(run, uri).bytes_sent == 0
    assert findings(uri) == findings(run)


def test_a_rewound_log_and_a_changed_file_are_replaced(tmp_path: Path) -> None:
    """A local rewind (the remote is no prefix any more) writes the remote log again; a changed
    config.json is replaced; an unchanged file is not sent again."""
    run, uri = cookbook_run(tmp_path / "run"), _uri()
    sync(run, uri)
    (run / layout.METRICS).write_text(jsonl([metrics_line(0, again=True)]))
    (run / layout.CONFIG).write_text('{"lr": 0.5}')
    stats = sync(run, uri)
    assert stats.replaced == 2 and stats.appended == 0
    remote = open_storage(uri)
    assert remote.read_bytes(layout.CONFIG) == b'{"lr": 0.5}'
    _logs_equal(run, uri)
    assert findings(uri) == findings(run)


def test_the_cli_mirrors_a_run(tmp_path: Path, capsys: object) -> None:
    """rlio sync RUN URI exits 0 and says what it sent; a folder that is no run exits 2."""
    run, uri = cookbook_run(tmp_path / "run"), _uri()
    code, out, _ = cli(capsys, "sync", str(run), uri)  # type: ignore[arg-type]
    assert code == 0 and "bytes sent" in out
    _logs_equal(run, uri)
    (tmp_path / "empty").mkdir()
    code, _, err = cli(capsys, "sync", str(tmp_path / "empty"), _uri())  # type: ignore[arg-type]
    assert code == 2 and "no run found" in err


def test_a_follower_of_the_mirror_sees_a_local_rewind_once(tmp_path: Path) -> None:
    """A resume rewinds the local metrics.jsonl (lines to .superseded) and logs the same steps
    again; once synced, a follower of the mirror yields the re-logged records once each."""
    from rlio.cookbook import RlioStorage
    from rlio.reader.follow import follow_jsonl

    run, uri = tmp_path / "run", _uri()
    run.mkdir()
    (run / layout.METRICS).write_text(jsonl(metrics_line(s) for s in range(20)))
    sync(run, uri)

    def rewind_relog_and_sync() -> None:
        with RlioStorage(str(run)) as st:  # the holder: an attached writer never rewinds
            st.write(layout.METRICS, jsonl(metrics_line(s) for s in range(5)).encode())
        with (run / layout.METRICS).open("a") as f:
            f.write(jsonl(metrics_line(s) for s in range(5, 10)))
        sync(run, uri)

    actions = [rewind_relog_and_sync]

    def sleep(_: float) -> None:
        if actions:
            actions.pop(0)()

    got = [r["step"] for r in follow_jsonl(open_storage(uri), layout.METRICS, poll=0,
                                           idle_timeout=0.2, sleep=sleep)]
    assert got == [*range(20), *range(5, 10)]


def test_follow_waits_for_the_run_to_appear(tmp_path: Path) -> None:
    """With follow, a sync started before the trainer created the run waits for it and mirrors
    it; without follow (or once idle_timeout passes) a missing run is NotARunError."""
    run, uri = tmp_path / "run", _uri()
    with pytest.raises(NotARunError):
        sync(run, uri)
    with pytest.raises(NotARunError):
        sync(run, uri, follow=True, poll=0, idle_timeout=0.05)
    actions = [lambda: cookbook_run(run)]

    def sleep(_: float) -> None:
        if actions:
            actions.pop(0)()

    stats = sync(run, uri, follow=True, poll=0, idle_timeout=0.1, sleep=sleep)
    assert stats.bytes_sent > 0
    _logs_equal(run, uri)
