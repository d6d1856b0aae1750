"""Unit tests of rlio.resume: the restart point, read from the ledger's end, on real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rlio import layout, resume
from rlio.errors import ResumeError
from rlio.resume import ResumeState, read_resume_state, resume_document
from rlio.storage import LocalStorage, open_storage


def ck(name: str, batch: int | None = None, **extra: Any) -> dict[str, Any]:
    """A checkpoint record in the cookbook's key order."""
    rec: dict[str, Any] = {"name": name}
    if batch is not None:
        rec["batch"] = batch
    rec.update(extra)
    return rec


def line(rec: Any) -> bytes:
    return json.dumps(rec, separators=(",", ":")).encode() + b"\n"


def write(run: Path, rel: str, *chunks: bytes | dict[str, Any]) -> None:
    path = run / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(c if isinstance(c, bytes) else line(c) for c in chunks))


def metrics(run: Path, steps: list[int | None]) -> None:
    write(run, layout.METRICS,
          *[line({"step": s, "x": 1}) if s is not None else line({"x": 1}) for s in steps])


def must(state: ResumeState | None) -> ResumeState:
    assert state is not None
    return state


# -- the restart point -------------------------------------------------------------------------


def test_missing_run_is_a_fresh_start(tmp_path: Path) -> None:
    """A run directory that does not exist is a fresh run (None), as for RunWriter(resume=True),
    and reading it creates nothing."""
    assert read_resume_state(tmp_path / "absent") is None
    assert not (tmp_path / "absent").exists()


@pytest.mark.parametrize("content", [None, b"", b"\n\n", line(ck("000001", 1))])
def test_no_resumable_checkpoint_is_none(tmp_path: Path, content: bytes | None) -> None:
    """No ledger, an empty one, blank lines only, or no record with state_path: None."""
    if content is not None:
        write(tmp_path, layout.CHECKPOINTS, content)
    assert read_resume_state(tmp_path) is None


def test_last_resumable_record_with_every_key(tmp_path: Path) -> None:
    """The state is the last record with state_path, every key kept; sampler-only ones pass."""
    last = ck("000020", 20, epoch=1, state_path="tinker://r/weights/000020",
              sampler_path="tinker://r/sampler_weights/000020", rolling=True, elapsed_tokens=7)
    write(tmp_path, layout.CHECKPOINTS,
          ck("000010", 10, state_path="tinker://r/weights/000010"),
          last,
          ck("000030", 30, sampler_path="tinker://r/sampler_weights/000030"))
    state = must(read_resume_state(tmp_path))
    assert state.checkpoint == last
    assert list(state.checkpoint) == list(last)  # key order as written
    assert (state.line, state.next_batch, state.next_epoch) == (2, 20, 1)
    assert state.torn_tail is False and state.skipped_lines == []


def test_epoch_absent_is_none_and_required_key_is_a_parameter(tmp_path: Path) -> None:
    """next_epoch is None without epoch; required_key='sampler_path' picks the sampler record."""
    write(tmp_path, layout.CHECKPOINTS,
          ck("000010", 10, state_path="tinker://r/w/10"),
          ck("000030", 30, sampler_path="tinker://r/s/30"))
    assert must(read_resume_state(tmp_path)).next_epoch is None
    sampler = must(read_resume_state(tmp_path, required_key="sampler_path"))
    assert (sampler.next_batch, sampler.line) == (30, 2)


def test_null_required_key_is_not_resumable(tmp_path: Path) -> None:
    """A record whose state_path is null is passed over like one without it."""
    write(tmp_path, layout.CHECKPOINTS,
          ck("000001", 1, state_path="tinker://r/w/1"), ck("000002", 2, state_path=None))
    assert must(read_resume_state(tmp_path)).next_batch == 1


def test_accepts_an_open_storage_and_a_file_uri(tmp_path: Path) -> None:
    """read_resume_state takes a Storage or a file:// URI as well as a path."""
    write(tmp_path, layout.CHECKPOINTS, ck("000004", 4, state_path="tinker://r/w/4"))
    assert must(read_resume_state(LocalStorage(str(tmp_path)))).next_batch == 4
    assert must(read_resume_state(f"file://{tmp_path}")).next_batch == 4


