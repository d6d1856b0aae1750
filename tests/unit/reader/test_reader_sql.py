"""``rlio.query`` / ``rlio query``: SQL over a seeded sweep equals pandas on the raw files."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import factories
import pandas as pd
import pyarrow.parquet as pq
import pytest

import rlio
from rlio.errors import install_line
from rlio.reader import sql

RUNS = ("lr-1e-4/cookbook", "lr-1e-4/empty", "lr-1e-5/base", "lr-4e-5/regressed")


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """The seeded sweep of ``factories.seeded_sweep``."""
    return factories.seeded_sweep(tmp_path)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _frame(rows: list[dict[str, Any]], sort: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows).sort_values(sort).reset_index(drop=True)


def _equal(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert sorted(got.columns) == sorted(want.columns)
    got = got[list(want.columns)]
    for col in want.columns:
        a, b = got[col].tolist(), want[col].tolist()
        for x, y in zip(a, b, strict=True):
            if isinstance(y, float) and math.isnan(y):
                assert x is None or (isinstance(x, float) and math.isnan(x)), col
            else:
                assert x == y, (col, x, y)


def test_metrics_view_equals_pandas_on_the_raw_files(sweep: Path) -> None:
    """Every metrics line of every run with its run column; a key only the last line has
    (late/key) and one only some runs have (cost) are columns, null elsewhere."""
    got = rlio.query("SELECT * FROM metrics ORDER BY run, step", [sweep], jobs=1).to_pandas()
    want = _frame([{"run": n, **r} for n in RUNS for r in _jsonl(sweep / n / "metrics.jsonl")],
                  ["run", "step"])
    _equal(got, want)
    late = rlio.query('SELECT run, step FROM metrics WHERE "late/key" = 7 ORDER BY run', sweep,
                      jobs=1)
    assert late.to_pylist() == [{"run": "lr-1e-5/base", "step": 4},
                                {"run": "lr-4e-5/regressed", "step": 4}]


def test_aggregates_equal_pandas(sweep: Path) -> None:
    """A grouped query answers what pandas computes from the same lines."""
    got = rlio.query('SELECT run, max("env/all/reward/total") AS best, avg("train/loss") AS loss '
                     "FROM metrics GROUP BY run ORDER BY run", [sweep], jobs=1).to_pandas()
    raw = pd.DataFrame([{"run": n, **r} for n in RUNS for r in _jsonl(sweep / n /
                                                                     "metrics.jsonl")])
    want = raw.groupby("run").agg(best=("env/all/reward/total", "max"),
                                  loss=("train/loss", "mean")).reset_index()
    assert got["run"].tolist() == want["run"].tolist()
    assert got["best"].tolist() == want["best"].tolist()
    assert got["loss"].tolist() == pytest.approx(want["loss"].tolist())


def test_configs_view_flattens_each_config(sweep: Path) -> None:
    """configs holds one (run, key, value, kind) row per leaf, nested keys joined with '.'."""
    got = rlio.query("SELECT * FROM configs ORDER BY run, key", [sweep], jobs=1).to_pylist()
    want = []
    for n in RUNS:
        cfg = json.loads((sweep / n / "config.json").read_text())
        flat = {k: v for k, v in cfg.items() if k != "sampling"}
        flat.update({f"sampling.{k}": v for k, v in cfg["sampling"].items()})
        for k, v in flat.items():
            kind = {bool: "bool", int: "int", float: "float", str: "str"}[type(v)]
            want.append({"run": n, "key": k, "value": v if isinstance(v, str) else None,
                         "kind": kind, "json": v})
    want.sort(key=lambda r: (r["run"], r["key"]))
    assert [(r["run"], r["key"], r["kind"]) for r in got] == [
        (r["run"], r["key"], r["kind"]) for r in want]
    for g, w in zip(got, want, strict=True):
        assert (g["value"] if w["kind"] == "str" else json.loads(g["value"])) == w["json"]


def test_rollouts_steps_checkpoints_and_runs(sweep: Path) -> None:
    """rollouts and steps hold every trajectory and step with iteration and split; checkpoints
    every record; runs one row per run."""
    rows = rlio.query("SELECT run, iteration, split, group_idx, final_reward FROM rollouts "
                      "ORDER BY run, group_idx", [sweep], jobs=1).to_pylist()
    want = []
    for n in ("lr-1e-4/cookbook", "lr-1e-5/base", "lr-4e-5/regressed"):
        path = next((sweep / n).rglob("*rollout_summaries.jsonl"))
        found = re.search(r"iteration_(\d+)", str(path.relative_to(sweep / n)))
        assert found is not None
        want += [{"run": n, "iteration": int(found[1]), "split": "train",
                  "group_idx": r["group_idx"], "final_reward": r["final_reward"]}
                 for r in _jsonl(path)]
    assert rows == want
    steps = rlio.query("SELECT count(*) AS n FROM steps", [sweep], jobs=1).to_pylist()
    assert steps == [{"n": len(want)}]
    ckpts = rlio.query("SELECT run, name, batch FROM checkpoints ORDER BY run", [sweep],
                       jobs=1).to_pylist()
    assert ckpts == [{"run": "lr-1e-4/cookbook", "name": "000004", "batch": 4},
                     {"run": "lr-1e-5/base", "name": "final", "batch": 5},
                     {"run": "lr-4e-5/regressed", "name": "final", "batch": 5}]
    runs = rlio.query("SELECT run, status, checkpoints FROM runs ORDER BY run", [sweep],
                      jobs=1).to_pylist()
    assert runs == [{"run": "lr-1e-4/cookbook", "status": "incomplete", "checkpoints": 1},
                    {"run": "lr-1e-4/empty", "status": "incomplete", "checkpoints": 0},
                    {"run": "lr-1e-5/base", "status": "finished", "checkpoints": 1},
                    {"run": "lr-4e-5/regressed", "status": "finished", "checkpoints": 1}]


def test_chunks_grow_columns_and_widen_types(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A key first seen in a later chunk becomes a column; an integer column meeting floats is
    DOUBLE, meeting strings VARCHAR."""
    monkeypatch.setattr(sql, "CHUNK_ROWS", 2)
    rows = [{"step": i, "a": i} for i in range(3)] + [{"step": 3, "a": 0.5, "late": "x"}]
    factories.write_jsonl(tmp_path / "s" / "r1", "metrics.jsonl", rows)
    factories.write_jsonl(tmp_path / "s" / "r2", "metrics.jsonl", [{"step": 0, "late": 1}])
    got = rlio.query("SELECT run, step, a, late FROM metrics ORDER BY run, step",
                     tmp_path / "s", jobs=1)
    assert str(got.schema.field("a").type) == "double"
    assert str(got.schema.field("late").type) == "string"
    assert got.to_pylist() == [
        {"run": "r1", "step": 0, "a": 0.0, "late": None},
        {"run": "r1", "step": 1, "a": 1.0, "late": None},
        {"run": "r1", "step": 2, "a": 2.0, "late": None},
        {"run": "r1", "step": 3, "a": 0.5, "late": "x"},
        {"run": "r2", "step": 0, "a": None, "late": "1"},
    ]


