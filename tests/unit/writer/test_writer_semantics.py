"""Writer semantics: what the writer acknowledges validates without error and resumes; what it
refuses it refuses at the call (checkpoints, paths, fresh starts, labels, iterations, timing)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from factories import errors, read_jsonl, trajectory

from rlio import RecordError, RunExistsError, RunWriter, open_run, read_resume_state, validate_run
from rlio import layout as L
from rlio.findings import Severity

# -- item 1: resumable checkpoints ------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [
    {"state_path": "tinker://r/w/c2"},
    {"epoch": 1, "state_path": "tinker://r/w/c2"},
])
def test_resumable_checkpoint_without_batch_is_refused(tmp_path: pathlib.Path,
                                                       kwargs: dict[str, Any]) -> None:
    """A record with state_path but no batch (RL or epoch-only SL) is refused; resume works."""
    with RunWriter(tmp_path) as run:
        run.record_checkpoint("c1", batch=1, state_path="tinker://r/w/c1")
        with pytest.raises(RecordError, match="no batch") as info:
            run.record_checkpoint("c2", **kwargs)
    assert info.value.pointer == "/batch"
    assert [r["name"] for r in read_jsonl(tmp_path / L.CHECKPOINTS)] == ["c1"]
    state = read_resume_state(tmp_path)
    assert state is not None and state.next_batch == 1
    with RunWriter(tmp_path, resume=True) as run:
        assert run.resume_state is not None


@pytest.mark.parametrize("batch", [1e30, 5.0, 2**63])
def test_a_batch_resume_cannot_use_is_refused(tmp_path: pathlib.Path, batch: Any) -> None:
    """An integral float or an int beyond int64 as a resumable batch is refused by the writer,
    exactly as resume refuses it (one rule, rlio.rules.is_restart_index); resume then works."""
    with RunWriter(tmp_path) as run:
        run.record_checkpoint("c1", batch=1, state_path="tinker://r/w/c1")
        with pytest.raises(RecordError, match=r"has batch .*: a restart needs an int from 0 to "
                                              r"2\*\*63 - 1") as info:
            run.record_checkpoint("c2", batch=batch, state_path="tinker://r/w/c2")
    assert info.value.pointer == "/batch"
    assert [r["name"] for r in read_jsonl(tmp_path / L.CHECKPOINTS)] == ["c1"]
    with RunWriter(tmp_path, resume=True) as run:
        assert run.resume_state is not None and run.resume_state.next_batch == 1


def test_checkpoints_without_the_resume_key_need_no_batch(tmp_path: pathlib.Path) -> None:
    """A sampler-only record, or one without paths, may omit batch; SL writes epoch and batch."""
    with RunWriter(tmp_path) as run:
        run.write_config({})
        run.record_checkpoint("s", sampler_path="tinker://r/sampler_weights/s")
        run.record_checkpoint("e", epoch=2, batch=7, state_path="tinker://r/w/e")
    state = read_resume_state(tmp_path)
    assert state is not None and (state.next_epoch, state.next_batch) == (2, 7)
    assert errors(tmp_path) == []


# -- item 3: state and sampler paths ------------------------------------------------------------


@pytest.mark.parametrize("path", ["tinker://r/w/1", "gs://b/ckpt/1", "/abs/ckpt", "rel/ckpt",
                                  pathlib.Path("ckpt") / "p"])
def test_state_paths_accept_uris_local_paths_and_pathlike(tmp_path: pathlib.Path,
                                                          path: Any) -> None:
    """URIs, absolute and relative paths and os.PathLike (written as a string) are accepted."""
    with RunWriter(tmp_path) as run:
        run.write_config({})
        run.record_checkpoint("c", batch=1, state_path=path, sampler_path=path)
    [rec] = read_jsonl(tmp_path / L.CHECKPOINTS)
    assert rec["state_path"] == rec["sampler_path"] == str(path)
    assert errors(tmp_path) == []
    state = read_resume_state(tmp_path)
    assert state is not None and state.checkpoint["state_path"] == str(path)


def test_empty_state_path_is_refused(tmp_path: pathlib.Path) -> None:
    """Only the empty string is refused, naming the key."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.record_checkpoint("c", batch=1, sampler_path="")
    assert info.value.pointer == "/sampler_path"