def test_nonfinite_tokens_in_a_record_are_read(tmp_path: Path) -> None:
    """A record with a NaN token (as the cookbook writes) still resumes."""
    write(tmp_path, layout.CHECKPOINTS,
          b'{"name":"000005","batch":5,"state_path":"tinker://r/w/5","loss":NaN}\n')
    state = must(read_resume_state(tmp_path))
    assert state.next_batch == 5 and state.checkpoint["loss"] != state.checkpoint["loss"]


# -- torn, blank and unparseable lines ---------------------------------------------------------


def test_unterminated_last_line_is_torn_and_ignored(tmp_path: Path) -> None:
    """A last line without its newline is never used, even when it parses, and is reported."""
    write(tmp_path, layout.CHECKPOINTS,
          ck("000001", 1, state_path="tinker://r/w/1"),
          line(ck("000002", 2, state_path="tinker://r/w/2")).rstrip(b"\n"))
    state = must(read_resume_state(tmp_path))
    assert state.next_batch == 1 and state.torn_tail is True
    assert [(s.line, s.kind) for s in state.skipped_lines] == [(2, "torn")]


def test_terminated_unparseable_last_line_is_torn(tmp_path: Path) -> None:
    """An unparseable last complete line is torn (docs/format.md §2), as in the writer's repair."""
    write(tmp_path, layout.CHECKPOINTS,
          ck("000001", 1, state_path="tinker://r/w/1"), b'{"name":"0000\x00\x00\n')
    state = must(read_resume_state(tmp_path))
    assert state.torn_tail is True and state.skipped_lines[0].kind == "torn"


def test_blank_and_unparseable_lines_are_skipped_and_reported_with_lines(tmp_path: Path) -> None:
    """Blank and unparseable lines after the record are skipped, each with its 1-based line."""
    write(tmp_path, layout.CHECKPOINTS,
          b"garbage before\n",
          ck("000001", 1, state_path="tinker://r/w/1"),
          b"\n",
          b"{not json\n",
          b"[1, 2]\n",
          b"   \n",
          ck("000002", 2, sampler_path="tinker://r/s/2"))
    state = must(read_resume_state(tmp_path))
    assert state.line == 2 and state.torn_tail is False
    assert [(s.line, s.kind) for s in state.skipped_lines] == [
        (3, "blank"), (4, "unparseable"), (5, "not_object"), (6, "blank")]
    assert "b'{not json'" in state.skipped_lines[1].reason


def test_line_counts_blank_and_bad_lines_before_the_record(tmp_path: Path) -> None:
    """line is 1 + the newlines before the record, so skipped lines before it count."""
    write(tmp_path, layout.CHECKPOINTS, b"\n", b"junk\n", b"\n",
          ck("000003", 3, state_path="tinker://r/w/3"))
    assert must(read_resume_state(tmp_path)).line == 4


@pytest.mark.parametrize(
    ("rec", "problem"),
    [
        (ck("000007", state_path="tinker://r/w/7"), "but no batch"),
        ({"name": "000007", "batch": None, "state_path": "t://w"}, "but no batch"),
        ({"name": "000007", "batch": "7", "state_path": "t://w"}, "has batch '7'"),
        (ck("000007", -1, state_path="tinker://r/w/7"), "has batch -1"),
        ({"name": "000007", "batch": True, "state_path": "t://w"}, "has batch True"),
        ({"name": "000007", "batch": 7.0, "state_path": "t://w"}, "has batch 7.0"),
        (ck("000007", 7, epoch="zero", state_path="tinker://r/w/7"), "has epoch 'zero'"),
    ],
)
def test_resumable_record_without_integer_batch_is_an_error_naming_the_line(
    tmp_path: Path, rec: dict[str, Any], problem: str
) -> None:
    """A resumable record without a usable batch raises ResumeError naming file, line and value."""
    write(tmp_path, layout.CHECKPOINTS, ck("000001", 1, state_path="tinker://r/w/1"), b"\n", rec)
    with pytest.raises(ResumeError) as info:
        read_resume_state(tmp_path)
    assert info.value.line == 3
    assert "checkpoints.jsonl:3: resumable checkpoint '000007'" in str(info.value)
    assert problem in str(info.value)


