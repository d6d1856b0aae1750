"""The real tinker-cookbook 0.6.1 writes runs through RlioStorage as through its own backend.

Its ``JsonLogger(log_dir, store=...)``, ``TrainingRunStore`` (config, code diff, metrics, summary
rows, rollouts, logtrees, checkpoints with token counts, timing spans from ``trace_iteration``)
and ``truncate_metrics`` on resume run once over the cookbook's ``LocalStorage`` and once over
``RlioStorage``: the files match, the cookbook's readers read the same records from both, and
rlio validates the rlio-written run with no error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import cookbook_files as files
from factories import cookbook_readers as readers
from factories import cookbook_two_sessions as two_sessions

from rlio import validate_run
from rlio.cookbook import RlioStorage

stores = pytest.importorskip("tinker_cookbook.stores", reason="tinker-cookbook 0.6.1 (.ci/run)")
ml_log = pytest.importorskip("tinker_cookbook.utils.ml_log")

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


def test_training_store_semantics_over_rlio(tmp_path: Path) -> None:
    """TrainingRunStore over RlioStorage: a missing prefix reads as empty, the incremental
    reader sees later appends, a pickled store reads the same run, write_rollouts replaces."""
    import pickle

    with RlioStorage(tmp_path / "run") as s:
        store = stores.TrainingRunStore(s)
        assert stores.TrainingRunStore(s, "nonexistent").read_config() is None
        assert stores.TrainingRunStore(s, "nonexistent").read_metrics() == []
        store.write_config({"model_name": "m"})
        store.write_metrics({"loss": 2.5}, step=0)
        assert [m["step"] for m in store.read_metrics()] == [0]
        store.write_metrics({"loss": 2.0}, step=1)
        assert [m["loss"] for m in store.read_new_metrics()] == [2.0]
        store.write_rollouts(0, [{"v": 1}])
        store.write_rollouts(0, [{"v": 2}])
        assert store.read_rollouts(0) == [{"v": 2}]
        copy = pickle.loads(pickle.dumps(stores.TrainingRunStore(s)))
        assert copy.read_config() == {"model_name": "m"} and len(copy.read_metrics()) == 2
        assert store.truncate_metrics(5) == 0  # nothing at or past step 5: left alone
        assert not s.exists("metrics.jsonl.pre_resume_000005")
