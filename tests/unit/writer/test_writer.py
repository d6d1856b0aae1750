"""RunWriter formats: byte-exact lines, key orders, the non-finite policy, normalization, errors."""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import pathlib
from collections import OrderedDict
from typing import Any

import pytest
from factories import read_jsonl

from rlio import RecordError, RunWriter
from rlio.errors import LabelCollisionError, UnsafeStorageError
from rlio.storage import TEMP_INFIX

ROLLOUT_ORDER = ["schema_version", "split", "iteration", "group_idx", "traj_idx", "tags",
                 "sampling_client_step", "total_reward", "final_reward", "trajectory_metrics",
                 "steps", "final_ob_len"]
STEP_ORDER = ["step_idx", "ob_len", "ac_len", "reward", "episode_done", "metrics", "logs"]


def _step(i: int, reward: float = 0.5, done: bool = False) -> dict[str, Any]:
    return {"step_idx": i, "ob_len": 10 + i, "ac_len": 5, "reward": reward, "episode_done": done,
            "metrics": {"m": 1}, "logs": {"note": "x"}}


def rollout(group: int = 0, traj: int = 0, *, n_steps: int = 2, final: float = 1.0,
            **over: Any) -> dict[str, Any]:
    """A valid rollout-summary record without schema_version, split and iteration."""
    steps = [_step(i, done=i == n_steps - 1) for i in range(n_steps)]
    rec: dict[str, Any] = {
        "group_idx": group, "traj_idx": traj, "tags": ["t"], "sampling_client_step": 3,
        "total_reward": 0.5 * n_steps + final, "final_reward": final,
        "trajectory_metrics": {"turns": n_steps}, "steps": steps, "final_ob_len": 0,
    }
    rec.update(over)
    return rec


def no_temp_files(root: pathlib.Path) -> bool:
    return not [p for p in root.rglob("*") if TEMP_INFIX in p.name]


class Color(enum.Enum):
    RED = "red"


class FakeScalar:
    """Quacks like a numpy/torch 0-d scalar (numpy is not a dependency of the test suite)."""

    ndim = 0

    def __init__(self, v: float) -> None:
        self.v = v

    def item(self) -> float:
        return self.v


# -- metrics -----------------------------------------------------------------------------------


def test_metrics_line_is_byte_exact_with_step_first(tmp_path: pathlib.Path) -> None:
    """log_metrics writes compact JSON, step first, then the metrics in the caller's order."""
    with RunWriter(tmp_path) as run:
        run.log_metrics({"progress/batch": 0, "env/all/reward/total": 0.25, "name": "a"}, step=0)
        run.log_metrics({"b": 1, "step": 1, "a": True})
    assert (tmp_path / "metrics.jsonl").read_bytes() == (
        b'{"step":0,"progress/batch":0,"env/all/reward/total":0.25,"name":"a"}\n'
        b'{"step":1,"b":1,"a":true}\n'
    )


def test_metrics_without_step_are_written_as_given(tmp_path: pathlib.Path) -> None:
    """A metrics record without a step (async mode) keeps exactly its keys."""
    with RunWriter(tmp_path) as run:
        run.log_metrics(OrderedDict([("training_client/step", 3), ("optim/lr", 1e-5)]))
    assert read_jsonl(tmp_path / "metrics.jsonl") == [{"training_client/step": 3,
                                                       "optim/lr": 1e-5}]


def test_nonfinite_metrics_become_null_by_default(tmp_path: pathlib.Path) -> None:
    """NaN and infinities are written as null: the file is strict JSON."""
    with RunWriter(tmp_path) as run:
        run.log_metrics({"x": float("nan"), "y": float("inf"), "optim/entropy": float("-inf")},
                        step=0)
    assert (tmp_path / "metrics.jsonl").read_bytes() == (
        b'{"step":0,"x":null,"y":null,"optim/entropy":null}\n')