# -- item 2: ranges are warnings ----------------------------------------------------------------


@pytest.mark.parametrize("metrics", [
    {"progress/done_frac": 1.6}, {"progress/done_frac": -0.1}, {"optim/lr": -1e-5},
    {"time/sample": -0.5}, {"time/sample:count": -1},
])
def test_out_of_range_metrics_are_written_and_warned(tmp_path: pathlib.Path,
                                                     metrics: dict[str, Any]) -> None:
    """A range expectation broken is written (no exception) and reported as RL205, not an
    error."""
    with RunWriter(tmp_path) as run:
        run.write_config({"lr": 1})
        run.log_metrics(metrics, step=0)
    assert read_jsonl(tmp_path / L.METRICS) == [{"step": 0, **metrics}]
    report = validate_run(tmp_path)
    assert report.ok
    [warn] = [f for f in report.findings if f.code == "RL205"]
    assert warn.severity is Severity.WARNING and warn.line == 1
    assert warn.pointer == "/" + next(iter(metrics)).replace("/", "~1")


# -- item 4: fresh starts and reopened runs -------------------------------------------------------


def test_read_resume_state_on_a_missing_path_is_none(tmp_path: pathlib.Path) -> None:
    """A path that does not exist is a fresh run, as RunWriter(path, resume=True) sees it."""
    assert read_resume_state(tmp_path / "nope") is None
    with RunWriter(tmp_path / "nope", resume=True) as run:
        assert run.resume_state is None


@pytest.mark.parametrize("what", ["metrics", "checkpoint", "iteration"])
def test_reopening_a_run_with_records_needs_resume(tmp_path: pathlib.Path, what: str) -> None:
    """A fresh start over a run holding records raises RunExistsError and changes nothing."""
    with RunWriter(tmp_path) as run:
        if what == "metrics":
            run.log_metrics({"x": 1}, step=0)
        elif what == "checkpoint":
            run.record_checkpoint("c", batch=0)
        else:
            run.write_rollout_summaries(0, [])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(RunExistsError, match="resume=True") as info:
        RunWriter(tmp_path)
    assert "new log_path" in str(info.value)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    RunWriter(tmp_path, attach=True).close()  # a helper joining the run is not a fresh start
    RunWriter(tmp_path, resume=True).close()


def test_a_config_alone_is_no_record(tmp_path: pathlib.Path) -> None:
    """A run killed after write_config (an empty metrics file) may be started again."""
    with RunWriter(tmp_path) as run:
        run.write_config({"lr": 1})
    with RunWriter(tmp_path) as run:
        run.log_metrics({"x": 1}, step=0)


# -- item 5: names the file system would refuse ---------------------------------------------------


def test_long_evaluator_names_are_capped_with_a_stable_hash(tmp_path: pathlib.Path) -> None:
    """Labels are cut only past 209 characters (where a file name would pass 255 bytes): a
    209-character label is kept whole, two longer names with one prefix never collide, every
    file name fits 255 bytes, and the runs validate."""
    a, b = "x" * 300 + "a", "x" * 300 + "b"
    la, lb = L.sanitize_label(a), L.sanitize_label(b)
    assert L.MAX_LABEL == 209
    assert len(la) == len(lb) == L.MAX_LABEL and la != lb
    assert la == L.sanitize_label(a) and L.is_valid_label(la)
    assert L.sanitize_label("y" * 209) == "y" * 209
    assert L.sanitize_label("y" * 210) != "y" * 210
    with RunWriter(tmp_path) as run:
        run.write_config({})
        for name in (a, b, "y" * 209):
            run.write_rollout_summaries(0, [], evaluator=name)
            with run.logtree(0, title="t", evaluator=name):
                pass
    names = [p.name for p in tmp_path.iterdir()]
    assert max(len(n.encode()) for n in names) == 255  # the 209-character label, exactly
    assert f"eval_{'y' * 209}_iteration_000000_rollout_summaries.jsonl" in names
    assert errors(tmp_path) == []


