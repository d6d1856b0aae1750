"""Runs of many small files: the typed paths a warm process takes report exactly the exact path.

A process that has judged enough lines of a schema decodes even a 4-line rollout file with the
msgspec decoder from its first line (the key order of its first 100 records read from their raw
bytes, ``rlio._schema.key_order.key_order_for``), and a run past its first documents judges a small
logtree by one decode of the whole document (``rlio._schema.logtree_decoder.decode_small``). Each
case here validates the same run with every typed path forced on and with all of them off and
compares every field of every finding; the decoders are checked against orjson on crafted and
fuzzed bytes.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from factories import logtree_doc, trajectory, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_validate_bigdoc import MUTATIONS, demo_doc

import rlio.validate.scan as scan_mod
from rlio import layout
from rlio._schema import logtree_decoder
from rlio._schema.decoders import decoder_for
from rlio._schema.key_order import batch_key_order_for, key_order_for
from rlio._schema.logtree_decoder import decode_head, decode_small
from rlio.errors import NotARunError, RunNotFoundError
from rlio.schema import is_valid
from rlio.validate import engine, validate_run
from rlio.validate.checks.logtree import logtree_checks
from rlio.validate.scan import Sink

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
SCHEMA = "rollout-summary-line"
Rows = list[tuple[Any, ...]]


def rows(run: Path, **kw: Any) -> Rows:
    """Every field of every finding of the run."""
    return [(f.code, f.severity, f.file, f.line, f.pointer, f.message)
            for f in validate_run(run, **kw).findings]


def both_ways(monkeypatch: pytest.MonkeyPatch, run: Path, **kw: Any) -> Rows:
    """The run's findings with every typed path on from the first line and document, after
    checking they equal the findings with every typed path off."""
    out = []
    for on in (True, False):
        with monkeypatch.context() as m:
            m.setattr(scan_mod, "_judged", {})
            m.setattr(scan_mod, "_EXACT_FIRST", 0 if on else sys.maxsize)
            m.setattr(scan_mod, "_WARM_LINES", 0 if on else sys.maxsize)
            m.setattr(engine, "SMALL_FAST_AFTER", 0 if on else sys.maxsize)
            out.append(rows(run, **kw))
    assert out[0] == out[1]
    return out[0]


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


@pytest.mark.parametrize(("name", "damage"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damaged_small_file_runs_same_findings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                               name: str, damage: Any) -> None:
    """Damage in a run of small files gets the same findings whether its files are judged by
    the typed paths or on the exact path."""
    run = small_run(tmp_path / "run", 11)
    damage(run)
    found = both_ways(monkeypatch, run)
    if name == "clean":
        assert found == []


@pytest.mark.parametrize("at", [0, 2, 3])
def test_split_small_files_same_findings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         at: int) -> None:
    """A rollout file split across two processes (as a very large one is) gets the same
    findings on the typed paths and on the exact path, and as when read in one piece."""
    run = small_run(tmp_path / "run", 2)
    _reorder(rollouts(run, 1), at)
    _edit(rollouts(run, 1), 3 - at, total_reward=9.5)
    whole = both_ways(monkeypatch, run, jobs=1)
    monkeypatch.setattr(engine, "PARALLEL_MIN_BYTES", 1)
    assert both_ways(monkeypatch, run, jobs=2) == whole


def test_corpus_findings_identical_through_the_small_file_paths(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conformance case gets the same findings with the typed paths forced on."""
    cases = sorted((ROOT / "conformance" / "cases").glob("*/run"))
    assert len(cases) > 20
    compared = 0
    for run in cases:
        try:
            both_ways(monkeypatch, run)
        except (NotARunError, RunNotFoundError):  # a case that is no run: no findings to compare
            continue
        compared += 1
    assert compared > 20


@functools.cache
def small_doc() -> bytes:
    """One demo group (about 20 KB), below a chunk: judged by ``decode_small``."""
    data = orjson.dumps(demo_doc(1, nest=True))
    assert len(data) < logtree_decoder.CHUNK
    return data


def assert_sound(raw: bytes) -> None:
    """Whatever ``decode_small`` accepts, orjson parses to a schema-valid logtree with known
    data types only and the same top-level values."""
    head = decode_small(raw)
    if head is None:
        return
    value = orjson.loads(raw)
    assert is_valid("logtree", value)
    assert (head.title, head.started_at, head.path) == (value["title"], value["started_at"],
                                                        value.get("path"))
    sink = Sink("f", 10)
    logtree_checks(value, sink, layout.parse_path("train_iteration_000000_logtree.json"))
    assert not [f for f in sink.items if f.code == "RL203"]


