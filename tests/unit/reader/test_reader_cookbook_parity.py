"""open_run gives exactly what the cookbook's own readers give, on cookbook runs and the corpus.

The reference reader below reads the way the cookbook does: every line that ends in a newline
through ``json.loads`` (which accepts NaN tokens), a line that does not parse skipped, and a
logtree walked for its ``conversation`` data nodes. Records are compared through ``repr`` so
that NaN equals NaN.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from factories import cookbook_run

from rlio import layout
from rlio.errors import ResumeError
from rlio.reader import open_run
from rlio.resume import read_resume_state

CASES = Path(__file__).resolve().parents[3] / "conformance" / "cases"
#: Corpus runs that are runs (a folder holding a run marker; open_run refuses anything else).
CASE_RUNS = sorted(p / "run" for p in CASES.iterdir() if (p / "run").is_dir()
                   and layout.is_run_root(os.listdir(p / "run")))


def reference_jsonl(path: Path) -> list[Any]:
    """The cookbook's JSONL reading: json.loads per complete line, unparseable lines skipped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_bytes().split(b"\n")[:-1]:  # the part after the last newline is torn
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # includes invalid UTF-8 and blank lines
            continue
        if isinstance(value, dict):  # every record kind is an object
            out.append(value)
    return out


def reference_conversations(doc: Any) -> list[Any]:
    """The seed's walk: every data node of type conversation, depth first, its messages."""
    found = []

    def walk(node: Any) -> None:
        if not isinstance(node, dict):
            return
        data = node.get("data")
        if isinstance(data, dict) and data.get("type") == "conversation":
            found.append(data["messages"])
        for child in node.get("children", []):
            walk(child)

    if isinstance(doc, dict):
        walk(doc.get("root"))
    return found


def same(a: Any, b: Any) -> bool:
    """Equal records, NaN equal to NaN."""
    return repr(a) == repr(b)


def assert_parity(root: Path) -> None:
    """Every record kind of the run at ``root`` reads as the reference reader reads it."""
    run = open_run(root)
    assert same(run.metrics(), reference_jsonl(root / layout.METRICS))
    assert same(run.checkpoints(), reference_jsonl(root / layout.CHECKPOINTS))
    assert same(run.timing_spans(), reference_jsonl(root / layout.TIMING_SPANS))
    for info in run.iterations():
        for label in (None, *info.evaluators):
            rel = run.path_of(info.index, "rollout_summaries", evaluator=label)
            expected = reference_jsonl(root / rel) if rel else []
            assert same(list(run.rollouts(info.index, evaluator=label)), expected), rel
            tree = run.path_of(info.index, "logtree", evaluator=label)
            if tree is None:
                continue
            try:
                doc = json.loads((root / tree).read_bytes())
            except (ValueError, RecursionError):
                doc = None
            got = [c.messages for c in run.conversations(info.index, evaluator=label)]
            assert same(got, reference_conversations(doc)), tree
    metrics = reference_jsonl(root / layout.METRICS)
    frame = run.metrics_frame()
    assert len(frame) == len(metrics)
    assert set(frame.columns) == {k for rec in metrics for k in rec}
    try:
        expected_state = read_resume_state(root)
    except ResumeError:
        with pytest.raises(ResumeError):
            run.resume_state()
        return
    state = run.resume_state()
    assert (state is None) == (expected_state is None)
    if state is not None and expected_state is not None:
        assert (state.next_batch, state.line, state.checkpoint) == (
            expected_state.next_batch, expected_state.line, expected_state.checkpoint)


@pytest.mark.parametrize("layout_name", ["flat", "nested"])
@pytest.mark.parametrize("quirks", [True, False])
def test_cookbook_runs_read_as_the_cookbook_reads_them(
    tmp_path: Path, layout_name: layout.Layout, quirks: bool
) -> None:
    """Cookbook-written runs (NaN everywhere, both layouts) give the reference reader's records."""
    assert_parity(cookbook_run(tmp_path / "run", 4, layout_name=layout_name, quirks=quirks))


@pytest.mark.parametrize("case", CASE_RUNS, ids=[p.parent.name for p in CASE_RUNS])
def test_conformance_runs_read_as_the_cookbook_reads_them(case: Path) -> None:
    """Every corpus run (damage, resumes, sidecars, both layouts) reads as the reference does."""
    assert_parity(case)


def test_crash_and_resume_run_reads_as_the_cookbook_reads_it(tmp_path: Path) -> None:
    """A run killed mid-append then resumed (torn line kept mid-file, steps re-logged) matches."""
    root = cookbook_run(tmp_path / "run", 3)
    with (root / layout.METRICS).open("ab") as f:
        f.write(b'{"step": 3, "progress/batch": 3, "optim/l')  # the crash
        f.write(b'\n{"step": 2, "progress/batch": 2, "env/all/reward/total": NaN}\n')  # resume
        f.write(b'{"step": 3, "progress/batch": 3, "late/key": 1.5}\n')
    assert_parity(root)
    run = open_run(root)
    assert run.metrics_frame()["late/key"].iloc[-1] == 1.5