def test_a_label_too_long_for_a_seven_digit_iteration_is_refused(tmp_path: pathlib.Path) -> None:
    """Past iteration 999999 a 209-character label would make a 256-byte name: ValueError
    naming the fix, and nothing is written."""
    with RunWriter(tmp_path) as run, pytest.raises(ValueError, match="would exceed 255 bytes"):
        run.write_rollout_summaries(10**6, [], evaluator="y" * 209)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.jsonl"]


def test_a_cookbook_length_evaluator_is_written_and_read_under_its_own_name(
        tmp_path: pathlib.Path) -> None:
    """A 120-character evaluator (the cookbook writes it as is) keeps its file name: its rollouts
    with the cookbook's split are accepted and read back by name; an unknown one is a
    ValueError naming the evaluators that exist."""
    name = "e" * 120
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(0, [trajectory(0, split=f"eval/{name}")], evaluator=name)
    assert (tmp_path / f"eval_{name}_iteration_000000_rollout_summaries.jsonl").is_file()
    run_ = open_run(tmp_path)
    assert [r["split"] for r in run_.rollouts(0, evaluator=name)] == [f"eval/{name}"]
    with pytest.raises(ValueError, match=f"no evaluator 'nope' in run .*; evaluators with "
                                         f"files: '{name}'$"):
        run_.rollouts(0, evaluator="nope")


@pytest.mark.parametrize("iteration", [2**63, 10**300])
def test_iterations_past_64_bits_are_refused(tmp_path: pathlib.Path, iteration: int) -> None:
    """An iteration no file name or JSON reader holds raises ValueError; nothing is written."""
    with RunWriter(tmp_path) as run:
        with pytest.raises(ValueError, match="at most 2"):
            run.write_rollout_summaries(iteration, [])
        with pytest.raises(ValueError, match="at most 2"), run.logtree(iteration, title="t"):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [L.METRICS]
    assert L.format_iteration(2**63 - 1) == str(2**63 - 1)


# -- item 8: timing spans -------------------------------------------------------------------------


def test_log_timing_spans_writes_the_spec_shape(tmp_path: pathlib.Path) -> None:
    """log_timing_spans writes {"step", "spans": [{name, duration, wall_start, wall_end, ...}]}."""
    with RunWriter(tmp_path) as run:
        run.write_config({})
        run.log_metrics({"x": 1}, step=0)
        run.log_timing_spans(0, [{"wall_end": 2.0, "name": "sample", "duration": 1.0,
                                  "wall_start": 1.0, "attributes": {"k": 1}}])
        with pytest.raises(RecordError):
            run.log_timing_spans(1, [{"name": "sample"}])
        with pytest.raises(TypeError):
            run.log_timing_spans(1, "sample")  # type: ignore[arg-type]
    line = (tmp_path / L.TIMING_SPANS).read_bytes()
    assert line == (b'{"step":0,"spans":[{"name":"sample","duration":1.0,"wall_start":1.0,'
                    b'"wall_end":2.0,"attributes":{"k":1}}]}\n')
    assert errors(tmp_path) == []


def test_timer_spans_go_with_the_next_log_metrics(tmp_path: pathlib.Path) -> None:
    """Spans measured since the last log_metrics are one timing line for its step and
    time/<name> metrics summed per name; the next step starts empty."""
    with RunWriter(tmp_path) as run:
        run.write_config({})
        with run.timer("sample"):
            pass
        with run.timer("sample"):
            pass
        with run.timer("train"):
            pass
        run.log_metrics({"progress/batch": 0}, step=0)
        run.log_metrics({"progress/batch": 1}, step=1)
    spans = read_jsonl(tmp_path / L.TIMING_SPANS)
    assert len(spans) == 1 and spans[0]["step"] == 0
    assert [s["name"] for s in spans[0]["spans"]] == ["sample", "sample", "train"]
    for s in spans[0]["spans"]:
        assert list(s) == ["name", "duration", "wall_start", "wall_end"]
        assert s["duration"] >= 0 and s["wall_end"] >= s["wall_start"]
    m0, m1 = read_jsonl(tmp_path / L.METRICS)
    assert list(m0) == ["step", "progress/batch", "time/sample", "time/train"]
    total = sum(s["duration"] for s in spans[0]["spans"] if s["name"] == "sample")
    assert m0["time/sample"] == pytest.approx(total)
    assert "time/sample" not in m1
    assert errors(tmp_path) == []


