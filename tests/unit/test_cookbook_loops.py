"""The real tinker-cookbook 0.6.1 writes runs through RlioStorage as through its own backend.

Its ``JsonLogger(log_dir, store=...)``, ``TrainingRunStore`` (config, code diff, metrics, summary
rows, rollouts, logtrees, checkpoints with token counts, timing spans from ``trace_iteration``)
and ``truncate_metrics`` on resume run once over the cookbook's ``LocalStorage`` and once over
``RlioStorage``: the files match, the cookbook's readers read the same records from both, and
rlio validates the rlio-written run with no error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from factories import logtree_doc, trajectory

from rlio import validate_run
from rlio.cookbook import RlioStorage

stores = pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook 0.6.1 (.ci/run)")
ml_log = pytest.importorskip("tinker_cookbook.utils.ml_log")
trace = pytest.importorskip("tinker_cookbook.utils.trace")

TOKENS = {"sampled": 1200, "prefill_cached": 300, "prefill_uncached": 900, "trained": 1100}
CONFIG = {"model_name": "Qwen/Qwen3-8B", "learning_rate": 4e-5, "batch_size": 8}


def session(log_dir: Path, storage: Any, steps: range, *, resume_from: int | None) -> None:
    """One training process of a cookbook RL loop, writing through ``storage`` (None: the
    cookbook's default backend), as rl/train.py does: rewind on resume, then per step."""
    store = stores.TrainingRunStore(storage) if storage is not None else None
    logger = ml_log.JsonLogger(str(log_dir), store=store)
    store = logger.store
    if resume_from is not None:
        store.truncate_metrics(resume_from)
    else:
        logger.log_hparams(CONFIG)
    for i in steps:
        with trace.trace_iteration(step=i) as window:
            with trace.scope_span_sync("sample"):
                pass
            with trace.scope_span_sync("train_step"):
                pass
        store.write_rollouts(i, [trajectory(i, 0, t) for t in range(2)])
        store.write_logtree(i, logtree_doc(f"RL Iteration {i}", None,
                                           "2026-12-01T00:00:00+00:00"))
        metrics = {"progress/batch": i, "env/all/reward/total": 0.75, "optim/lr": 4e-5}
        logger.log_metrics({**metrics, **{k: 0.01 for k in window.get_timing_metrics()}},
                           step=i)
        window.save_timing(i, store=store)
        if i % 2 == 1:
            store.write_checkpoint({
                "name": f"{i + 1:06d}", "batch": i + 1, "state_path": f"tinker://r/w/{i + 1}",
                "cumulative_tokens": TOKENS, "discarded_tokens": dict.fromkeys(TOKENS, 0)})
    logger.log_summary({"cost/total_usd": 1.25})
    logger.close()


def two_sessions(log_dir: Path, make_storage: Any) -> None:
    """A run killed after step 4 and resumed from its checkpoint at batch 4, then steps 4-5."""
    first = make_storage(log_dir)
    session(log_dir, first, range(5), resume_from=None)
    if first is not None:
        first.close()
    second = make_storage(log_dir)
    session(log_dir, second, range(4, 6), resume_from=4)
    if second is not None:
        second.close()


def files(run: Path) -> dict[str, bytes]:
    """Every file of a run but the timing spans (wall times differ run to run) and code.diff."""
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.name not in ("timing_spans.jsonl", "code.diff")}


def readers(store: Any) -> dict[str, Any]:
    """What the cookbook's readers return for a run."""
    iterations = store.list_iterations()
    return {
        "config": store.read_config(), "metrics": store.read_metrics(),
        "checkpoints": store.read_checkpoints(),
        "timing": [(r["step"], [s["name"] for s in r["spans"]]) for r in store.read_timing()],
        "iterations": [(it.iteration, it.has_train_rollouts, it.has_train_logtree)
                       for it in iterations],
        "rollouts": [store.read_rollouts(it.iteration) for it in iterations],
        "logtrees": [store.read_logtree(it.iteration) for it in iterations],
        "keys": store.metric_keys(),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same two-session loop written by the cookbook's backend and through RlioStorage."""
    base = tmp_path_factory.mktemp("loops")
    theirs, ours = base / "cookbook", base / "rlio"
    two_sessions(theirs, lambda _d: None)
    two_sessions(ours, RlioStorage)
    return theirs, ours


def test_rlio_run_has_the_cookbooks_files(runs: tuple[Path, Path]) -> None:
    """Byte for byte the same files, plus rlio's sidecar of the lines the resume rewound."""
    theirs, ours = runs
    mine = files(ours)
    superseded = mine.pop("metrics.jsonl.superseded")
    assert mine == files(theirs)
    assert b'"step": 4' in superseded  # the rewound step, kept, never deleted
    assert (ours / "timing_spans.jsonl").read_text().count("\n") == 7  # 5 + 2 steps


def test_cookbook_readers_read_the_same_records(runs: tuple[Path, Path]) -> None:
    """TrainingRunStore's readers give the same records over either backend and run."""
    theirs, ours = runs
    baseline = readers(stores.TrainingRunStore(stores.LocalStorage(theirs)))
    with RlioStorage(ours, attach=True) as attached:
        assert readers(stores.TrainingRunStore(attached)) == baseline
    assert readers(stores.TrainingRunStore(stores.LocalStorage(ours))) == baseline
    steps = [m.get("step") for m in baseline["metrics"]]
    assert steps == [0, 1, 2, 3, None, 4, 5, None]  # rewound at 4; summary rows without a step


def test_rlio_run_validates_clean(runs: tuple[Path, Path]) -> None:
    """rlio's validator finds no error (nor warning) in the run the cookbook wrote through it."""
    report = validate_run(runs[1])
    assert [f for f in report.findings if f.severity in ("error", "warning")] == []


def test_registry_lists_the_rlio_run(runs: tuple[Path, Path]) -> None:
    """The cookbook's RunRegistry finds both runs, the same over either backend of their folder."""
    base = runs[0].parent
    found = {r.run_id: r.status for r in stores.RunRegistry([stores.LocalStorage(base)]).refresh()}
    assert set(found) == {"cookbook", "rlio"}
    with RlioStorage(base, attach=True) as attached:
        over_rlio = {r.run_id: r.status for r in stores.RunRegistry([attached]).refresh()}
    assert over_rlio == found


def test_second_logger_on_a_live_run_is_refused(tmp_path: Path) -> None:
    """A second training process opening the same run through RlioStorage is refused."""
    from rlio.errors import RunInUseError

    with RlioStorage(tmp_path / "run") as owner:
        ml_log.JsonLogger(str(tmp_path / "run"),
                          store=stores.TrainingRunStore(owner)).log_metrics({"a": 1}, step=0)
        with pytest.raises(RunInUseError):
            RlioStorage(tmp_path / "run")
