"""metrics_frame and rollouts_frame: every key a column, NaN gaps, both backends, named extras."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from factories import cookbook_run, jsonl, metrics_line, run_python, trajectory, write

from rlio import layout
from rlio.errors import install_line
from rlio.reader import native, open_run
from rlio.reader.frames import build_frame, metrics_table, rollouts_table
from rlio.storage.local import LocalStorage

LATE = 30_000


@pytest.fixture(scope="module")
def late_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose key ``late/metric`` first appears at line 30,000 and a string key at the end."""
    root = tmp_path_factory.mktemp("late")
    lines = [metrics_line(s) for s in range(LATE + 10)]
    lines[LATE - 1]["late/metric"] = 2.5
    lines[-1]["late/text"] = "done"
    write(root, layout.METRICS, jsonl(lines))
    return root


def test_pandas_frame_has_a_key_first_seen_at_line_30000(late_run: Path) -> None:
    """The pandas frame holds a column for a key first logged at line 30,000, NaN elsewhere."""
    frame = open_run(late_run).metrics_frame()
    assert len(frame) == LATE + 10
    assert frame["late/metric"].iloc[LATE - 1] == 2.5
    assert frame["late/metric"].isna().sum() == LATE + 9
    assert math.isnan(frame["late/metric"].iloc[0])
    assert frame["late/text"].iloc[-1] == "done"
    assert str(frame["step"].dtype) == "int64"


def test_polars_frame_has_a_key_first_seen_at_line_30000(late_run: Path) -> None:
    """The polars frame holds the late key too, as Float64 with NaN (not null) for gaps."""
    import polars as pl

    frame = open_run(late_run).metrics_frame(backend="polars")
    assert frame.height == LATE + 10
    col = frame["late/metric"]
    assert col.dtype == pl.Float64
    assert col[LATE - 1] == 2.5 and col.is_nan().sum() == LATE + 9 and col.null_count() == 0
    assert frame["late/text"][-1] == "done"


def test_frames_read_nan_tokens_that_polars_refuses(tmp_path: Path) -> None:
    """NaN tokens, ints with gaps and mixed-type keys build frames in both backends."""
    root = tmp_path / "run"
    write(root, layout.METRICS, '{"step": 0, "a": NaN, "m": 1}\n{"step": 1, "b": 3, "m": "x"}\n'
                                '{"step": 2, "a": null, "f": true}\n')
    for backend in ("pandas", "polars"):
        frame = open_run(root).metrics_frame(backend=backend)
        assert list(frame.columns) == ["step", "a", "m", "b", "f"]
        assert len(frame) == 3
    pdf = open_run(root).metrics_frame()
    assert pdf["a"].isna().all() and pdf["b"].iloc[1] == 3.0 and math.isnan(pdf["b"].iloc[0])
    assert list(pdf["m"]) == [1, "x", pdf["m"].iloc[2]] and math.isnan(pdf["m"].iloc[2])
    pl_frame = open_run(root).metrics_frame(backend="polars")
    assert pl_frame["m"].to_list() == ["1", "x", None]


def test_rollouts_frame_has_one_row_per_trajectory_or_step(tmp_path: Path) -> None:
    """rollouts_frame: a row per trajectory (flattened metrics), or per step with steps=True."""
    run = open_run(cookbook_run(tmp_path / "run", 3))
    traj = run.rollouts_frame()
    assert len(traj) == 12
    assert {"iteration", "split", "group_idx", "traj_idx", "n_steps", "total_reward",
            "trajectory_metrics/num_turns", "trajectory_metrics/kl"} <= set(traj.columns)
    assert "steps" not in traj.columns
    steps = run.rollouts_frame(iterations=[1], steps=True, backend="polars")
    assert steps.height == 12
    assert {"step_idx", "reward", "metrics/format", "logs/answer"} <= set(steps.columns)
    assert set(steps["iteration"].to_list()) == {1}
    assert len(run.rollouts_frame(evaluator="test")) == 0


def test_unknown_backend_is_a_value_error(tmp_path: Path) -> None:
    """A backend other than pandas or polars is refused, naming the choices."""
    with pytest.raises(ValueError, match="'pandas' or 'polars'"):
        open_run(cookbook_run(tmp_path / "run", 1)).metrics_frame(backend="arrow")  # type: ignore[arg-type]