def test_nonfinite_token_option_writes_python_json_tokens(tmp_path: pathlib.Path) -> None:
    """nonfinite='token' writes NaN/Infinity exactly as Python's json module would."""
    with RunWriter(tmp_path, nonfinite="token") as run:
        run.log_metrics({"x": float("nan"), "y": float("inf"), "progress/done_frac": 0.5}, step=2)
    data = (tmp_path / "metrics.jsonl").read_text()
    assert data == '{"step":2,"x":NaN,"y":Infinity,"progress/done_frac":0.5}\n'
    back = json.loads(data)
    assert back["step"] == 2 and back["x"] != back["x"]


def test_metrics_values_are_normalized(tmp_path: pathlib.Path) -> None:
    """Scalar objects (numpy-like .item()), enums and paths become plain JSON scalars."""
    with RunWriter(tmp_path) as run:
        run.log_metrics({"s": FakeScalar(1.5), "c": Color.RED, "p": pathlib.Path("/a/b")}, step=0)
    assert read_jsonl(tmp_path / "metrics.jsonl") == [{"step": 0, "s": 1.5, "c": "red",
                                                       "p": "/a/b"}]


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, (1,)])
def test_nested_metric_value_is_rejected_naming_the_key(tmp_path: pathlib.Path,
                                                        value: Any) -> None:
    """An object or array metric value raises RecordError naming the key; nothing is written."""
    with RunWriter(tmp_path) as run:
        run.log_metrics({"ok": 1}, step=0)
        with pytest.raises(RecordError) as info:
            run.log_metrics({"ok": 2, "bad/key": value}, step=1)
    assert info.value.pointer == "/bad~1key"
    assert info.value.index == 1
    assert "log_metrics(..., step=1) at /bad~1key" in str(info.value)
    assert read_jsonl(tmp_path / "metrics.jsonl") == [{"step": 0, "ok": 1}]


def test_metrics_schema_violation_names_pointer(tmp_path: pathlib.Path) -> None:
    """A known key of the wrong type (a string done_frac) is rejected with its pointer."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.log_metrics({"progress/done_frac": "half"}, step=0)
    assert info.value.pointer == "/progress~1done_frac"
    assert not (tmp_path / "metrics.jsonl").exists() or \
        (tmp_path / "metrics.jsonl").read_bytes() == b""


def test_conflicting_step_is_rejected(tmp_path: pathlib.Path) -> None:
    """A step argument that differs from a 'step' key in the metrics is an error."""
    with RunWriter(tmp_path) as run:
        with pytest.raises(RecordError) as info:
            run.log_metrics({"step": 3, "x": 1}, step=4)
        assert info.value.pointer == "/step"
        run.log_metrics({"step": 4, "x": 1}, step=4)  # agreeing is fine
    assert read_jsonl(tmp_path / "metrics.jsonl") == [{"step": 4, "x": 1}]


@pytest.mark.parametrize("step", [-1, True, 1.5])
def test_invalid_step_is_rejected(tmp_path: pathlib.Path, step: Any) -> None:
    """step must be an integer >= 0 (booleans and fractions are refused)."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.log_metrics({"x": 1}, step=step)
    assert info.value.pointer == "/step"


def test_int_too_large_for_json_readers_is_rejected(tmp_path: pathlib.Path) -> None:
    """An integer beyond 64 bits cannot be read back by common parsers: RecordError."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.log_metrics({"big": 2**70}, step=0)
    assert info.value.pointer == "/big"


def test_non_string_metric_key_is_rejected(tmp_path: pathlib.Path) -> None:
    """A non-string key has no faithful JSON form: RecordError, nothing written."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError):
        run.log_metrics({1: 2}, step=0)  # type: ignore[dict-item]


def test_check_false_skips_schema_but_not_encoding(tmp_path: pathlib.Path) -> None:
    """check=False writes schema-breaking records but still refuses unencodable ones."""
    with RunWriter(tmp_path, check=False) as run:
        run.log_metrics({"progress/done_frac": 2.0}, step=0)
        with pytest.raises(RecordError):
            run.log_metrics({"x": object()}, step=1)
    assert read_jsonl(tmp_path / "metrics.jsonl") == [{"step": 0, "progress/done_frac": 2.0}]