def test_records_longer_than_a_read_chunk(tmp_path: Path) -> None:
    """Lines much longer than the 64 KiB backward chunk are read whole and numbered right."""
    big = "x" * 300_000
    write(tmp_path, layout.CHECKPOINTS,
          ck("000001", 1, state_path="tinker://r/w/1", note=big),
          ck("000002", 2, state_path="tinker://r/w/2", note=big),
          ck("000003", 3, sampler_path="tinker://r/s/3", note=big))
    state = must(read_resume_state(tmp_path))
    assert (state.next_batch, state.line, len(state.checkpoint["note"])) == (2, 2, 300_000)


def test_line_over_the_size_cap_is_skipped_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line over the cap is reported as too long and passed over without holding it."""
    monkeypatch.setattr(resume, "MAX_TAIL_LINE", 100_000)
    write(tmp_path, layout.CHECKPOINTS,
          ck("000001", 1, state_path="tinker://r/w/1"),
          ck("000002", 2, state_path="tinker://r/w/2", note="y" * 500_000))
    state = must(read_resume_state(tmp_path))
    assert state.next_batch == 1
    assert [(s.line, s.kind) for s in state.skipped_lines] == [(2, "too_long")]


class CountingStorage(LocalStorage):
    """A real local storage that counts the bytes read through it."""

    read = 0

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        data = super().read_range(rel, start, end)
        self.read += len(data)
        return data

    def open_read(self, rel: str) -> Any:
        raise AssertionError(f"{rel} read from its start")


def test_reads_only_the_end_of_a_large_ledger(tmp_path: Path) -> None:
    """Finding the restart point of a 200,000-record ledger reads only its last chunks."""
    recs = b"".join(b'{"name":"%06d","batch":%d,"state_path":"tinker://r/w/%06d"}\n' % (i, i, i)
                    for i in range(200_000))
    write(tmp_path, layout.CHECKPOINTS, recs, ck("x", 1, sampler_path="s"), b"\n", b"{torn")
    write(tmp_path, layout.METRICS, b"".join(b'{"step":%d}\n' % i for i in range(200_000)))
    storage = CountingStorage(str(tmp_path))
    state = must(read_resume_state(storage))
    assert state.next_batch == 199_999 and state.torn_tail
    assert storage.read <= 4 * 64 * 1024 < len(recs) // 20


# -- what a restart supersedes -----------------------------------------------------------------


def test_superseded_metrics_lines_and_iteration_files(tmp_path: Path) -> None:
    """Metrics lines with step >= next_batch and per-iteration files of both layouts are listed."""
    write(tmp_path, layout.CHECKPOINTS, ck("000003", 3, state_path="tinker://r/w/3"))
    metrics(tmp_path, [0, 1, 2, 3, 4, 5])
    files = ["train_iteration_000002.html", "train_iteration_000003.html",
             "train_iteration_000003_logtree.json",
             "eval_test_iteration_000004_rollout_summaries.jsonl",
             "timing_gantt_000005.html", "iteration_000007/eval_gsm8k_logtree.json",
             "iteration_000001/train.html", "notes_000009.txt", "metrics.jsonl.superseded"]
    for f in files:
        write(tmp_path, f, b"")
    state = must(read_resume_state(tmp_path))
    assert state.superseded_metrics_lines == (4, 6)
    assert state.superseded_iteration_files == sorted([
        "train_iteration_000003.html", "train_iteration_000003_logtree.json",
        "eval_test_iteration_000004_rollout_summaries.jsonl", "timing_gantt_000005.html",
        "iteration_000007/eval_gsm8k_logtree.json"])


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([0, 1, 2], None),  # the crash came right after the checkpoint
        ([], None),
        ([0, 1, 2, 3, 3, 4], (4, 6)),  # an async eval line repeats step 3
        ([0, 1, 2, 3, None, 4], (4, 6)),  # a line without step inside the suffix goes with it
        ([0, 1, 2, None, 3, 4], (5, 6)),  # ...but the suffix starts at a line with a step
        ([0, 1, 2, 3, 2, 4], (6, 6)),  # a lagging eval line below 3 ends the backward read
        ([5, 6, 7], (1, 3)),
    ],
)
def test_superseded_metrics_range_rules(
    tmp_path: Path, steps: list[int | None], expected: tuple[int, int] | None
) -> None:
    """The superseded metrics range is the suffix whose steps are all >= next_batch."""
    write(tmp_path, layout.CHECKPOINTS, ck("000003", 3, state_path="tinker://r/w/3"))
    metrics(tmp_path, steps)
    assert must(read_resume_state(tmp_path)).superseded_metrics_lines == expected


def test_torn_metrics_tail_is_not_a_superseded_line(tmp_path: Path) -> None:
    """An unterminated last metrics line is not counted in the superseded range."""
    write(tmp_path, layout.CHECKPOINTS, ck("000001", 1, state_path="tinker://r/w/1"))
    write(tmp_path, layout.METRICS, line({"step": 0}), line({"step": 1}), b'{"step": 2, "x"')
    assert must(read_resume_state(tmp_path)).superseded_metrics_lines == (2, 2)


def test_line_numbers_stay_right_after_later_appends(tmp_path: Path) -> None:
    """Lazy line numbers count bytes before the record, which later appends do not change."""
    write(tmp_path, layout.CHECKPOINTS, b"\n", ck("000002", 2, state_path="tinker://r/w/2"))
    metrics(tmp_path, [0, 1, 2, 3])
    state = must(read_resume_state(tmp_path))
    with open(tmp_path / layout.CHECKPOINTS, "ab") as f:
        f.write(line(ck("000009", 9, state_path="tinker://r/w/9")))
    with open(tmp_path / layout.METRICS, "ab") as f:
        f.write(line({"step": 4}))
    assert (state.line, state.superseded_metrics_lines) == (2, (3, 4))


# -- the JSON document and the text description ------------------------------------------------


def test_resume_document_has_exactly_the_documented_shape(tmp_path: Path) -> None:
    """resume_document gives the exact keys and values of `rlio resume --format json`."""
    rec = ck("000002", 2, epoch=0, state_path="tinker://r/w/2", rolling=True)
    write(tmp_path, layout.CHECKPOINTS, b"\n", rec, b"{torn")
    metrics(tmp_path, [0, 1, 2, 3])
    write(tmp_path, "train_iteration_000002_rollout_summaries.jsonl", b"")
    doc = resume_document(read_resume_state(tmp_path))
    assert doc == {
        "checkpoint": rec, "line": 2, "next_batch": 2, "next_epoch": 0, "torn_tail": True,
        "superseded": {"metrics_lines": [3, 4],
                       "iteration_files": ["train_iteration_000002_rollout_summaries.jsonl"]},
    }
    json.dumps(doc, allow_nan=False)


def test_resume_document_without_checkpoint_reports_a_restart_from_zero(tmp_path: Path) -> None:
    """With no checkpoint the fields are null; torn_tail and a restart from 0 are reported."""
    empty = {"checkpoint": None, "line": None, "next_batch": None, "next_epoch": None,
             "torn_tail": False, "superseded": {"metrics_lines": None, "iteration_files": []}}
    assert resume_document(None) == empty
    assert resume_document(None, run=tmp_path) == empty
    write(tmp_path, layout.CHECKPOINTS, b'{"name":"000001","batch":1,"state_pa')
    metrics(tmp_path, [0, 1])
    write(tmp_path, "iteration_000000/train.html", b"")
    assert resume_document(None, run=tmp_path) == {
        **empty, "torn_tail": True,
        "superseded": {"metrics_lines": [1, 2], "iteration_files": ["iteration_000000/train.html"]},
    }


def test_describe_names_the_checkpoint_restart_and_superseded(tmp_path: Path) -> None:
    """describe() names the checkpoint, its line, the restart batch, skips and what is replaced."""
    write(tmp_path, layout.CHECKPOINTS, ck("000002", 2, epoch=1, state_path="tinker://r/w/2"),
          b"\n")
    metrics(tmp_path, [0, 1, 2])
    write(tmp_path, "train_iteration_000002.html", b"")
    text = must(read_resume_state(tmp_path)).describe()
    assert text.splitlines() == [
        "resume from checkpoint '000002' (checkpoints.jsonl line 1): restart at batch 2, epoch 1",
        "  state_path: tinker://r/w/2",
        "  skipped checkpoints.jsonl line 2: blank line",
        "  supersedes metrics.jsonl lines 3-3 (step >= 2)",
        "  supersedes 1 per-iteration file (iteration >= 2)",
    ]


# -- prepare_resume: the rewind ----------------------------------------------------------------


def test_prepare_resume_moves_superseded_metrics_to_the_sidecar(tmp_path: Path) -> None:
    """Lines with step >= next_batch move to metrics.jsonl.superseded; nothing is lost."""
    write(tmp_path, layout.CHECKPOINTS, ck("000003", 3, state_path="tinker://r/w/3"))
    metrics(tmp_path, [0, 1, 2, 3, 4, 5])
    before = (tmp_path / layout.METRICS).read_bytes()
    state = must(resume.prepare_resume(open_storage(tmp_path)))
    kept = (tmp_path / layout.METRICS).read_bytes()
    moved = (tmp_path / (layout.METRICS + layout.SUPERSEDED_SUFFIX)).read_bytes()
    assert kept + moved == before
    assert [json.loads(x)["step"] for x in kept.splitlines()] == [0, 1, 2]
    assert state.superseded_metrics_lines == (4, 6)
    assert must(read_resume_state(tmp_path)).superseded_metrics_lines is None


def test_prepare_resume_twice_appends_to_the_sidecar_and_repairs_torn_tails(tmp_path: Path) -> None:
    """A second resume appends to the sidecar; torn tails of both files go to .torn first."""
    storage = open_storage(tmp_path)
    write(tmp_path, layout.CHECKPOINTS, ck("000002", 2, state_path="tinker://r/w/2"), b'{"na')
    metrics(tmp_path, [0, 1, 2, 3])
    with open(tmp_path / layout.METRICS, "ab") as f:
        f.write(b'{"step": 4')
    state = must(resume.prepare_resume(storage))
    assert state.torn_tail is True
    assert (tmp_path / (layout.CHECKPOINTS + layout.TORN_SUFFIX)).read_bytes() == b'{"na\n'
    assert (tmp_path / (layout.METRICS + layout.TORN_SUFFIX)).read_bytes() == b'{"step": 4\n'
    with open(tmp_path / layout.METRICS, "ab") as f:
        f.write(line({"step": 2}) + line({"step": 3}))
    with open(tmp_path / layout.CHECKPOINTS, "ab") as f:
        f.write(line(ck("000003", 3, state_path="tinker://r/w/3")))
    again = must(resume.prepare_resume(storage))
    assert (again.next_batch, again.torn_tail, again.line) == (3, False, 2)
    side = (tmp_path / (layout.METRICS + layout.SUPERSEDED_SUFFIX)).read_bytes()
    assert [json.loads(x)["step"] for x in side.splitlines()] == [2, 3, 3]
    steps = [json.loads(x)["step"] for x in (tmp_path / layout.METRICS).read_bytes().splitlines()]
    assert steps == [0, 1, 2]


def test_prepare_resume_without_checkpoint_supersedes_all_metrics(tmp_path: Path) -> None:
    """With no resumable checkpoint the restart is at 0: all metrics lines move to the sidecar."""
    write(tmp_path, layout.CHECKPOINTS, ck("000001", 1, sampler_path="tinker://r/s/1"))
    metrics(tmp_path, [0, 1, 2])
    before = (tmp_path / layout.METRICS).read_bytes()
    assert resume.prepare_resume(open_storage(tmp_path)) is None
    assert (tmp_path / layout.METRICS).read_bytes() == b""
    assert (tmp_path / (layout.METRICS + layout.SUPERSEDED_SUFFIX)).read_bytes() == before


def test_prepare_resume_on_a_fresh_run_creates_nothing(tmp_path: Path) -> None:
    """A run with no files is left as it is."""
    assert resume.prepare_resume(open_storage(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []


def test_memory_uri_run_resumes_and_rewinds() -> None:
    """On a memory:// run, the state is read from the end and resume=True rewinds metrics."""
    import uuid

    from rlio import RunWriter

    uri = f"memory://rlio-resume-test/{uuid.uuid4().hex}"
    with RunWriter(uri) as run:
        for i in range(6):
            run.log_metrics({"progress/batch": i}, step=i)
            if i == 2:
                run.record_checkpoint("000003", batch=3, state_path="tinker://r/w/3")
    state = must(read_resume_state(uri))
    assert (state.line, state.next_batch, state.superseded_metrics_lines) == (1, 3, (4, 6))
    with RunWriter(uri, resume=True) as run:
        assert must(run.resume_state).superseded_metrics_lines == (4, 6)
    storage = open_storage(uri)
    kept = storage.read_bytes(layout.METRICS).splitlines()
    moved = storage.read_bytes(layout.METRICS + layout.SUPERSEDED_SUFFIX).splitlines()
    assert [json.loads(x)["step"] for x in kept] == [0, 1, 2]
    assert [json.loads(x)["step"] for x in moved] == [3, 4, 5]