def test_a_process_pool_gives_the_same_answer(sweep: Path) -> None:
    """Reading the runs in two worker processes gives what reading them in this one gives."""
    q = "SELECT * FROM metrics ORDER BY run, step"
    assert rlio.query(q, [sweep], jobs=2).equals(rlio.query(q, [sweep], jobs=1))


def test_no_run_raises_unless_collected(tmp_path: Path) -> None:
    """A path without a run raises NotARunError, or is collected in ``unreadable``."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(rlio.NotARunError):
        rlio.query("SELECT 1", [tmp_path / "empty"])
    bad: list[Any] = []
    assert rlio.query("SELECT count(*) AS n FROM metrics", [tmp_path / "empty"],
                      unreadable=bad).to_pylist() == [{"n": 0}]
    assert [u.path for u in bad] == [str(tmp_path / "empty")]


def test_missing_duckdb_names_the_extra() -> None:
    """Without duckdb, rlio.query and rlio query fail with one line naming rlio[duckdb]."""
    code = ("import sys; sys.modules['duckdb'] = None\n"
            "import rlio\n"
            "try:\n    rlio.query('SELECT 1', ['.'])\n"
            "except rlio.MissingExtraError as e:\n    print(e)\n"
            "from rlio.cli import main\nsys.exit(main(['query', 'SELECT 1', '.']))\n")
    proc = factories.run_python(code)
    assert install_line("duckdb") in proc.stdout
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and install_line("duckdb") in proc.stderr


def test_cli_formats(tmp_path: Path, sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The aligned table, CSV, JSON and Parquet outputs hold the same rows."""
    q = "SELECT run, count(*) AS n FROM metrics GROUP BY run ORDER BY run"
    code, out, _ = factories.cli(capsys, "query", q, str(sweep), "-j", "1")
    assert code == 0
    assert out.splitlines() == ["run                n", "-----------------  -",
                                "lr-1e-4/cookbook   4", "lr-1e-5/base       5",
                                "lr-4e-5/regressed  5", "(3 rows)"]
    code, out, _ = factories.cli(capsys, "query", q, str(sweep), "--format", "csv", "-j", "1")
    assert out == "run,n\nlr-1e-4/cookbook,4\nlr-1e-5/base,5\nlr-4e-5/regressed,5\n"
    code, out, _ = factories.cli(capsys, "query", q, str(sweep), "--format", "json", "-j", "1")
    assert json.loads(out) == [{"run": "lr-1e-4/cookbook", "n": 4}, {"run": "lr-1e-5/base",
                               "n": 5}, {"run": "lr-4e-5/regressed", "n": 5}]
    target = tmp_path / "out.parquet"
    code, _, _ = factories.cli(capsys, "query", q, str(sweep), "--format", "parquet", "-o",
                               str(target), "-j", "1")
    assert code == 0 and pq.read_table(target).to_pylist() == json.loads(out)
    code, _, err = factories.cli(capsys, "query", "SELEC 1", str(sweep), "-j", "1")
    assert code == 2 and err.startswith("rlio: error: the query failed")
    code, _, err = factories.cli(capsys, "query", q, str(sweep), "--format", "parquet")
    assert code == 2 and "-o FILE" in err