# -- checkpoints -------------------------------------------------------------------------------


def test_checkpoint_key_order_and_omitted_nones(tmp_path: pathlib.Path) -> None:
    """Checkpoint keys come as name, batch, epoch, final, state_path, sampler_path, extras."""
    with RunWriter(tmp_path) as run:
        run.record_checkpoint("000004", rolling=True, sampler_path="tinker://r/sampler_weights/4",
                              state_path="tinker://r/weights/4", batch=4, elapsed_tokens=9)
        run.record_checkpoint("final", batch=8, epoch=1, final=True, state_path="tinker://r/w/f")
    assert (tmp_path / "checkpoints.jsonl").read_bytes() == (
        b'{"name":"000004","batch":4,"state_path":"tinker://r/weights/4",'
        b'"sampler_path":"tinker://r/sampler_weights/4","rolling":true,"elapsed_tokens":9}\n'
        b'{"name":"final","batch":8,"epoch":1,"final":true,"state_path":"tinker://r/w/f"}\n'
    )


def test_checkpoint_accepts_name_as_keyword_and_odd_extra_keys(tmp_path: pathlib.Path) -> None:
    """name may be passed by keyword; extra keys may be any string, even 'self'."""
    with RunWriter(tmp_path) as run:
        run.record_checkpoint(name="a", batch=1, **{"self": 1, "a b": [1]})
    assert read_jsonl(tmp_path / "checkpoints.jsonl") == [
        {"name": "a", "batch": 1, "self": 1, "a b": [1]}]


@pytest.mark.parametrize(("kwargs", "pointer"), [
    ({"name": ""}, "/name"),
    ({"name": "x", "batch": -1}, "/batch"),
    ({"name": "x", "batch": 1, "state_path": ""}, "/state_path"),
    ({"name": "x", "final": "yes"}, "/final"),
])
def test_checkpoint_schema_violations(tmp_path: pathlib.Path, kwargs: dict[str, Any],
                                      pointer: str) -> None:
    """A checkpoint breaking its schema raises RecordError with the pointer; file unchanged."""
    with RunWriter(tmp_path) as run:
        run.record_checkpoint("ok", batch=1)
        before = (tmp_path / "checkpoints.jsonl").read_bytes()
        with pytest.raises(RecordError) as info:
            run.record_checkpoint(**kwargs)
    assert info.value.pointer == pointer
    assert info.value.index == 1
    assert (tmp_path / "checkpoints.jsonl").read_bytes() == before


# -- config and code diff ----------------------------------------------------------------------


@dataclasses.dataclass
class Inner:
    temperature: float = 0.7
    stop: tuple[str, ...] = ("</s>",)


@dataclasses.dataclass
class Config:
    log_path: pathlib.Path
    color: Color = Color.RED
    inner: Inner = dataclasses.field(default_factory=Inner)
    tags: frozenset[str] = frozenset({"b", "a"})
    lr: float = float("nan")


def test_config_normalizes_dataclasses_enums_paths(tmp_path: pathlib.Path) -> None:
    """write_config serializes nested dataclasses, enums, paths, tuples and sets, indent 2."""
    with RunWriter(tmp_path) as run:
        run.write_config(Config(log_path=pathlib.Path("/runs/x")))
    text = (tmp_path / "config.json").read_text()
    assert json.loads(text) == {"log_path": "/runs/x", "color": "red",
                                "inner": {"temperature": 0.7, "stop": ["</s>"]},
                                "tags": ["a", "b"], "lr": None}
    assert text.startswith('{\n  "log_path": "/runs/x",\n')
    assert no_temp_files(tmp_path)


