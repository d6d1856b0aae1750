"""Large and damaged logtree documents: judged by the schema's checker in bounded memory (root
child by root child, ``rlio.validate.checks.logtree_pieces``) with the findings of the document
parsed whole; damage anywhere in a document is a finding, never a crash."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from factories import run_python

from rlio import layout
from rlio.demo import _episode, _log_group
from rlio.logtree import LogTree
from rlio.validate import engine, validate_run
from rlio.validate.checks import logtree_pieces
from rlio.validate.scan import Sink

DOC = "train_iteration_000000_logtree.json"
TWIN = "train_iteration_000000.html"
MARK = b'"attrs":{"class":"MARK"},'


def demo_doc(groups: int, *, nest: bool = False) -> dict[str, Any]:
    """A logtree as ``rlio demo`` writes one, with ``groups`` groups; ``nest``: all of them in
    one section marked ``MARK`` (so that section, larger than a chunk, is split too)."""
    rng = random.Random(groups)
    lt = LogTree("RL Iteration 0", started_at=datetime(2025, 1, 1, tzinfo=UTC))
    for g in range(groups):
        _log_group(lt, g, [_episode(rng, 0.6, 3) for _ in range(4)])
    doc = lt.to_json(path=TWIN)
    if nest:
        kids = doc["root"]["children"]
        doc["root"]["children"] = [*kids[:2], {"tag": "section", "attrs": {"class": "MARK"},
                                               "children": kids[2:]}]
    return doc


def run_with(tmp: Path, data: bytes) -> Path:
    """A run holding one logtree document (and an empty metrics log)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "metrics.jsonl").write_bytes(b"")
    (tmp / DOC).write_bytes(data)
    return tmp


def rows(run: Path) -> list[tuple[Any, ...]]:
    """Every field of every finding of the run."""
    return [(f.code, f.severity, f.file, f.line, f.pointer, f.message)
            for f in validate_run(run, jobs=1).findings]


def test_large_document_head_findings(tmp_path: Path) -> None:
    """A multi-megabyte document with a wrong path and a naive started_at: RL410 and RL204."""
    data = orjson.dumps(demo_doc(120, nest=True)).replace(TWIN.encode(), b"elsewhere.html", 1)
    data = data.replace(b'"2025-01-01T00:00:00+00:00"', b'"2025-01-01T00:00:00"', 1)
    assert len(data) > 1 << 20
    found = rows(run_with(tmp_path, data))
    assert {"RL204", "RL410"} <= {r[0] for r in found}
    assert not [r for r in found if r[0] == "RL201"]


#: (name, what to do to a document's bytes, whether it stays valid)
MUTATIONS: list[tuple[str, Any, bool]] = [
    ("bad utf-8 in a duplicate children", lambda d: d.replace(
        MARK, MARK + b'"children":["\xff"],'), False),
    ("overflowing number in a duplicate root", lambda d: (
        b'{"root":{"tag":"p","attrs":{},"children":[1e400]},' + d[1:]), False),
    ("duplicate title", lambda d: b'{"title":"x",' + d[1:], False),
    ("invalid utf-8 in a text", lambda d: d.replace(b"Group Rollout", b"Group \xffollout", 1),
     False),
    ("NaN token", lambda d: d.replace(b'"attrs":{}', b'"attrs":{},"data":NaN', 1), False),
    ("unknown data type", lambda d: d.replace(
        b'"data":{"type":"conversation"', b'"data":{"type":"chart","x":1},"z":{"type":"c"', 1),
     False),
    ("undeclared node key", lambda d: d.replace(b'"attrs":{}', b'"attrs":{},"id":"n"', 1), False),
    ("undeclared top-level key", lambda d: b'{"extra":1,' + d[1:], False),
    ("tag beyond HTML", lambda d: d.replace(b'"tag":"td"', b'"tag":"x-cell"', 1), True),
    ("tag with a trailing newline", lambda d: d.replace(b'"tag":"td"', b'"tag":"td\\n"', 1),
     True),
    ("tag not matching the pattern", lambda d: d.replace(b'"tag":"td"', b'"tag":"1td"', 1),
     False),
    ("tag of the split section", lambda d: d.replace(b'"tag":"section","attrs":{"class":"MARK"}',
                                                     b'"tag":"s_1","attrs":{"class":"MARK"}'),
     False),
    ("attribute not a string", lambda d: d.replace(b'{"class":"lt-h2"}', b'{"class":2}', 1),
     False),
    ("text part without text", lambda d: d.replace(b'{"type":"text","text":', b'{"type":"text",'
                                                   b'"thinking":', 1), False),
    ("part type given twice", lambda d: d.replace(b'{"type":"text",', b'{"type":"text","type":'
                                                  b'"bogus",', 1), False),
    ("path null", lambda d: d.replace(b'"path":"' + TWIN.encode() + b'"', b'"path":null'), True),
    ("started_at not a date", lambda d: d.replace(b'"2025-01-01T00:00:00+00:00"', b'"soon"'),
     False),
    ("write_id first", lambda d: b'{"write_id":"0123abcd",' + d[1:], True),
    ("truncated", lambda d: d[:-100], False),
    ("trailing data", lambda d: d + b"{}", False),
    ("deep nesting", lambda d: d.replace(MARK, MARK + b'"data":' + b'[' * 2000 + b']' * 2000
                                         + b",", 1), False),
]