def test_cli_query_errors_break_lines_and_hint_at_quoting(
        sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A parser error prints DuckDB's lines as lines (no literal \\n); a bare key holding '/'
    gets a hint to double-quote it; string literals and quoted keys are not hinted at."""
    code, _, err = factories.cli(capsys, "query", "SELEC 1", str(sweep), "-j", "1")
    assert code == 2 and "\\n" not in err
    assert err.splitlines()[0].startswith("rlio: error: the query failed: Parser Error")
    assert any(line.startswith("LINE 1: SELEC 1") for line in err.splitlines())
    sql = "SELECT env/all/reward/total, 'a/b' FROM metrics WHERE \"x/y\" > 0"
    code, _, err = factories.cli(capsys, "query", sql, str(sweep), "-j", "1")
    assert code == 2
    assert err.splitlines()[-1] == ("hint: a key holding '/' is a column only in double quotes: "
                                    "\"env/all/reward/total\" (unquoted, SQL reads '/' as a "
                                    "division)")


@pytest.mark.dask
@pytest.mark.slow  # a cluster of two worker processes takes seconds to start
def test_a_dask_cluster_gives_the_same_query_and_page(tmp_path: Path, sweep: Path) -> None:
    """On a real LocalCluster (two worker processes, loopback) rlio.query and the comparison page
    equal what reading in this process gives."""
    distributed = pytest.importorskip("distributed")
    from rlio.report.sweep import render_comparison

    q = "SELECT * FROM rollouts ORDER BY run, iteration, group_idx"
    out = str(tmp_path / "c.html")
    with distributed.LocalCluster(n_workers=2, processes=True, host="127.0.0.1",
                                  threads_per_worker=1, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        executor = client.get_executor()
        assert rlio.query(q, [sweep], executor=executor).equals(rlio.query(q, [sweep], jobs=1))
        page = render_comparison([sweep], output=out, executor=executor)
        q2 = "SELECT run, count(*) AS n FROM steps GROUP BY run ORDER BY run"
        via = factories.run_cli("query", q2, str(sweep), "--dask", cluster.scheduler_address,
                                "--format", "json")
        cmp = factories.run_cli("compare", str(sweep), "-o", str(tmp_path / "d.html"), "--dask",
                                cluster.scheduler_address)
    assert page == render_comparison([sweep], output=out, jobs=1)
    assert via.returncode == 0 and json.loads(via.stdout) == rlio.query(q2, [sweep]).to_pylist()
    assert cmp.returncode == 0 and (tmp_path / "d.html").is_file()