def test_config_refuses_unserializable_values_naming_the_key_path(
        tmp_path: pathlib.Path) -> None:
    """With on_unserializable='error', a function in the config raises RecordError naming its
    key path; no file is written."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.write_config({"a": {"b": [1, lambda: 0]}}, on_unserializable="error")
    assert info.value.pointer == "/a/b/1"
    assert "config at /a/b/1" in str(info.value)
    assert not (tmp_path / "config.json").exists()


@pytest.mark.parametrize(("value", "pointer"), [
    ({"k": {1: "x"}}, "/k"),
    ({"k": b"bytes"}, "/k"),
    ({"k": int}, "/k"),
    ({"k": {"a", 1}}, "/k"),
])
def test_config_errors_by_kind(tmp_path: pathlib.Path, value: Any, pointer: str) -> None:
    """With on_unserializable='error', non-string keys, bytes, classes and mixed sets are refused
    with a pointer."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.write_config(value, on_unserializable="error")
    assert info.value.pointer == pointer


def test_config_writes_what_has_no_json_form_as_the_cookbook_does(
        tmp_path: pathlib.Path) -> None:
    """By default a class (np.float32), a function, bytes and a non-string key are written as the
    cookbook's logger writes them, with one RlioWarning naming each field."""
    import numpy as np

    from rlio import RlioWarning
    with RunWriter(tmp_path) as run, pytest.warns(RlioWarning) as caught:
        run.write_config({"dtype": np.float32, "fn": len, "raw": b"x", "ok": 1, "m": {2: "y"}})
    assert json.loads((tmp_path / "config.json").read_text()) == {
        "dtype": "numpy.float32", "fn": "builtins.len", "raw": "<class 'bytes'>", "ok": 1,
        "m": {"2": "y"}}
    assert len(caught) == 1
    message = str(caught[0].message)
    assert all(f"/{k} (" in message for k in ("dtype", "fn", "raw", "m"))
    assert "/ok" not in message


def test_config_cycle_is_an_error(tmp_path: pathlib.Path) -> None:
    """A self-referencing config raises RecordError instead of recursing forever."""
    cyc: dict[str, Any] = {"a": []}
    cyc["a"].append(cyc)
    with RunWriter(tmp_path) as run, pytest.raises(RecordError) as info:
        run.write_config(cyc)
    assert "cycle" in str(info.value)


def test_config_repr_option_records_unserializable_values(tmp_path: pathlib.Path) -> None:
    """on_unserializable='repr' writes the repr of what has no JSON form."""
    with RunWriter(tmp_path) as run:
        run.write_config({"f": len, 1: "x", "b": b"\x00"}, on_unserializable="repr")
    assert json.loads((tmp_path / "config.json").read_text()) == {
        "f": "<built-in function len>", "1": "x", "b": "b'\\x00'"}


def test_config_must_be_an_object(tmp_path: pathlib.Path) -> None:
    """A config that serializes to a list is refused (config.json is a JSON object)."""
    with RunWriter(tmp_path) as run, pytest.raises(RecordError):
        run.write_config([1, 2])


def test_config_replaced_on_restart(tmp_path: pathlib.Path) -> None:
    """write_config replaces config.json whole."""
    with RunWriter(tmp_path) as run:
        run.write_config({"a": 1, "long": "x" * 100})
        run.write_config({"a": 2})
    assert json.loads((tmp_path / "config.json").read_text()) == {"a": 2}


def test_code_diff_text_and_bytes(tmp_path: pathlib.Path) -> None:
    """write_code_diff writes given text (UTF-8) or bytes verbatim."""
    with RunWriter(tmp_path) as run:
        run.write_code_diff("diff --git a/é b/é\n")
        assert (tmp_path / "code.diff").read_bytes() == "diff --git a/é b/é\n".encode()
        run.write_code_diff(b"\xff raw")
        assert (tmp_path / "code.diff").read_bytes() == b"\xff raw"