@pytest.mark.parametrize(("module", "call", "extra"), [
    ("pandas", "run.metrics_frame()", "pandas"),
    ("polars", "run.metrics_frame(backend='polars')", "polars"),
    ("pyarrow", "export_parquet([run], out)", "parquet"),
])
def test_a_missing_extra_names_its_pip_install(tmp_path: Path, module: str, call: str,
                                               extra: str) -> None:
    """Without the library installed, the error is an ImportError naming the extra's install
    line (the form that works from this checkout)."""
    root = cookbook_run(tmp_path / "run", 1)
    proc = run_python(f"""
        import sys
        sys.modules[{module!r}] = None  # what an environment without the package does on import
        from rlio.errors import RlioError
        from rlio.reader import open_run
        from rlio.reader.export import export_parquet
        run, out = open_run({str(root)!r}), {str(tmp_path / "out")!r}
        try:
            {call}
        except ImportError as exc:
            assert isinstance(exc, RlioError)
            print(exc)
    """)
    assert proc.returncode == 0, proc.stderr
    assert install_line(extra) in proc.stdout


# -- the native path (pyarrow's reader) gives the frame the Python path gives ------------------


def _both_paths(root: Path, backend: str) -> tuple[Any, Any]:
    """(metrics_frame, the frame built record by record) of the run at ``root``."""
    run = open_run(root)
    slow = build_frame(metrics_table(run.iter_metrics()), backend)  # type: ignore[arg-type]
    return run.metrics_frame(backend=backend), slow  # type: ignore[arg-type]


