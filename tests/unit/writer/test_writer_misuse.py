"""A newcomer's misuse of the writer gets an error naming the argument and the fix, and nothing is
written; what used to be accepted silently (an empty metric key, a span after the last
log_metrics) is refused or kept."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from factories import findings, read_jsonl

from rlio import RecordError, RunWriter
from rlio import layout as L


@pytest.mark.parametrize("metrics", [[("loss", 1.0)], None, "loss", 0.5])
def test_metrics_that_are_not_a_dict(tmp_path: pathlib.Path, metrics: Any) -> None:
    """log_metrics of a list, None, a string or a number: TypeError naming the argument and a
    dict to pass instead; metrics.jsonl stays empty (with a step given or not)."""
    with RunWriter(tmp_path) as run:
        for step in (0, None):
            with pytest.raises(TypeError, match=r"^log_metrics\(metrics=\.\.\.\) takes a dict of "
                                                r"metric name to value, such as \{'loss': 0\.5\}; "
                                                f"got {type(metrics).__name__} "):
                run.log_metrics(metrics, step=step)
    assert (tmp_path / L.METRICS).read_bytes() == b""


def test_a_writer_on_a_file_path(tmp_path: pathlib.Path) -> None:
    """RunWriter("afile.txt") is a ValueError saying the path is a file, not a raw
    FileExistsError; the file is untouched."""
    target = tmp_path / "afile.txt"
    target.write_text("notes")
    with pytest.raises(ValueError, match=r"^RunWriter\(log_path='.*afile\.txt'\): that path is "
                                         r"a file, not a run directory; pass a folder"):
        RunWriter(target)
    assert target.read_text() == "notes"


@pytest.mark.parametrize("text", [5, ["diff"], 1.5])
def test_code_diff_that_is_not_text(tmp_path: pathlib.Path, text: Any) -> None:
    """write_code_diff(5) is a TypeError naming str or bytes (or None for git's diff), never an
    AttributeError; no code.diff is written."""
    refused = pytest.raises(TypeError, match=r"^write_code_diff\(text=\.\.\.\) takes the diff "
                                             r"as str or bytes \(or None for the git diff")
    with RunWriter(tmp_path) as run, refused:
        run.write_code_diff(text)
    assert not (tmp_path / L.CODE_DIFF).exists()


def test_an_empty_metric_key_is_refused_and_a_slash_key_warned(tmp_path: pathlib.Path) -> None:
    """{"": 1.0} is refused at the call (the validator calls it an error); {"loss/": 1.0} is
    written and is a warning (RL205) naming the missing name part."""
    with RunWriter(tmp_path) as run:
        with pytest.raises(RecordError, match="an empty metric key: no reader can name it"):
            run.log_metrics({"": 1.0}, step=0)
        run.log_metrics({"loss/": 1.0}, step=0)
    assert read_jsonl(tmp_path / L.METRICS) == [{"step": 0, "loss/": 1.0}]
    assert ("RL205", "warning", "metrics.jsonl", 1, "/loss~1") in findings(tmp_path)


def test_spans_pending_at_close_are_written(tmp_path: pathlib.Path) -> None:
    """A timer block after the last log_metrics is written at close() as a timing line for the
    last step logged (0 before any), never lost."""
    with RunWriter(tmp_path) as run:
        run.log_metrics({"loss": 1.0}, step=3)
        with run.timer("train"):
            pass
        with run.timer("save"):
            pass
    [line] = read_jsonl(tmp_path / L.TIMING_SPANS)
    assert line["step"] == 3 and [s["name"] for s in line["spans"]] == ["train", "save"]
    fresh = tmp_path / "fresh"
    with RunWriter(fresh) as run, run.timer("setup"):
        pass
    assert [r["step"] for r in read_jsonl(fresh / L.TIMING_SPANS)] == [0]