def test_code_diff_default_outside_git_is_empty(tmp_path: pathlib.Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a git repository the default code.diff is empty."""
    work = tmp_path / "notgit"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    with RunWriter(tmp_path / "run") as run:
        run.write_code_diff()
    assert (tmp_path / "run" / "code.diff").read_bytes() == b""


def test_code_diff_default_is_git_diff_plus_untracked(tmp_path: pathlib.Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """In a git repository the default is `git diff HEAD` plus untracked file names."""
    import subprocess

    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)

    git("init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-qm", "init")
    (repo / "a.py").write_text("x = 2\n")
    (repo / "new.py").write_text("y = 1\n")
    monkeypatch.chdir(repo)
    with RunWriter(tmp_path / "run") as run:
        run.write_code_diff()
    diff = (tmp_path / "run" / "code.diff").read_text()
    assert "-x = 1\n+x = 2\n" in diff
    assert diff.endswith("# untracked: new.py\n")


# -- rollout summaries -------------------------------------------------------------------------


def test_rollout_summaries_key_order_and_fill_in(tmp_path: pathlib.Path) -> None:
    """Keys are put in docs/format.md §6 order (steps too); version, split, iteration filled in."""
    rec = rollout()
    scrambled = dict(reversed(list(rec.items())))
    scrambled["steps"] = [dict(reversed(list(s.items()))) for s in rec["steps"]]
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(7, [scrambled, rollout(0, 1)])
    path = tmp_path / "train_iteration_000007_rollout_summaries.jsonl"
    got = read_jsonl(path)
    assert [list(r) for r in got] == [ROLLOUT_ORDER, ROLLOUT_ORDER]
    assert all(list(s) == STEP_ORDER for r in got for s in r["steps"])
    assert got[0] == {**rec, "schema_version": 1, "split": "train", "iteration": 7}
    first = path.read_bytes().split(b"\n")[0]
    assert first.startswith(b'{"schema_version":1,"split":"train","iteration":7,"group_idx":0,')
    assert first.endswith(b'"final_ob_len":0}')


def test_rollout_summaries_for_an_evaluator(tmp_path: pathlib.Path) -> None:
    """An evaluator's summaries go to its sanitized label, with split eval/<label>."""
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(0, [rollout()], evaluator="gsm8k/test (v2)")
    got = read_jsonl(tmp_path / "eval_gsm8k_test_v2_iteration_000000_rollout_summaries.jsonl")
    assert got[0]["split"] == "eval/gsm8k_test_v2"


def test_rollout_summaries_empty_list_writes_empty_file(tmp_path: pathlib.Path) -> None:
    """No trajectories: a 0-byte file (valid per docs/format.md §2)."""
    with RunWriter(tmp_path, layout="nested") as run:
        run.write_rollout_summaries(0, [])
    assert (tmp_path / "iteration_000000" / "train_rollout_summaries.jsonl").read_bytes() == b""


def test_rollout_summaries_nonfinite_and_normalization(tmp_path: pathlib.Path) -> None:
    """NaN rewards become null; tuples become lists; scalar objects become numbers."""
    rec = rollout(total_reward=float("nan"), tags=("a", "b"), final_reward=FakeScalar(1.0))
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(1, [rec])
    got = read_jsonl(tmp_path / "train_iteration_000001_rollout_summaries.jsonl")[0]
    assert got["total_reward"] is None and got["tags"] == ["a", "b"]
    assert got["final_reward"] == 1.0


@pytest.mark.parametrize(("records", "index", "pointer"), [
    ([rollout(), rollout(0, 1, final_ob_len=-1)], 1, "/final_ob_len"),
    ([rollout(), {k: v for k, v in rollout(0, 1).items() if k != "tags"}], 1, ""),
    ([rollout(extra_key=1)], 0, ""),
    ([rollout(split="eval/x")], 0, "/split"),
    ([rollout(iteration=4)], 0, "/iteration"),
    ([rollout(), rollout()], 1, "/traj_idx"),
    ([rollout(total_reward=5.0)], 0, "/total_reward"),
    ([rollout(schema_version=2)], 0, "/schema_version"),
    ([rollout(steps=[_step(1)], total_reward=1.5)], 0, "/steps/0/step_idx"),
    ([rollout(steps=[{**_step(0), "ob_len": "long"}], total_reward=1.5)], 0,
     "/steps/0/ob_len"),
    ([rollout(), "not a mapping"], 1, ""),
])
def test_bad_rollout_record_leaves_file_unchanged(
    tmp_path: pathlib.Path, records: list[Any], index: int, pointer: str
) -> None:
    """A bad record raises RecordError naming its index and pointer; the old file stays."""
    path = tmp_path / "train_iteration_000003_rollout_summaries.jsonl"
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(3, [rollout(5, 5)])
        before = path.read_bytes()
        with pytest.raises(RecordError) as info:
            run.write_rollout_summaries(3, records)
    assert info.value.index == index
    assert info.value.pointer == pointer
    assert f"record {index}" in str(info.value)
    assert path.read_bytes() == before
    assert no_temp_files(tmp_path)


def test_rollout_total_reward_tolerance(tmp_path: pathlib.Path) -> None:
    """total_reward agreeing with the sum within 1e-6 (float rounding) is accepted."""
    rec = rollout(total_reward=0.5 * 2 + 1.0 + 1e-9)
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(0, [rec])


# -- names, paths, layouts ---------------------------------------------------------------------


def test_label_collision_is_an_error(tmp_path: pathlib.Path) -> None:
    """Two evaluator names that sanitize to one label raise LabelCollisionError."""
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(0, [rollout()], evaluator="test set")
        run.write_rollout_summaries(1, [rollout()], evaluator="test set")  # same name: fine
        with pytest.raises(LabelCollisionError) as info:
            run.write_rollout_summaries(1, [rollout()], evaluator="test/set")
    assert "'test set'" in str(info.value) and "'test/set'" in str(info.value)
    assert (tmp_path / "eval_test_set_iteration_000001_rollout_summaries.jsonl").exists()


@pytest.mark.parametrize("evaluator", ["../../x", "/etc/passwd", "..", "a/../../b", "\x00", ""])
def test_evaluator_names_cannot_escape_the_run(tmp_path: pathlib.Path, evaluator: str) -> None:
    """Hostile evaluator names only ever produce files directly inside log_path."""
    run_dir = tmp_path / "run"
    for layout in ("flat", "nested"):
        d = run_dir / layout
        with RunWriter(d, layout=layout) as run:  # type: ignore[arg-type]
            run.write_rollout_summaries(0, [rollout()], evaluator=evaluator)
            with run.logtree(0, title="../../t/../x", evaluator=evaluator) as lt:
                lt.text("hi")
    outside = [p for p in tmp_path.rglob("*") if run_dir not in p.parents and p != run_dir]
    assert outside == []
    assert all(p.resolve().is_relative_to(run_dir.resolve()) for p in run_dir.rglob("*"))


def test_titles_with_slashes_do_not_change_paths(tmp_path: pathlib.Path) -> None:
    """A logtree title is content only: it never appears in a file name."""
    with RunWriter(tmp_path) as run, run.logtree(2, title="a/b/../../c") as lt:
        lt.text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "metrics.jsonl", "train_iteration_000002.html", "train_iteration_000002_logtree.json"]


