"""Runs of many small files, each damaged one way: every damage gets its own findings.

``small_run`` is a run of eleven iterations, each a 4-line rollout file and a small logtree;
``DAMAGE`` breaks one file of it (key order, escapes, duplicate keys, values, torn and blank
lines, invalid UTF-8, naive timestamps, odd tags, truncated documents). The same cases feed the
findings snapshot (``tools/findings_snapshot.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from factories import logtree_doc, trajectory, write

from rlio import layout
from rlio.validate import engine, validate_run

Rows = list[tuple[Any, ...]]


def rows(run: Path, **kw: Any) -> Rows:
    """Every field of every finding of the run."""
    return [(f.code, f.severity, f.file, f.line, f.pointer, f.message)
            for f in validate_run(run, **kw).findings]


def small_run(root: Path, iterations: int) -> Path:
    """A run of ``iterations`` iterations, each a 4-line rollout file and a small logtree."""
    write(root, "config.json", b'{"lr": 0.0001}')
    write(root, "metrics.jsonl", b"".join(orjson.dumps({"step": i}) + b"\n"
                                          for i in range(iterations)))
    for i in range(iterations):
        recs = [trajectory(i, g) for g in range(4)]
        write(root, layout.iteration_path("flat", i, "rollout_summaries"),
              b"".join(orjson.dumps(r) + b"\n" for r in recs))
        doc = logtree_doc(f"it {i}", layout.iteration_path("flat", i, "html"),
                          "2025-01-01T00:00:00+00:00")
        write(root, layout.iteration_path("flat", i, "logtree"), orjson.dumps(doc))
    return root


def rollouts(run: Path, i: int) -> Path:
    return run / layout.iteration_path("flat", i, "rollout_summaries")


def logtree(run: Path, i: int) -> Path:
    return run / layout.iteration_path("flat", i, "logtree")


def _reorder(path: Path, line: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    rec = orjson.loads(lines[line])
    lines[line] = orjson.dumps(dict(reversed(list(rec.items())))) + b"\n"
    path.write_bytes(b"".join(lines))


def _edit(path: Path, line: int, **values: Any) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[line] = orjson.dumps({**orjson.loads(lines[line]), **values}) + b"\n"
    path.write_bytes(b"".join(lines))


def _replace(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


#: (name, damage done to a small-file run)
DAMAGE: list[tuple[str, Any]] = [
    ("clean", lambda run: None),
    ("keys reversed", lambda run: _reorder(rollouts(run, 3), 0)),
    ("keys reversed in a later line", lambda run: _reorder(rollouts(run, 4), 2)),
    ("keys spaced", lambda run: _replace(rollouts(run, 5), b'"split":', b'"split" : ')),
    ("escaped key", lambda run: _replace(rollouts(run, 5), b'"split"', b'"spl\\u0069t"')),
    ("duplicate key", lambda run: _replace(rollouts(run, 6), b'{"schema_version":1,',
                                           b'{"schema_version":1,"iteration":0,')),
    ("integer as float", lambda run: _edit(rollouts(run, 7), 1, traj_idx=0.0)),
    ("wrong iteration", lambda run: _edit(rollouts(run, 7), 2, iteration=99)),
    ("wrong total", lambda run: _edit(rollouts(run, 8), 0, total_reward=9.5)),
    ("pairs repeat", lambda run: _edit(rollouts(run, 8), 3, group_idx=0)),
    ("undeclared key", lambda run: _edit(rollouts(run, 9), 0, extra=1)),
    ("undeclared key, then keys reversed", lambda run: (_edit(rollouts(run, 1), 1, extra=1),
                                                        _reorder(rollouts(run, 1), 3))),
    ("keys reversed, then undeclared key", lambda run: (_reorder(rollouts(run, 1), 0),
                                                        _edit(rollouts(run, 1), 2, extra=1))),
    ("NaN token", lambda run: _replace(rollouts(run, 9), b'"total_reward":', b'"total_reward":'
                                       b'NaN,"x":')),
    ("torn last line", lambda run: rollouts(run, 10).write_bytes(
        rollouts(run, 10).read_bytes()[:-20])),
    ("blank line", lambda run: _replace(rollouts(run, 10), b"}\n", b"}\n\n")),
    ("carriage return", lambda run: _replace(rollouts(run, 2), b"}\n", b"}\r\n")),
    ("cut line between whole ones", lambda run: _replace(rollouts(run, 2), b"}\n",
                                                         b"}\n{\"schema_version\":1,\n")),
    ("invalid utf-8", lambda run: _replace(rollouts(run, 2), b'"train"', b'"tr\xffin"')),
    ("no final newline", lambda run: rollouts(run, 3).write_bytes(
        rollouts(run, 3).read_bytes()[:-1])),
    ("naive started_at", lambda run: _replace(logtree(run, 3), b"T00:00:00+00:00",
                                              b"T00:00:00")),
    ("wrong path", lambda run: _replace(logtree(run, 4), b"_000004.html", b"_000005.html")),
    ("tag beyond HTML", lambda run: _replace(logtree(run, 5), b'"tag":"body"',
                                             b'"tag":"x-body"')),
    ("bad tag", lambda run: _replace(logtree(run, 5), b'"tag":"body"', b'"tag":"1body"')),
    ("unknown data type", lambda run: _replace(logtree(run, 6), b'"attrs":{}',
                                               b'"attrs":{},"data":{"type":"chart"}')),
    ("undeclared top-level key", lambda run: _replace(logtree(run, 7), b'{"title"',
                                                      b'{"extra":1,"title"')),
    ("duplicate title", lambda run: _replace(logtree(run, 7), b'{"title"', b'{"title":1,"title"')),
    ("truncated logtree", lambda run: logtree(run, 8).write_bytes(
        logtree(run, 8).read_bytes()[:-3])),
    ("empty logtree", lambda run: logtree(run, 9).write_bytes(b"")),
]


#: The (code, file) pairs each damage gives ("R3": the rollout file of iteration 3, "L3":
#: its logtree).
EXPECTED: dict[str, list[tuple[str, str]]] = {
    'clean': [],
    'keys reversed': [('RL202', 'R3')],
    'keys reversed in a later line': [('RL202', 'R4')],
    'keys spaced': [],
    'escaped key': [],
    'duplicate key': [('RL202', 'R6')],
    'integer as float': [],
    'wrong iteration': [('RL401', 'R7')],
    'wrong total': [('RL405', 'R8')],
    'pairs repeat': [('RL403', 'R8')],
    'undeclared key': [('RL201', 'R9')],
    'undeclared key, then keys reversed': [('RL201', 'R1'), ('RL202', 'R1')],
    'keys reversed, then undeclared key': [('RL201', 'R1'), ('RL202', 'R1')],
    'NaN token': [('RL104', 'R9'), ('RL201', 'R9')],
    'torn last line': [('RL113', 'R10')],
    'blank line': [('RL105', 'R10')],
    'carriage return': [],
    'cut line between whole ones': [('RL102', 'R2')],
    'invalid utf-8': [('RL101', 'R2')],
    'no final newline': [('RL113', 'R3')],
    'naive started_at': [('RL204', 'L3')],
    'wrong path': [('RL410', 'L4')],
    'tag beyond HTML': [],
    'bad tag': [('RL201', 'L5')],
    'unknown data type': [('RL203', 'L6')],
    'undeclared top-level key': [],
    'duplicate title': [],
    'truncated logtree': [('RL102', 'L8')],
    'empty logtree': [('RL111', 'L9')],
}


@pytest.mark.parametrize(("name", "damage"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damaged_small_file_run(tmp_path: Path, name: str, damage: Any) -> None:
    """Each damage gives the codes it should (at its file), and nothing else."""
    run = small_run(tmp_path / "run", 11)
    damage(run)
    assert sorted({(r[0], _short(r[2])) for r in rows(run)}) == EXPECTED[name]


def _short(file: str) -> str:
    """``R3`` for iteration 3's rollout file, ``L3`` for its logtree."""
    rp = layout.parse_path(file)
    return f"{'R' if rp.kind == 'rollout_summaries' else 'L'}{rp.iteration}"


@pytest.mark.parametrize("at", [0, 2, 3])
def test_split_small_files_same_findings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         at: int) -> None:
    """A rollout file split across two processes (as a very large one is) gets the same
    findings as when read in one piece."""
    run = small_run(tmp_path / "run", 2)
    _reorder(rollouts(run, 1), at)
    _edit(rollouts(run, 1), 3 - at, total_reward=9.5)
    whole = rows(run, jobs=1)
    monkeypatch.setattr(engine, "PARALLEL_MIN_BYTES", 1)
    assert rows(run, jobs=2) == whole
