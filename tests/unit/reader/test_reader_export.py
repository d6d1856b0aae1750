"""The Parquet export: one dataset per kind, partitioned by run and split, read back by DuckDB."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from factories import cli, cookbook_run, jsonl, metrics_line, trajectory, write, write_jsonl

from rlio import layout
from rlio.errors import RlioError
from rlio.reader import open_run
from rlio.reader.export import export_parquet, safe_names


def _count(out: Path, kind: str, where: str = "true") -> int:
    rows = duckdb.sql(f"select count(*) from read_parquet('{out}/{kind}/**/*.parquet', "
                      f"union_by_name=true) where {where}").fetchall()
    return int(rows[0][0])


@pytest.fixture
def sweep(tmp_path: Path) -> list[Path]:
    """Two runs of one sweep: a cookbook run with an evaluator, and a nested one with a late key."""
    a = cookbook_run(tmp_path / "sweep" / "lr1", 3)
    write_jsonl(a, layout.iteration_path("flat", 1, "rollout_summaries", label="test"),
                [trajectory(1, g, split="eval/test") for g in range(2)])
    b = cookbook_run(tmp_path / "sweep" / "lr2", 4, layout_name="nested")
    with (b / layout.METRICS).open("a") as f:
        f.write(jsonl([metrics_line(4, **{"late/key": 7.0})]))
    return [a, b]


def test_duckdb_reads_back_the_same_row_counts(sweep: list[Path], tmp_path: Path) -> None:
    """Each dataset has as many rows as the reader yields records, per run and split."""
    out = tmp_path / "out"
    result = export_parquet(sweep, out)
    runs = [open_run(p) for p in sweep]
    n_metrics = sum(len(r.metrics()) for r in runs)
    n_rollouts = sum(1 for r in runs for it in r.iterations() for lab in (None, *it.evaluators)
                     for _ in r.rollouts(it.index, evaluator=lab))
    n_steps = sum(len(t["steps"]) for r in runs for it in r.iterations()
                  for lab in (None, *it.evaluators) for t in r.rollouts(it.index, evaluator=lab))
    n_checkpoints = sum(len(r.checkpoints()) for r in runs)
    assert result.rows == {"metrics": n_metrics, "rollouts": n_rollouts, "steps": n_steps,
                           "checkpoints": n_checkpoints}
    for kind, rows in result.rows.items():
        assert _count(out, kind) == rows
    assert _count(out, "rollouts", "split = 'eval/test' and run = 'lr1'") == 2
    assert _count(out, "metrics", "run = 'lr2' and \"late/key\" = 7.0") == 1
    assert _count(out, "metrics", "split = 'eval'") == 2  # each run's eval-only line
    assert (out / "rollouts" / "run=lr1" / "split=eval%2Ftest" / "part-0.parquet").is_file()


def test_columns_keep_their_names_and_a_key_map_is_beside(sweep: list[Path],
                                                          tmp_path: Path) -> None:
    """Metric keys are column names as logged; <kind>_keys.json maps each to a safe name."""
    out = tmp_path / "out"
    export_parquet(sweep, out)
    columns = [r[0] for r in duckdb.sql(
        f"describe select * from read_parquet('{out}/metrics/**/*.parquet')").fetchall()]
    assert columns[:3] == ["run", "iteration", "split"]
    assert "env/all/reward/total" in columns and "late/key" in columns
    keys = json.loads((out / "metrics_keys.json").read_text())
    assert keys["env/all/reward/total"] == "env_all_reward_total"
    assert set(keys) == set(columns)
    # Counted in the projection: DuckDB's filter pushdown skips NaN rows a WHERE would test.
    nan = duckdb.sql("select sum(isnan(\"env/all/reward/total\")::int) from "
                     f"read_parquet('{out}/metrics/**/*.parquet')").fetchall()[0][0]
    assert nan == 2  # the NaN tokens stay NaN; gaps are nulls


def test_safe_names_are_distinct_identifiers() -> None:
    """The key map gives distinct [A-Za-z0-9_] names, never starting with a digit."""
    assert safe_names(["a/b", "a.b", "9x", "///"]) == {
        "a/b": "a_b", "a.b": "a_b_2", "9x": "_9x", "///": "column"}


def test_export_refuses_a_folder_that_holds_files(sweep: list[Path], tmp_path: Path) -> None:
    """An export never mixes with an older one: a non-empty OUT is refused."""
    out = tmp_path / "out"
    write(out, "old.txt", "x")
    with pytest.raises(RlioError, match="not an empty folder"):
        export_parquet(sweep, out)


def test_cli_export(sweep: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`rlio export RUN... --format parquet OUT` writes the datasets and prints row counts."""
    out = tmp_path / "out"
    code, stdout, _ = cli(capsys, "export", *map(str, sweep), "--format", "parquet", str(out))
    assert code == 0
    assert f"metrics: {_count(out, 'metrics')} row(s)" in stdout
    code, _, err = cli(capsys, "export", *map(str, sweep), "--format", "parquet", str(out))
    assert code == 2 and "not an empty folder" in err
    code, _, err = cli(capsys, "export", str(tmp_path / "absent"), str(tmp_path / "o2"))
    assert code == 2 and err == (f"rlio: error: no run found at '{tmp_path / 'absent'}': "
                                 "no such file or directory\n")
    code, _, err = cli(capsys, "export", str(out))
    assert code == 2 and "at least one RUN" in err


@pytest.mark.parametrize("kind", ["metrics", "rollouts", "steps", "checkpoints"])
def test_pandas_polars_and_duckdb_read_a_dataset_folder(sweep: list[Path], tmp_path: Path,
                                                        kind: str) -> None:
    """pandas.read_parquet(folder) (hive partitions discovered beside the files' own run and
    split columns), polars and DuckDB read every dataset with the run and split names."""
    import pandas as pd
    import polars as pl

    out = tmp_path / "out"
    rows = export_parquet(sweep, out).rows[kind]
    frame = pd.read_parquet(out / kind)
    assert len(frame) == rows and set(frame["run"].astype(str)) == {"lr1", "lr2"}
    polars_frame = pl.read_parquet(out / kind)
    assert polars_frame.height == rows
    assert set(polars_frame["split"].cast(pl.String).to_list()) == set(frame["split"].astype(str))
    assert _count(out, kind) == rows
    if kind == "rollouts":
        assert "eval/test" in set(frame["split"].astype(str))