@pytest.mark.parametrize("iteration", [-1, True, 1.0, "3", None])
def test_bad_iterations_are_errors(tmp_path: pathlib.Path, iteration: Any) -> None:
    """A negative or non-integer iteration raises ValueError before anything is written."""
    with RunWriter(tmp_path) as run:
        with pytest.raises(ValueError, match="iteration"):
            run.write_rollout_summaries(iteration, [rollout()])
        with pytest.raises(ValueError, match="iteration"), run.logtree(iteration, title="t"):
            pass
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.jsonl"]


def test_iteration_padding_grows_past_six_digits(tmp_path: pathlib.Path) -> None:
    """Iterations are padded to six digits and longer ones are written in full."""
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(1_000_000, [rollout(iteration=1_000_000)])
    assert (tmp_path / "train_iteration_1000000_rollout_summaries.jsonl").exists()


def test_symlinked_iteration_dir_is_refused(tmp_path: pathlib.Path) -> None:
    """A symlink inside the run is never written through (it could point outside)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "iteration_000000").symlink_to(outside)
    (run_dir / "metrics.jsonl").symlink_to(outside / "m.jsonl")
    with RunWriter(run_dir, layout="nested") as run:
        with pytest.raises(UnsafeStorageError):
            run.write_rollout_summaries(0, [rollout()])
        with pytest.raises(UnsafeStorageError):
            run.log_metrics({"x": 1}, step=0)
    assert list(outside.iterdir()) == []


def test_layout_default_flat_and_nested_paths(tmp_path: pathlib.Path) -> None:
    """A new run is flat by default; layout='nested' writes iteration_N/ files."""
    with RunWriter(tmp_path / "f") as run:
        assert run.layout == "flat"
        run.write_rollout_summaries(3, [rollout()], evaluator="e")
    with RunWriter(tmp_path / "n", layout="nested") as run:
        run.write_rollout_summaries(3, [rollout()], evaluator="e")
    assert (tmp_path / "f" / "eval_e_iteration_000003_rollout_summaries.jsonl").exists()
    assert (tmp_path / "n" / "iteration_000003" / "eval_e_rollout_summaries.jsonl").exists()


@pytest.mark.parametrize("existing", ["flat", "nested"])
def test_existing_layout_is_detected_and_kept(tmp_path: pathlib.Path, existing: str) -> None:
    """Reopening a run keeps its layout, even when another one is requested (with a warning)."""
    with RunWriter(tmp_path, layout=existing) as run:  # type: ignore[arg-type]
        run.write_rollout_summaries(0, [rollout()])
    with RunWriter(tmp_path, resume=True) as run:
        assert run.layout == existing
    other = "nested" if existing == "flat" else "flat"
    with pytest.warns(UserWarning, match=f"already uses the {existing} layout"), \
            RunWriter(tmp_path, layout=other, resume=True) as run:  # type: ignore[arg-type]
        assert run.layout == existing


def test_invalid_options_are_rejected(tmp_path: pathlib.Path) -> None:
    """Unknown layout or nonfinite values raise ValueError naming the value."""
    with pytest.raises(ValueError, match="'deep'"):
        RunWriter(tmp_path, layout="deep")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'nan'"):
        RunWriter(tmp_path, nonfinite="nan")  # type: ignore[arg-type]


def test_closed_writer_refuses_writes(tmp_path: pathlib.Path) -> None:
    """After close() every verb raises ValueError; close() is idempotent."""
    run = RunWriter(tmp_path)
    run.log_metrics({"x": 1}, step=0)
    run.close()
    run.close()
    with pytest.raises(ValueError, match="closed"):
        run.log_metrics({"x": 1}, step=1)
    with pytest.raises(ValueError, match="closed"):
        run.record_checkpoint("a")
    with pytest.raises(ValueError, match="closed"):
        run.write_config({})
    assert read_jsonl(tmp_path / "metrics.jsonl") == [{"step": 0, "x": 1}]


def test_log_path_is_kept_as_given(tmp_path: pathlib.Path) -> None:
    """log_path is the location as given (a string), usable by the readers."""
    with RunWriter(tmp_path / "r") as run:
        assert run.log_path == str(tmp_path / "r")
        assert "flat" in repr(run)


class PydanticLike:
    """Duck-types a pydantic v2 model (pydantic is not a test dependency)."""

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {"name": "m", "when": pathlib.Path("/p")}


def test_config_accepts_pydantic_style_models(tmp_path: pathlib.Path) -> None:
    """Objects with model_dump() are serialized through it (nested values normalized too)."""
    with RunWriter(tmp_path) as run:
        run.write_config({"model": PydanticLike()})
    assert json.loads((tmp_path / "config.json").read_text()) == {
        "model": {"name": "m", "when": "/p"}}


def test_token_policy_applies_to_every_file_kind(tmp_path: pathlib.Path) -> None:
    """nonfinite='token' writes NaN tokens in config, checkpoints and rollout summaries too."""
    with RunWriter(tmp_path, nonfinite="token") as run:
        run.write_config({"lr": float("nan")})
        run.record_checkpoint("a", loss=float("inf"))
        run.write_rollout_summaries(0, [rollout(total_reward=float("nan"))])
    assert '"lr": NaN' in (tmp_path / "config.json").read_text()
    assert (tmp_path / "checkpoints.jsonl").read_text() == '{"name":"a","loss":Infinity}\n'
    line = (tmp_path / "train_iteration_000000_rollout_summaries.jsonl").read_text()
    assert '"total_reward":NaN' in line


def test_many_rollout_records_split_into_exact_lines(tmp_path: pathlib.Path) -> None:
    """Batch encoding yields one line per record even when values hold newlines and NULs."""
    recs = [rollout(0, i, tags=[f"a\nb\x00{i}", '","\\u0000'], trajectory_metrics={"s": "\n"})
            for i in range(50)]
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(2, recs)
    got = read_jsonl(tmp_path / "train_iteration_000002_rollout_summaries.jsonl")
    assert [r["tags"] for r in got] == [r["tags"] for r in recs]
    assert len(got) == 50


def test_step_extra_keys_follow_the_documented_ones(tmp_path: pathlib.Path) -> None:
    """Optional step keys (stop_reason, trace) take their schema place; unknown keys go last."""
    step = {"custom": 1, "trace": {"t": [1]}, "logs": {}, "metrics": {}, "stop_reason": "stop",
            "episode_done": True, "reward": 0.5, "ac_len": 5, "ob_len": 10, "step_idx": 0}
    with RunWriter(tmp_path) as run:
        run.write_rollout_summaries(0, [rollout(steps=[step], total_reward=1.5)])
    got = read_jsonl(tmp_path / "train_iteration_000000_rollout_summaries.jsonl")[0]["steps"][0]
    assert list(got) == ["step_idx", "ob_len", "ac_len", "reward", "episode_done", "stop_reason",
                         "metrics", "logs", "trace", "custom"]
    assert got == step


def test_a_step_going_backwards_warns_once(tmp_path: pathlib.Path) -> None:
    """log_metrics(step=2) after step=9 is written and gives one RlioWarning per writer, however
    many lower steps follow (either encoding path)."""
    from rlio import RlioWarning
    with RunWriter(tmp_path) as run, pytest.warns(RlioWarning) as caught:
        run.log_metrics({"a": 1}, step=9)
        run.log_metrics({"a": 2}, step=2)
        run.log_metrics({"a": 3}, step=1)
        run.log_metrics({"step": 0, "a": (4,)[0]})
    assert len(caught) == 1 and "step=2) after step=9" in str(caught[0].message)
    assert [r["step"] for r in read_jsonl(tmp_path / "metrics.jsonl")] == [9, 2, 1, 0]


def test_steps_that_only_grow_or_repeat_do_not_warn(tmp_path: pathlib.Path) -> None:
    """Rising, repeated and step-less metrics lines give no warning."""
    import warnings

    with RunWriter(tmp_path) as run, warnings.catch_warnings():
        warnings.simplefilter("error")
        for step in (0, 1, 1, 5):
            run.log_metrics({"a": step}, step=step)
        run.log_metrics({"eval/x": 1.0})


@pytest.mark.parametrize("records", [{"group_idx": 0}, "abc", 7])
def test_rollout_records_not_a_list_name_the_argument(tmp_path: pathlib.Path,
                                                      records: Any) -> None:
    """write_rollout_summaries(0, a dict / a str / an int) says the argument `records` must be a
    list of mappings; nothing is written."""
    with RunWriter(tmp_path) as run, pytest.raises(TypeError) as info:
        run.write_rollout_summaries(0, records)
    assert "write_rollout_summaries(0, records)" in str(info.value)
    assert "`records` must be a list of mappings" in str(info.value)
    assert not list(tmp_path.glob("*rollout_summaries*"))
