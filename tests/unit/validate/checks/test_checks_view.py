"""Unit tests of the run view the checks share: the iteration set and the restart steps."""

from __future__ import annotations

from rlio import layout
from rlio.validate.checks.view import CheckpointFacts, RunView


def view(paths: list[str]) -> RunView:
    files = {p: layout.parse_path(p) for p in paths}
    return RunView(layout.detect_layout(files), files, dict.fromkeys(paths, "file"),
                   {p: p for p in paths})


def test_iterations_are_those_with_files() -> None:
    """The iteration set holds every iteration of a per-iteration file, top-level files none."""
    v = view(["metrics.jsonl", "train_iteration_000000.html", "eval_x_iteration_000003.html"])
    assert v.iterations == frozenset({0, 3})


def test_restart_steps_come_from_the_ledger() -> None:
    """Restart steps are empty before the ledger was read, then the ledger's."""
    v = view(["metrics.jsonl"])
    assert v.restart_steps == set()
    v.checkpoints = CheckpointFacts(restart_steps={4})
    assert v.restart_steps == {4}