@pytest.mark.parametrize(("name", "mutate", "valid"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutations(tmp_path: Path, name: str, mutate: Any, valid: bool) -> None:
    """A damaged or unusual document is judged, never a validator failure (RL107); a document
    that stays valid gets no error."""
    found = rows(run_with(tmp_path, mutate(orjson.dumps(demo_doc(3, nest=True)))))
    assert "RL107" not in {r[0] for r in found}
    if valid:
        assert not [r for r in found if r[1] == "error"], found


CHILD = """
import sys
from rlio.validate import validate_run
def kib(field):
    return int([x.split()[1] for x in open('/proc/self/status') if x[:len(field)] == field][0])
before = kib('VmRSS:')
report = validate_run(sys.argv[1], jobs=1)
assert not [f for f in report.findings if f.code.startswith('RL2')], report.findings
print(kib('VmHWM:') - before)
"""


def test_peak_memory_stays_near_the_file_size(tmp_path: Path) -> None:
    """Validating a 12 MB node-dense logtree grows the process by under three times the file's
    size (benchmarks/fleet.py's goal for a 50 MB one)."""
    doc = demo_doc(64)
    kids = doc["root"]["children"]
    kids.extend(kids[2 + k % 64] for k in range(512))
    data = orjson.dumps(doc)
    run = run_with(tmp_path / "run", data)
    grown = int(run_python(CHILD, str(run)).stdout.split()[-1]) * 1024
    assert grown < 3 * len(data), (grown, len(data))




def both_ways(monkeypatch: pytest.MonkeyPatch, run: Path) -> list[tuple[Any, ...]]:
    """The run's findings with its logtree judged in small pieces, after checking they equal
    the findings of the document parsed whole."""
    found = []
    for large in (0, 1 << 62):
        with monkeypatch.context() as m:
            m.setattr(engine, "LARGE_DOCUMENT", large)
            m.setattr(logtree_pieces, "PIECE", 2048)
            found.append(rows(run))
    assert found[0] == found[1]
    return found[0]


@pytest.mark.parametrize(("name", "mutate", "valid"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_pieces_give_the_whole_documents_findings(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path, name: str, mutate: Any,
                                                  valid: bool) -> None:
    """A document judged root child by root child gets exactly the findings of the document
    parsed whole, whatever its damage."""
    both_ways(monkeypatch, run_with(tmp_path, mutate(orjson.dumps(demo_doc(3, nest=False)))))


def test_pieces_judge_a_valid_document(tmp_path: Path) -> None:
    """A valid document with a naive time and a wrong path is judged in pieces (its head's
    findings added) without being parsed whole."""
    data = orjson.dumps(demo_doc(40)).replace(TWIN.encode(), b"elsewhere.html", 1)
    data = data.replace(b'"2025-01-01T00:00:00+00:00"', b'"2025-01-01T00:00:00"', 1)
    sink = Sink("f", 10)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(logtree_pieces, "PIECE", 4096)
        assert logtree_pieces.judge_in_pieces(data, sink, layout.parse_path(DOC))
        _, lo, hi = logtree_pieces._split(data) or (None, 0, 0)
        assert len(list(logtree_pieces._pieces(data, lo, hi))) > 5
    assert sorted(f.code for f in sink.items) == ["RL204", "RL410"]
    for bad in (data.replace(b'"tag":"td"', b'"tag":"1td"', 1), data[:-2] + b"]}",
                data.replace(b'"attrs":{}', b'"attrs":{},"data":{"type":"chart"}', 1)):
        assert not logtree_pieces.judge_in_pieces(bad, Sink("f", 10), layout.parse_path(DOC))