def test_rewound_run_validates_without_warnings(tmp_path: Path) -> None:
    """A crashed, rewound and continued run has no error or warning; its sidecars are info."""
    from rlio import RunWriter, validate_run

    with RunWriter(tmp_path) as run:
        run.write_config({"lr": 1e-5})
        for i in range(6):
            run.log_metrics({"progress/batch": i}, step=i)
            if i == 2:
                run.record_checkpoint("000003", batch=3, state_path="tinker://r/w/3")
    with open(tmp_path / layout.METRICS, "ab") as f:
        f.write(b'{"step": 6, "progress/ba')  # the crash
    with RunWriter(tmp_path, resume=True) as run:
        state = must(run.resume_state)
        for i in range(state.next_batch, 8):
            run.log_metrics({"progress/batch": i}, step=i)
    steps = [json.loads(x)["step"] for x in (tmp_path / layout.METRICS).read_bytes().splitlines()]
    assert steps == list(range(8))
    report = validate_run(tmp_path)
    assert [f for f in report.findings if str(f.severity) != "info"] == []
    assert {f.file for f in report.findings if f.code == "RL305"} == {
        "metrics.jsonl.superseded", "metrics.jsonl.torn"}


def test_ledger_that_is_not_a_file_is_a_resume_error(tmp_path: Path) -> None:
    """A directory named checkpoints.jsonl gives ResumeError, not a silent fresh start."""
    (tmp_path / layout.CHECKPOINTS).mkdir()
    with pytest.raises(ResumeError, match=r"checkpoints\.jsonl is a dir, not a regular file"):
        read_resume_state(tmp_path)


