"""Training datasets from rollouts (``rlio.reader.dataset``, ``rlio export --format dataset``):
rows, advantages, provenance, filters, pairs, and files that datasets, pandas, polars and DuckDB
read as they are."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from factories import GROUP_SYSTEM, cli, group_prompt, group_run
from realistic import ENVS, expected, realistic_run

from rlio import open_run
from rlio.errors import RlioError
from rlio.reader.dataset import Selection, write_dataset

#: iteration -> group -> trajectory rewards
REWARDS = [
    [[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]],
    [[1.0, 1.0, 0.0, 1.0], [0.5, 0.0, 1.0, 0.0]],
    [[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]],
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three iterations of two groups of four; responses repeat (``Answer g.t%2``)."""
    root = tmp_path_factory.mktemp("ds") / "run"
    return group_run(root, REWARDS, response=lambda i, g, t: f"Answer {g}.{t % 2}")


def test_rows_hold_messages_reward_advantage_and_provenance(run_dir: Path) -> None:
    """One row per trajectory: prompt/completion messages, total_reward, reward minus the group
    mean, the sampler's checkpoint and the hashes of config.json and code.diff."""
    rows = list(open_run(run_dir).dataset())
    assert len(rows) == 24
    row = next(r for r in rows if (r["iteration"], r["group_idx"], r["traj_idx"]) == (1, 0, 2))
    assert row["prompt"] == [{"role": "system", "content": GROUP_SYSTEM},
                             {"role": "user", "content": group_prompt(0)}]
    assert row["completion"] == [{"role": "assistant", "content": "Answer 0.0"}]
    assert (row["reward"], row["advantage"], row["group_mean"], row["group_size"]) == (
        0.0, -0.75, 0.75, 4)
    assert (row["checkpoint"], row["sampler_path"], row["sampling_client_step"]) == (
        "000001", "tinker://r/s/000001", 1)
    assert row["config_sha256"] == hashlib.sha256((run_dir / "config.json").read_bytes()
                                                  ).hexdigest()
    assert row["code_diff_sha256"] == hashlib.sha256(b"diff --git a/x b/x\n").hexdigest()
    assert rows[0]["checkpoint"] is None  # iteration 0 sampled the base model: no record


def test_filters(run_dir: Path) -> None:
    """min_reward, min_advantage, top_k per group, iterations and de-duplication select what
    they say."""
    run = open_run(run_dir)
    assert len(list(run.dataset(min_reward=1.0))) == 11
    positive = list(run.dataset(min_advantage=0.01))
    assert all(r["advantage"] > 0 for r in positive) and len(positive) == 8
    top = [(r["iteration"], r["group_idx"], r["traj_idx"]) for r in run.dataset(top_k=1)]
    assert top == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 2), (2, 0, 0), (2, 1, 0)]
    assert {r["iteration"] for r in run.dataset(iterations=[2])} == {2}
    unique = list(run.dataset(dedupe=True))
    assert len(unique) == 4  # 2 groups x 2 distinct answers
    with pytest.raises(ValueError, match="no split 'eval/test'"):
        list(run.dataset(split="eval/test"))


def test_pairs_are_best_and_worst_of_a_group(run_dir: Path) -> None:
    """One pair per group whose rewards differ; equal-reward groups give none."""
    pairs = list(open_run(run_dir).dataset(pairs=True))
    got = [(p["iteration"], p["group_idx"], p["chosen_traj_idx"], p["rejected_traj_idx"],
            p["margin"]) for p in pairs]
    assert got == [(0, 0, 0, 1, 1.0), (1, 0, 0, 2, 1.0), (1, 1, 2, 1, 1.0), (2, 1, 0, 1, 1.0)]
    assert pairs[0]["chosen"] == [{"role": "assistant", "content": "Answer 0.0"}]
    assert pairs[0]["rejected"] == [{"role": "assistant", "content": "Answer 0.1"}]


def test_written_files_load_in_datasets_pandas_polars_duckdb(run_dir: Path,
                                                             tmp_path: Path) -> None:
    """The Parquet file (a row group per iteration) and JSONL load as they are, with the rows
    and provenance the reader gives; the manifest says what was selected and what dropped."""
    import datasets
    import duckdb
    import pandas as pd
    import polars as pl
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    result = write_dataset([open_run(run_dir)], out, Selection(min_reward=0.5))
    parquet = out / "trajectories.parquet"
    assert pq.ParquetFile(parquet).num_row_groups == 3
    hf = datasets.load_dataset("parquet", data_files=str(parquet), split="train",
                               cache_dir=str(tmp_path / "hf"))
    frame = pd.read_parquet(parquet)
    polars = pl.read_parquet(parquet)
    db = duckdb.sql(f"SELECT count(*), sum(reward) FROM '{parquet}'").fetchall()[0]
    assert len(hf) == len(frame) == polars.height == db[0] == 12 == result.rows
    assert db[1] == pytest.approx(11.5)
    assert hf[0]["prompt"][1] == {"role": "user", "content": group_prompt(0)}
    assert list(frame["checkpoint"].iloc[-3:]) == ["000002"] * 3
    lines = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    hf_json = datasets.load_dataset("json", data_files=str(out / "trajectories.jsonl"),
                                    split="train", cache_dir=str(tmp_path / "hf"))
    assert len(lines) == len(hf_json) == 12 and lines[0]["completion"][0]["role"] == "assistant"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["selection"]["min_reward"] == 0.5
    assert manifest["counts"]["trajectories"] == 24
    assert manifest["counts"]["below_min_reward"] == 12
    assert manifest["runs"][0]["config_sha256"] == frame["config_sha256"].iloc[0]
    with pytest.raises(RlioError, match="not an empty folder"):
        write_dataset([open_run(run_dir)], out)


def test_cli_pairs_and_evaluator_split(run_dir: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """rlio export --format dataset with options around the paths; an evaluator's run."""
    code, out, err = cli(capsys, "export", "--pairs", str(run_dir), "--format", "dataset",
                         str(tmp_path / "p"), "--dedupe")
    assert code == 0, err
    assert "pairs: 3 row(s) from 24 trajectories" in out  # it1 g0 repeats it0 g0's pair
    assert json.loads((tmp_path / "p" / "manifest.json").read_text())["counts"]["duplicates"] == 1
    evals = group_run(tmp_path / "evals", [[[1.0, 0.0]]], evaluator="test")
    code, out, err = cli(capsys, "export", str(evals), "--format", "dataset",
                         str(tmp_path / "e"), "--split", "test", "--no-jsonl")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == ["manifest.json",
                                                                  "trajectories.parquet"]
    code, out, err = cli(capsys, "export", str(evals), "--format", "dataset",
                         str(tmp_path / "x"))
    assert code == 2 and "no split 'train'" in err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("env", ENVS)
def test_reward_advantage_and_group_mean_are_what_the_records_say(tmp_path: Path,
                                                                   env: str) -> None:
    """On each realistic run (step rewards, penalties, centred preference rewards, evaluators),
    every row's reward, advantage and group mean are the records' total_reward, its minus the
    group's finite mean, and that mean (rlio.outcome's rule)."""
    run = realistic_run(tmp_path, env)
    exp = expected(run)
    rows = list(open_run(run).dataset(split=None))
    assert rows
    for r in rows:
        key = (r["split"], r["iteration"])
        g, t = r["group_idx"], r["traj_idx"]
        assert r["reward"] == exp.total_of(*key, g, t)
        assert r["advantage"] == pytest.approx(exp.advantages(*key)[(g, t)])
        assert r["group_mean"] == pytest.approx(r["reward"] - r["advantage"])