@pytest.mark.parametrize(("name", "mutate", "judged"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_small_decode_judges_what_the_walk_judges(name: str, mutate: Any, judged: bool) -> None:
    """On every damaged or unusual document of the large-document cases, the one-decode path
    accepts what the frame walk accepts (and a duplicate key whose every value is valid, which
    the walk leaves to the exact path), and only valid documents."""
    raw = mutate(small_doc())
    assert (decode_head(raw) is not None) is judged
    assert (decode_small(raw) is not None) is (judged or name == "duplicate title")
    assert_sound(raw)


def test_small_decode_refuses_nesting_past_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """A raised recursion limit (msgspec's nesting limit) never lets a document nested deeper
    than orjson parses through the typed paths."""
    inner = b'"x"'
    for _ in range(600):
        inner = b'{"tag":"p","attrs":{},"children":[' + inner + b"]}"
    raw = b'{"title":"t","started_at":"2025-01-01T00:00:00Z","root":' + inner + b"}"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(raw)
    monkeypatch.setattr(sys, "getrecursionlimit", lambda: 100_000)
    assert decode_small(raw) is None
    assert decode_head(raw) is None
    assert decode_small(small_doc()) is None  # nothing is judged under such a limit


SPECIAL = [b'"', b"\\", b"\xff", b"{", b"}", b"[", b"]", b",", b":", b"1", b"e", b" ", b"\n",
           b"\x01", b"-", b"\\u00e9", b'"children":[1e400],', b'"tag":"p",', b'"title":"x",',
           b'"data":{"type":"chart"},', b'"path":null,']


@SETTINGS
@given(data=st.data())
def test_fuzzed_small_documents_accepted_only_when_valid(data: st.DataObject) -> None:
    """Byte-level mutations of a small document: whatever the one-decode path accepts is a
    valid logtree with the same top-level values as orjson's parse."""
    doc = bytearray(small_doc())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(doc) - 1))
        cut = data.draw(st.integers(0, 2))
        doc[at:at + cut] = data.draw(st.sampled_from(SPECIAL))
    assert_sound(bytes(doc))


def key_order(line: bytes) -> tuple[str, ...] | None:
    """The key order ``key_order_for`` reads from a line the decoder accepts (None: refused)."""
    decode, keys = decoder_for(SCHEMA), key_order_for(SCHEMA)
    assert decode is not None and keys is not None
    try:
        rec = decode(line)
    except Exception:
        return None
    return keys(rec, line)


LINE = orjson.dumps(trajectory(1, 0, 0))


@pytest.mark.parametrize("line", [
    pytest.param(LINE + b"\n", id="as written"),
    pytest.param(LINE, id="no newline"),
    pytest.param(b" " + LINE + b" \n", id="spaces"),
    pytest.param(orjson.dumps(dict(reversed(list(trajectory(1).items())))) + b"\n",
                 id="reversed"),
    pytest.param(LINE.replace(b'"split"', b'"spl\\u0069t"'), id="escaped key"),
    pytest.param(LINE.replace(b'{"schema_version":1,', b'{"schema_version":1,"tags":[],'),
                 id="duplicate key earlier"),
    pytest.param(LINE[:-1] + b',"schema_version":1}', id="duplicate key later"),
    pytest.param(orjson.dumps({**trajectory(1), "trajectory_metrics": {"split": 1}}),
                 id="nested key of the same name"),
    pytest.param(LINE.replace(b'"reward":0.0', b'"reward":0.00'), id="other number spelling"),
])
def test_key_order_from_bytes_is_orjsons(line: bytes) -> None:
    """The key order read from a typed record's raw line is what orjson's dict shows."""
    assert key_order(line) == tuple(orjson.loads(line))


KEYS = list(trajectory(1))


@SETTINGS
@given(order=st.permutations(KEYS), dup=st.sampled_from([None, *KEYS]),
       space=st.sampled_from([b"", b" ", b"\n", b"\t"]))
def test_key_order_of_shuffled_records(order: list[str], dup: str | None, space: bytes) -> None:
    """Any key order, a duplicated key and whitespace: the order read from bytes is orjson's
    whenever the decoder accepts the line."""
    rec = trajectory(1)
    parts = [orjson.dumps(k) + b":" + space + orjson.dumps(rec[k]) for k in order]
    if dup is not None:
        parts.insert(len(parts) // 2, orjson.dumps(dup) + b":" + orjson.dumps(rec[dup]))
    line = b"{" + (b"," + space).join(parts) + b"}\n"
    found = key_order(line)
    assert found is not None
    assert found == tuple(orjson.loads(line))


KEY_LINES = [LINE + b"\n", LINE, b" " + LINE + b" \n", LINE + b"\r\n",
             orjson.dumps(dict(reversed(list(trajectory(1).items())))) + b"\n",
             LINE.replace(b'"split"', b'"spl\\u0069t"') + b"\n",
             LINE[:-1] + b',"schema_version":1}\n',
             LINE.replace(b'"reward":0.0', b'"reward":0.00') + b"\n",
             orjson.dumps(trajectory(2, 1, 3)) + b"\n"]


@SETTINGS
@given(picks=st.lists(st.sampled_from(KEY_LINES), min_size=1, max_size=6))
def test_batch_key_order_is_every_lines(picks: list[bytes]) -> None:
    """A batch's key order read in one encode, when it is read, is each line's own order; a
    batch of lines as written is always read so."""
    decode, batch = decoder_for(SCHEMA), batch_key_order_for(SCHEMA)
    assert decode is not None and batch is not None
    recs = [decode(line) for line in picks]
    got = batch(recs, picks)
    if got is not None:
        assert all(key_order(line) == got for line in picks)
    if all(line == LINE + b"\n" for line in picks):
        assert got == tuple(orjson.loads(LINE))
