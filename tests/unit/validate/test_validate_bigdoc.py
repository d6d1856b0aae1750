"""Large logtree documents: judged in bounded memory, with exactly the exact path's findings.

A document of ``FAST_DOCUMENT_MIN`` bytes or more is first given to the msgspec walk of
``rlio._schema.logtree_decoder``; whatever it accepts must get the same findings as the exact
path (``orjson.loads``, the compiled check, the document checks), and whatever it cannot judge
falls back to that path. Each case validates the same run both ways and compares every field of
every finding.
"""

from __future__ import annotations

import functools
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from factories import logtree_doc, run_python
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlio import layout
from rlio._schema import logtree_decoder
from rlio._schema.logtree_decoder import CHUNK, decode_head
from rlio.demo import _episode, _log_group
from rlio.logtree import LogTree
from rlio.schema import is_valid
from rlio.validate import engine, validate_run
from rlio.validate.checks.logtree import logtree_checks
from rlio.validate.scan import Sink

ROOT = Path(__file__).resolve().parents[3]
DOC = "train_iteration_000000_logtree.json"
TWIN = "train_iteration_000000.html"
MARK = b'"attrs":{"class":"MARK"},'
SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


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


@functools.cache
def big_bytes() -> bytes:
    """A demo logtree of about 2.5 chunks, its groups in one marked section."""
    data = orjson.dumps(demo_doc(120, nest=True))
    assert len(data) > 2 * CHUNK
    return data


#: The chunk size of the mutation cases: small, so a small document is split like a large one
#: (an invalid large document is slow to explain on the exact path).
SMALL_CHUNK = 4096


@functools.cache
def split_bytes() -> bytes:
    """A demo logtree of about a dozen small chunks, its groups in one marked section."""
    data = orjson.dumps(demo_doc(3, nest=True))
    assert len(data) > 10 * SMALL_CHUNK
    return data


def run_with(tmp: Path, data: bytes) -> Path:
    """A run holding one logtree document (and an empty metrics log)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "metrics.jsonl").write_bytes(b"")
    (tmp / DOC).write_bytes(data)
    return tmp


def both_ways(monkeypatch: pytest.MonkeyPatch, root: Path) -> list[tuple[Any, ...]]:
    """The run's findings with every document offered to the fast path, after checking they
    equal the findings of the exact path alone."""
    rows = []
    for least in (0, 1 << 62):
        monkeypatch.setattr(engine, "FAST_DOCUMENT_MIN", least)
        rows.append([(f.code, f.severity, f.file, f.line, f.pointer, f.message)
                     for f in validate_run(root, jobs=1).findings])
    assert rows[0] == rows[1]
    return rows[0]


def test_schema_digest_is_the_one_the_types_mirror() -> None:
    """The shipped logtree schema is the version the msgspec types were written from (a schema
    change disables the fast path until the types follow it)."""
    assert logtree_decoder.schema_digest() == logtree_decoder.SCHEMA_DIGEST
    assert logtree_decoder.enabled()


def test_corpus_findings_identical_through_the_fast_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conformance case with a logtree gets the same findings when its documents are
    judged by the fast path first."""
    cases = sorted({p.parents[1] if p.parent.name.startswith("iteration_") else p.parent
                    for p in (ROOT / "conformance" / "cases").glob("*/run/**/*logtree.json")})
    assert len(cases) > 20
    accepted = 0
    for run in cases:
        both_ways(monkeypatch, run)
        accepted += sum(decode_head(p.read_bytes()) is not None
                        for p in run.rglob("*logtree.json"))
    assert accepted > 50  # the corpus's valid documents are judged by the fast path


@pytest.mark.parametrize("doc", [
    pytest.param(demo_doc(3), id="demo"),
    pytest.param(logtree_doc("t", TWIN, "2025-01-01T00:00:00+00:00"), id="cookbook-shaped"),
    pytest.param({**logtree_doc("t", None, "2025-01-01 10:00"), "write_id": "abc"}, id="naive"),
])
def test_writers_documents_are_accepted(doc: dict[str, Any]) -> None:
    """Documents as rlio and the cookbook write them are judged by the fast path, with their
    top-level values."""
    head = decode_head(orjson.dumps(doc))
    assert head is not None
    assert (head.title, head.started_at, head.path) == (doc["title"], doc["started_at"],
                                                        doc["path"])


def test_split_document_same_findings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A document whose root and one section exceed a chunk is split and accepted, with the
    exact path's findings (a wrong path: RL410; naive started_at: RL204)."""
    data = big_bytes().replace(TWIN.encode(), b"elsewhere.html", 1)
    data = data.replace(b'"2025-01-01T00:00:00+00:00"', b'"2025-01-01T00:00:00"', 1)
    assert decode_head(data) is not None
    found = both_ways(monkeypatch, run_with(tmp_path, data))
    assert {"RL204", "RL410"} <= {r[0] for r in found}


#: (name, what to do to a split document's bytes, whether the fast path still judges it)
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


@pytest.mark.parametrize(("name", "mutate", "judged"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutations_same_findings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str,
                                 mutate: Any, judged: bool) -> None:
    """A damaged or unusual split document gets the exact path's findings; the fast path judges
    it only when it can do so exactly."""
    monkeypatch.setattr(logtree_decoder, "CHUNK", SMALL_CHUNK)
    data = mutate(split_bytes())
    assert (decode_head(data) is not None) is judged
    both_ways(monkeypatch, run_with(tmp_path, data))


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
    """Validating a 12 MB node-dense logtree grows the process by under twice the file's size
    (parsed into dicts it would take over ten times)."""
    doc = demo_doc(64)
    kids = doc["root"]["children"]
    kids.extend(kids[2 + k % 64] for k in range(512))
    data = orjson.dumps(doc)
    run = run_with(tmp_path / "run", data)
    grown = int(run_python(CHILD, str(run)).stdout.split()[-1]) * 1024
    assert grown < 2 * len(data), (grown, len(data))


SPECIAL = [b'"', b"\\", b"\xff", b"{", b"}", b"[", b"]", b",", b":", b"1", b"e", b" ", b"\n",
           b"\x01", b"-", b"\\u00e9", b'"children":[1e400],', b'"tag":"p",']


@SETTINGS
@given(data=st.data())
def test_fuzzed_documents_accepted_only_when_valid(data: st.DataObject) -> None:
    """Byte-level mutations of a split document: whatever the fast path accepts, orjson parses
    to a schema-valid logtree with known data types only and the same top-level values."""
    doc = bytearray(small_split_bytes())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(doc) - 1))
        cut = data.draw(st.integers(0, 2))
        doc[at:at + cut] = data.draw(st.sampled_from(SPECIAL))
    raw = bytes(doc)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(logtree_decoder, "CHUNK", 512)
        head = decode_head(raw)
    if head is None:
        return
    value = orjson.loads(raw)
    assert is_valid("logtree", value)
    assert (head.title, head.started_at, head.path) == (value["title"], value["started_at"],
                                                        value.get("path"))
    sink = Sink("f", 10)
    logtree_checks(value, sink, layout.parse_path(DOC))
    assert not [f for f in sink.items if f.code == "RL203"]


@functools.cache
def small_split_bytes() -> bytes:
    """One demo group (about 20 KB): split into many frames with a 512-byte chunk."""
    return orjson.dumps(demo_doc(1, nest=True))
