"""The listing: the local walk lists what the contract lists, and odd entries (symbolic links,
directories and fifos named like files, temporary files, sidecars) get their findings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from factories import trajectory, write
from test_validate_damage import small_run

from rlio.storage.base import HIDDEN_PREFIXES
from rlio.storage.local import LocalStorage
from rlio.validate import validate_run


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


def test_odd_listing_findings(tmp_path: Path) -> None:
    """A run whose listing holds odd entries reports each kind of oddity."""
    run = odd_run(tmp_path / "run")
    codes = {f.code for f in validate_run(run).findings}
    assert {"RL107", "RL301", "RL302", "RL303", "RL305", "RL306"} <= codes
