"""The listing's shortcuts give what the rules give: ``parse_path``'s one-regex path for the usual
names, the local ``walk`` and the engine's classification of the usual entry.

``layout.parse_path_exact`` is the name rules one by one; every shortcut is compared against it
on names that almost match the layout, and on runs whose listing holds odd entries (symbolic
links, directories and fifos named like files, temporary files, sidecars).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from factories import trajectory, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_validate_smallfiles import both_ways, small_run

from rlio import layout
from rlio.storage.base import HIDDEN_PREFIXES
from rlio.storage.local import LocalStorage
from rlio.validate.checks.logtree import html_twin

SETTINGS = settings(max_examples=500, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

NAMES = [
    "train_iteration_000001_logtree.json", "train_iteration_000001_rollout_summaries.jsonl",
    "train_iteration_000001.html", "train_iteration_00001_logtree.json",
    "train_iteration_0000001_logtree.json", "train_iteration_1000000_logtree.json",
    "train_iteration_00000a_logtree.json", "train_iteration_\u0661\u0662\u0663\u0664\u0665"
    "\u0666_logtree.json", "train_iteration_000001_logtree.json\n",
    "train_iteration_000001_logtree.jsonl", "train_iteration_000001_logtree.json.torn",
    "Train_iteration_000001_logtree.json", "xtrain_iteration_000001_logtree.json",
    "eval_x_iteration_000001_logtree.json", "eval_train_iteration_000001_logtree.json",
    "train_iteration_000001_timing_gantt.html", "timing_gantt_000001.html",
    "iteration_000001/train_logtree.json", "iteration_000001/train.html",
    "iteration_000001/train_rollout_summaries.jsonl", "iteration_00001/train_logtree.json",
    "iteration_000001/train_logtree.json/x", "iteration_000001/eval_a_logtree.json",
    "iteration_000001/timing_gantt.html", "iteration_000001//train_logtree.json",
    "a/iteration_000001/train_logtree.json", "iteration_000001/train_iteration_000001.html",
    "metrics.jsonl", "metrics.jsonl.torn", "metrics.jsonl.pre_resume_3", "config.json",
    "report/index.html", "", "/", ".rlio-tmp-x",
]


@pytest.mark.parametrize("name", NAMES)
def test_parse_path_shortcut_is_the_rules(name: str) -> None:
    """Each crafted name parses to exactly what the rules one by one give."""
    assert layout.parse_path(name) == layout.parse_path_exact(name)


_PIECES = ["train", "eval_", "x", "_iteration_", "iteration_", "/", "0", "1", "9", "00000",
           "000001", "\u0661", "_logtree.json", "_rollout_summaries.jsonl", ".html", ".torn",
           "timing_gantt", "metrics.jsonl", "\n", "."]


@SETTINGS
@given(parts=st.lists(st.sampled_from(_PIECES), max_size=8))
def test_parse_path_shortcut_on_generated_names(parts: list[str]) -> None:
    """Names assembled from the layout's pieces parse as the rules one by one say."""
    name = "".join(parts)
    assert layout.parse_path(name) == layout.parse_path_exact(name)
    _assert_twin(name)


def _assert_twin(name: str) -> None:
    rp = layout.parse_path(name)
    assert html_twin(rp) == layout.twin_path(rp, "html")


@pytest.mark.parametrize("name", [*NAMES, "eval_a_iteration_000001_iteration_000002_logtree.json",
                                  "eval_a b_iteration_000001_logtree.json",
                                  "train_iteration_99999999999999999999_logtree.json",
                                  "iteration_0001/eval_x_logtree.json"])
def test_html_twin_is_twin_path(name: str) -> None:
    """A logtree's HTML twin by suffix swap is what ``twin_path`` rebuilds from its parts."""
    _assert_twin(name)


def _reference_walk(root: Path) -> list[tuple[str, str, int, Any]]:
    """The listing by the contract: sorted per folder, folders after their parent's entries,
    never following a link, rlio's hidden files skipped."""
    out: list[tuple[str, str, int, Any]] = []
    stack = [""]
    real = os.path.realpath(root)
    while stack:
        rel_dir = stack.pop()
        for name in sorted(os.listdir(root / rel_dir) if rel_dir else os.listdir(root)):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not rel_dir and (name + "/").startswith(HIDDEN_PREFIXES):
                continue
            st_ = os.lstat(root / rel)
            if os.path.islink(root / rel):
                target = os.path.realpath(root / rel)
                out.append((rel, "symlink", 0, target.startswith(real + os.sep)))
            elif os.path.isfile(root / rel):
                out.append((rel, "file", st_.st_size, None))
            elif os.path.isdir(root / rel):
                stack.append(rel)
                out.append((rel, "dir", 0, None))
            else:
                out.append((rel, "other", 0, None))
    return out


def odd_run(root: Path) -> Path:
    """A small run whose listing holds entries that almost match the layout."""
    small_run(root, 3)
    rec = orjson.dumps(trajectory(1, 0)) + b"\n"
    write(root, "train_iteration_00001_rollout_summaries.jsonl", rec)  # five digits
    write(root, "train_iteration_0000001_rollout_summaries.jsonl", rec)  # seven, zero first
    write(root, "train_iteration_000004_logtree.jsonl", b"{}\n")  # a suffix one letter long
    (root / "train_iteration_000005_logtree.json").mkdir()  # a folder named like a file
    (root / "train_iteration_000005_logtree.json" / "x.json").write_bytes(b"{}")
    (root / "iteration_000006").mkdir()
    write(root, "iteration_000006/train_rollout_summaries.jsonl", rec.replace(b'"iteration":1',
                                                                            b'"iteration":6'))
    os.symlink(root / "train_iteration_000001_rollout_summaries.jsonl",
               root / "train_iteration_000007_rollout_summaries.jsonl")
    os.symlink("/etc/hostname", root / "train_iteration_000008_logtree.json")
    os.mkfifo(root / "train_iteration_000009_logtree.json")
    write(root, ".train_iteration_000002_logtree.json.rlio-tmp-ab12", b"{")
    write(root, "train_iteration_000002_logtree.json.rlio-tmp-ab12", b"{")
    write(root, "metrics.jsonl.torn", b"{")
    write(root, "caf\u00e9_iteration_000001_logtree.json", b"{}")
    write(root, ".rlio-run", b"{}")
    write(root, ".rlio-locks/x", b"")
    return root


def test_walk_lists_what_the_contract_lists(tmp_path: Path) -> None:
    """The local walk yields exactly the reference listing, odd entries included."""
    run = odd_run(tmp_path / "run")
    got = [(e.path, e.kind, e.size, e.target_inside) for e in LocalStorage(str(run)).walk()]
    assert got == _reference_walk(run)


def test_odd_listing_same_findings_as_the_rules(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    """A run whose listing holds odd entries reports the same findings whether names are
    classified by the shortcut or by the rules one by one, typed paths on or off."""
    run = odd_run(tmp_path / "run")
    fast = both_ways(monkeypatch, run)
    monkeypatch.setattr(layout, "parse_path", layout.parse_path_exact)
    assert both_ways(monkeypatch, run) == fast
    codes = {r[0] for r in fast}
    assert {"RL107", "RL301", "RL302", "RL303", "RL305", "RL306"} <= codes