def _assert_same(fast: Any, slow: Any) -> None:
    if hasattr(fast, "iloc"):
        pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    else:
        from polars.testing import assert_frame_equal

        assert_frame_equal(fast, slow, check_exact=True)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 4 KiB and type hints from 3 lines at each end, so a small file has a middle
    that neither the hints nor the first block see."""
    monkeypatch.setattr(native, "_BLOCK", 4 << 10)
    monkeypatch.setattr(native, "_SAMPLE", 3)


def _late_lines() -> list[dict[str, Any]]:
    """400 lines: keys first seen in the middle only, in the tail, an int key turning float in
    the middle, explicit nulls, a key that is always null, booleans and strings."""
    lines = [metrics_line(s, loss=1, flag=True, note="a", gone=None) for s in range(400)]
    lines[150]["mid/only"] = 0.5
    lines[151]["mid/second"] = 7
    lines[200]["loss"] = 2.5
    lines[250]["flag"] = None
    for rec in lines[300:]:
        rec["tail/key"] = 1.25
    lines[380]["note"] = None
    return lines


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_native_frame_has_every_late_key_and_equals_the_python_path(tmp_path: Path,
                                                                    backend: str) -> None:
    """Keys first seen in the middle (in later blocks, not in the type hints) are columns in
    first-seen order, and the frame equals the one built record by record."""
    write(tmp_path, layout.METRICS, jsonl(_late_lines()))
    assert native.read_table(LocalStorage(str(tmp_path)), layout.METRICS) is not None
    fast, slow = _both_paths(tmp_path, backend)
    assert list(fast.columns) == ["step", "progress/batch", "optim/lr", "loss", "flag", "note",
                                  "gone", "mid/only", "mid/second", "tail/key"]
    _assert_same(fast, slow)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_a_date_like_string_stays_a_string_natively(tmp_path: Path, backend: str) -> None:
    """A key holding ISO dates (which pyarrow's reader would infer as timestamps) is read
    natively as strings, equal to the Python path's column."""
    lines = _late_lines()
    for i, rec in enumerate(lines):
        rec["note"] = None if i == 380 else f"2024-01-{1 + i % 28:02d}"
    write(tmp_path, layout.METRICS, jsonl(lines))
    table = native.read_table(LocalStorage(str(tmp_path)), layout.METRICS)
    assert table is not None and str(table.schema.field("note").type) == "string"
    fast, slow = _both_paths(tmp_path, backend)
    _assert_same(fast, slow)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_a_torn_tail_is_not_a_row(tmp_path: Path, backend: str) -> None:
    """A torn last line (no newline: a crash) is neither a row nor a column, natively too."""
    torn = '{"step": 400, "torn/key": 1.5, "loss": 3'
    write(tmp_path, layout.METRICS, jsonl(_late_lines()) + torn)
    assert native.read_table(LocalStorage(str(tmp_path)), layout.METRICS) is not None
    fast, slow = _both_paths(tmp_path, backend)
    assert len(fast) == 400 and "torn/key" not in fast.columns
    _assert_same(fast, slow)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("backend", ["pandas", "polars"])
@pytest.mark.parametrize("odd", [
    "\n", "   \n", "[1, 2]\n", "7\n", '{"step": 5, "loss": 1.\n',
    '{"step": 5, "loss": "text"}\n', '{"step": 5, "loss": [1]}\n', '{"step": 5, "d": {"x": 1}}\n',
    '{"step": 5, "loss": 1, "loss": 2}\n', '{"step": 5, "loss": NaN, "x": -Infinity}\n',
    b'{"step": 5, "note": "\xff"}\n', '{"step": 5, "flag": 1}\n', '{"step": 5, "note": 7}\n',
])
def test_odd_lines_give_the_python_paths_frame(tmp_path: Path, backend: str,
                                               odd: str | bytes) -> None:
    """Blank, non-object, damaged, glued, mixed-type (a number under a key the ends hold
    strings under too), nested, repeated-key, NaN-token and invalid-UTF-8 lines in the middle
    give the frame the Python path gives."""
    body = jsonl(_late_lines()).encode()
    lines = body.splitlines(keepends=True)
    extra = odd if isinstance(odd, bytes) else odd.encode()
    write(tmp_path, layout.METRICS, b"".join([*lines[:200], extra, *lines[200:]]))
    fast, slow = _both_paths(tmp_path, backend)
    _assert_same(fast, slow)


def _rollout_run(root: Path) -> Path:
    """A cookbook run plus two training files whose later records bring new keys: a trajectory
    metric, a step metric and log, a float where ints were, and an evaluator's file."""
    run = cookbook_run(root, 3)
    late = [trajectory(3, g, t) for g in range(3) for t in range(2)]
    late[4]["trajectory_metrics"]["late_metric"] = 0.5
    late[5]["steps"][1]["metrics"]["late_step"] = 2
    late[5]["steps"][0]["logs"]["note"] = "x"
    late[5]["final_ob_len"] = 1.5
    write(run, layout.iteration_path("flat", 3, "rollout_summaries"), jsonl(late))
    write(run, layout.iteration_path("flat", 3, "rollout_summaries", label="test"),
          jsonl([trajectory(3, 0, 0, split="eval/test")]))
    return run


@pytest.mark.parametrize("backend", ["pandas", "polars"])
@pytest.mark.parametrize("steps", [False, True])
@pytest.mark.parametrize("evaluator", [None, "test"])
def test_native_rollout_frames_equal_the_python_path(tmp_path: Path, backend: str, steps: bool,
                                                     evaluator: str | None) -> None:
    """Trajectory and step frames read natively (late nested keys included) equal the ones
    built record by record, for the training rollouts and an evaluator's."""
    run = open_run(_rollout_run(tmp_path / "run"))
    rel = run.path_of(3, "rollout_summaries", evaluator=evaluator)
    assert rel is not None
    assert native.rollout_table(run.storage, rel, steps=steps) is not None
    fast = run.rollouts_frame(evaluator, steps=steps, backend=backend)  # type: ignore[arg-type]
    slow = build_frame(rollouts_table(run.rollouts(evaluator=evaluator), steps=steps),
                       backend)  # type: ignore[arg-type]
    _assert_same(fast, slow)
    if evaluator is None:
        late = "metrics/late_step" if steps else "trajectory_metrics/late_metric"
        assert late in fast.columns


@pytest.mark.parametrize("backend", ["pandas", "polars"])
@pytest.mark.parametrize("odd", [
    {"trajectory_metrics": None}, {"steps": None}, {"n_steps": 3}, {"tags": [1, "a"]},
    {"trajectory_metrics": {"x": "a"}}, {"trajectory_metrics/num_turns": 1},
])
def test_odd_rollout_records_give_the_python_paths_frame(tmp_path: Path, backend: str,
                                                        odd: dict[str, Any]) -> None:
    """A null nested object, a record's own n_steps, mixed lists, a key colliding with a
    spread one: the frames equal the ones built record by record."""
    root = cookbook_run(tmp_path / "run", 2)
    recs = [trajectory(1, g) for g in range(3)]
    recs[1].update(odd)
    write(root, layout.iteration_path("flat", 1, "rollout_summaries"), jsonl(recs))
    run = open_run(root)
    for steps in (False, True):
        fast = run.rollouts_frame(steps=steps, backend=backend)  # type: ignore[arg-type]
        slow = build_frame(rollouts_table(run.rollouts(), steps=steps),
                           backend)  # type: ignore[arg-type]
        _assert_same(fast, slow)


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_two_objects_on_a_streamed_line_give_the_python_paths_frame(tmp_path: Path,
                                                                     backend: str) -> None:
    """Read through a stream (here: a torn tail to leave out), a line holding two objects is
    skipped as the Python path skips it (rows are counted against lines)."""
    lines = jsonl(_late_lines()).encode().splitlines(keepends=True)
    glued = b'{"step": 5}{"step": 6}\n'
    write(tmp_path, layout.METRICS, b"".join([*lines[:200], glued, *lines[200:]]) + b'{"st')
    fast, slow = _both_paths(tmp_path, backend)
    assert len(fast) == 400
    _assert_same(fast, slow)