def test_a_killed_runs_timing_spans_are_superseded_with_its_metrics(tmp_path: Path) -> None:
    """After a SIGKILL and resume=True, timing_spans.jsonl holds one line per step, like
    metrics.jsonl: the superseded steps' spans move to timing_spans.jsonl.superseded."""
    from factories import run_python

    from rlio import RunWriter, validate_run

    proc = run_python("""
        import os, signal, sys
        from rlio import RunWriter
        run = RunWriter(sys.argv[1])
        for i in range(6):
            with run.timer("sample"):
                pass
            run.log_metrics({"progress/batch": i}, step=i)
            if i == 2:
                run.record_checkpoint("000003", batch=3, state_path="tinker://r/w/3")
        run.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    """, str(tmp_path))
    assert proc.returncode == -9, proc.stderr
    with RunWriter(tmp_path, resume=True) as run:
        for i in range(must(run.resume_state).next_batch, 6):
            with run.timer("sample"):
                pass
            run.log_metrics({"progress/batch": i}, step=i)

    def steps(rel: str) -> list[int]:
        return [json.loads(x)["step"] for x in (tmp_path / rel).read_bytes().splitlines()]

    assert steps(layout.TIMING_SPANS) == steps(layout.METRICS) == list(range(6))
    assert steps(layout.TIMING_SPANS + layout.SUPERSEDED_SUFFIX) == [3, 4, 5]
    assert "RL415" not in {f.code for f in validate_run(tmp_path).findings}
