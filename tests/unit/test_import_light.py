"""`import rlio`, writing a local run and validating a valid one stay light: no jsonschema, fsspec,
gcsfs, boto3 or the Azure SDK imported."""

from __future__ import annotations

import json
import pathlib
import sys

from factories import run_python

FORBIDDEN = ("jsonschema", "fsspec", "gcsfs", "boto3", "botocore", "azure")


def test_import_rlio_imports_no_heavy_dependency() -> None:
    """A fresh `import rlio` (and touching its lazy names' table) imports none of the heavy deps."""
    proc = run_python(f"""
        import json, sys
        import rlio
        rlio.__all__, dir(rlio)
        print(json.dumps([m for m in {FORBIDDEN!r} if m in sys.modules]))
    """)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def imported_modules(code: str) -> set[str]:
    """Module names ``python -X importtime -c code`` reports importing."""
    proc = run_python(code, flags=["-X", "importtime"])
    assert proc.returncode == 0, proc.stderr
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line} - {"imported package"}


def test_import_rlio_pulls_only_the_standard_library() -> None:
    """`python -X importtime -c "import rlio"` adds only stdlib modules besides rlio itself."""
    added = imported_modules("import rlio") - imported_modules("pass")
    top = {n.split(".")[0] for n in added}
    assert "rlio" in top
    assert top - set(sys.stdlib_module_names) - {"rlio"} == set()


def test_writing_a_local_run_imports_no_heavy_dependency(tmp_path: pathlib.Path) -> None:
    """A whole local writing session (every verb, a logtree, the demo) never imports them."""
    proc = run_python(f"""
        import json, sys
        from rlio import RunWriter
        from rlio.demo import run_demo
        with RunWriter({str(tmp_path / "run")!r}, layout="nested") as run:
            run.write_config({{"lr": 1e-5}})
            run.write_code_diff("diff\\n")
            run.log_metrics({{"progress/batch": 0, "x": float("nan")}}, step=0)
            run.record_checkpoint("000001", batch=1, state_path="tinker://r/1")
            run.write_rollout_summaries(0, [{{
                "group_idx": 0, "traj_idx": 0, "tags": [], "sampling_client_step": 0,
                "total_reward": 1.0, "final_reward": 1.0, "trajectory_metrics": {{}},
                "steps": [], "final_ob_len": 0}}], evaluator="test")
            with run.logtree(0, title="t") as lt:
                with lt.section("Group Rollout"):
                    lt.conversation([{{"role": "user", "content": "hi"}}])
        with RunWriter({str(tmp_path / "run")!r}, resume=True) as run:
            run.log_metrics({{"x": 1}}, step=1)
        run_demo({str(tmp_path / "demo")!r}, iterations=2)
        print(json.dumps([m for m in {FORBIDDEN!r} if m in sys.modules]))
    """)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_validating_a_valid_run_imports_no_heavy_dependency(tmp_path: pathlib.Path) -> None:
    """`rlio validate` of a valid local run reports it valid without importing jsonschema (it
    only explains failures), fsspec, gcsfs or boto3."""
    run = tmp_path / "run"
    with_writer = run_python(f"""
        from rlio import RunWriter
        with RunWriter({str(run)!r}) as w:
            w.write_config({{"lr": 1e-5}})
            for i in range(3):
                w.log_metrics({{"progress/batch": i, "optim/lr": 1e-5}}, step=i)
            w.record_checkpoint("000002", batch=2, state_path="tinker://r/2")
    """)
    assert with_writer.returncode == 0, with_writer.stderr
    proc = run_python(f"""
        import json, sys
        from rlio.cli.main import main
        code = main(["validate", {str(run)!r}])
        print(json.dumps([code, [m for m in {FORBIDDEN!r} if m in sys.modules]]))
    """)
    assert proc.returncode == 0, proc.stderr
    code, loaded = json.loads(proc.stdout.splitlines()[-1])
    assert (code, loaded) == (0, [])