def test_timer_spans_survive_a_refused_log_metrics(tmp_path: pathlib.Path) -> None:
    """A refused log_metrics writes no timing line; its spans go with the next accepted one."""
    with RunWriter(tmp_path) as run:
        with run.timer("sample"):
            pass
        with pytest.raises(RecordError):
            run.log_metrics({"bad": [1]}, step=0)
        assert not (tmp_path / L.TIMING_SPANS).exists()
        run.log_metrics({"x": 1}, step=0)
    [line] = (tmp_path / L.TIMING_SPANS).read_text().splitlines()
    assert json.loads(line)["step"] == 0


def test_timer_spans_wait_for_a_line_with_a_step(tmp_path: pathlib.Path) -> None:
    """A log_metrics without a step keeps the spans pending for the next one with a step."""
    with RunWriter(tmp_path) as run:
        with run.timer("sample"):
            pass
        run.log_metrics({"x": 1})
        run.log_metrics({"step": 3, "x": 2})
    assert [r["step"] for r in read_jsonl(tmp_path / L.TIMING_SPANS)] == [3]
    m = read_jsonl(tmp_path / L.METRICS)
    assert "time/sample" not in m[0] and "time/sample" in m[1]


def test_timer_refuses_a_name_without_utf8_form_at_the_call(tmp_path: pathlib.Path) -> None:
    """``timer("\\ud800")`` raises at the call; later log_metrics and close() keep working."""
    with RunWriter(tmp_path) as run:
        with pytest.raises(ValueError, match="no UTF-8 form"):
            run.timer("\ud800")
        with run.timer("ok"):
            pass
        run.log_metrics({"x": 1}, step=0)
    assert "time/ok" in read_jsonl(tmp_path / L.METRICS)[-1]
    assert not errors(tmp_path)


def test_writer_refuses_a_line_the_validator_would_not_read(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line over the validator's line limit (RL114; 64 MiB, lowered here to 1 KiB in both) is
    a RecordError: nothing is written."""
    import rlio.validate.scan as scan
    import rlio.writer.run_writer as run_writer

    monkeypatch.setattr(run_writer, "MAX_LINE", 1 << 10)
    monkeypatch.setattr(scan, "MAX_LINE", 1 << 10)
    with RunWriter(tmp_path) as run:
        run.log_metrics({"k": "x" * 900}, step=0)
        with pytest.raises(RecordError, match="a reader reads") as info:
            run.log_metrics({"k": "x" * 1100}, step=1)
        assert info.value.index == 1
    assert [r["step"] for r in read_jsonl(tmp_path / L.METRICS)] == [0]
    (tmp_path / L.METRICS).write_text(json.dumps({"step": 1, "k": "x" * 1100}) + "\n")
    assert [e[0] for e in errors(tmp_path)] == ["RL114"]


def test_checkpoint_token_counts_are_written_in_documented_order(tmp_path: pathlib.Path) -> None:
    """Schema keys given as extras (token counts, rolling) are written in the schema's order
    whatever the call's, so the validator finds no key-order warning (RL202)."""
    with RunWriter(tmp_path) as run:
        run.record_checkpoint("000001", batch=1, discarded_tokens={"sampled": 1}, note="x",
                              cumulative_tokens={"sampled": 2}, rolling=True)
    [rec] = read_jsonl(tmp_path / L.CHECKPOINTS)
    assert list(rec) == ["name", "batch", "rolling", "cumulative_tokens", "discarded_tokens",
                         "note"]
    assert "RL202" not in {f.code for f in validate_run(tmp_path).findings}
