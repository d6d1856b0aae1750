"""The disk cache of compiled schema predicates: reused when whole and current, rebuilt when
corrupt, truncated or stale, skipped when the folder cannot be written, same verdicts always."""

from __future__ import annotations

import copy
import decimal
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import factories
import pytest

from rlio import layout
from rlio._schema import compile_cache
from rlio._schema.bound import CACHED_MISSES
from rlio._schema.compiler import Generated, compile_schema, generate
from rlio._schema.loader import SCHEMA_NAMES, load_schema
from rlio.schema import error_schema


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RLIO_CACHE_DIR", str(folder))
    return folder


class Counting:
    """``generate``, counting its calls (a call means: not served from the cache)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, schema: dict[str, Any]) -> Generated:
        self.calls += 1
        return generate(schema)


def _entries(folder: Path) -> list[Path]:
    return sorted((folder / "schemas").glob("*.bin"))


def _cached(schema: dict[str, Any]) -> tuple[Callable[[Any], bool], Counting]:
    """A predicate of ``schema`` loaded from a cache entry written by an earlier compile."""
    compile_cache.compiled(schema, generate)
    counting = Counting()
    check = compile_cache.compiled(schema, counting)
    assert counting.calls == 0
    return check, counting


def _deep(n: int) -> dict[str, Any]:
    node: dict[str, Any] = {"tag": "div", "attrs": {}, "children": []}
    top = node
    for _ in range(n):
        child: dict[str, Any] = {"tag": "div", "attrs": {}, "children": []}
        node["children"].append(child)
        node = child
    return top


def _instances(name: str) -> list[Any]:
    """Valid records of schema ``name`` and their mutations (mostly invalid ones)."""
    doc = factories.logtree_doc("t", layout.iteration_path("flat", 0, "html"),
                                "2025-01-01T00:00:00+00:00")
    valid: dict[str, list[Any]] = {
        "checkpoint-line": [factories.checkpoint_line("000001", batch=1)],
        "config": [{"lr": 1e-4, "nested": {"a": [1, 2]}}],
        "logtree": [doc, {**doc, "root": _deep(3000)}],
        "metrics-line": [factories.metrics_line(i, **{"env/r": 0.5, "x": None}) for i in range(3)],
        "rollout-summary-line": [factories.trajectory(0, g) for g in range(3)],
        "timing-spans-line": [{"step": 0, "name": "train", "start": 0.0, "end": 1.0}],
        "trace-event-line": [{"name": "x", "ph": "X", "ts": 0, "dur": 1, "pid": 0, "tid": 0}],
    }
    out: list[Any] = [None, [], "x", 1, {}]
    for rec in valid[name]:
        out.append(rec)
        if isinstance(rec, dict):
            for key in list(rec):
                dropped = {k: v for k, v in rec.items() if k != key}
                retyped = {**rec, key: "text"}
                negative = {**rec, key: -1}
                inexact = {**rec, key: decimal.Decimal("1.5")}  # not a JSON type: interpreted
                out += [dropped, retyped, negative, inexact, {**rec, key: (1, 2)}]
            out.append({**rec, "undeclared/key": 1})
            if name != "logtree":
                out.append(copy.deepcopy(rec))
    return out


@pytest.mark.parametrize("name", SCHEMA_NAMES)
@pytest.mark.parametrize("level", ["error", "full"])
def test_cached_predicate_gives_the_same_verdicts(name: str, level: str) -> None:
    """A predicate loaded from the cache judges every instance as a fresh compile does."""
    schema = error_schema(name) if level == "error" else load_schema(name)
    fresh = compile_schema(schema)
    cached, _ = _cached(schema)
    for instance in _instances(name):
        assert cached(instance) is fresh(instance), (name, instance)


def test_second_compile_is_served_from_one_entry(_cache: Path) -> None:
    """The first compile writes one entry; the next one reads it instead of generating code."""
    schema = load_schema("rollout-summary-line")
    counting = Counting()
    compile_cache.compiled(schema, counting)
    assert counting.calls == 1
    assert len(_entries(_cache)) == 1
    compile_cache.compiled(schema, counting)
    assert counting.calls == 1
    assert not list((_cache / "schemas").glob(".*.tmp"))  # written atomically, nothing left


def test_cached_patternproperties_check_compiles_for_real_after_many_records() -> None:
    """metrics lines are checked key by key from the cache, and once past CACHED_MISSES the
    schema is compiled for real (one generate), with the same verdicts throughout."""
    schema = error_schema("metrics-line")
    fresh = compile_schema(schema)
    cached, counting = _cached(schema)
    for i in range(CACHED_MISSES * 3):
        good = factories.metrics_line(i, **{"env/all/reward": 0.5})
        bad = {**good, "step": "seven"}
        assert cached(good) is fresh(good) is True
        assert cached(bad) is fresh(bad) is False
    assert counting.calls == 1


def _rebuilt(folder: Path, damage: Callable[[bytes], bytes]) -> None:
    schema = load_schema("logtree")
    compile_cache.compiled(schema, generate)
    (entry,) = _entries(folder)
    entry.write_bytes(damage(entry.read_bytes()))
    counting = Counting()
    check = compile_cache.compiled(schema, counting)
    assert counting.calls == 1  # not trusted: compiled afresh ...
    doc = factories.logtree_doc("t", None, "2025-01-01T00:00:00+00:00")
    assert check(doc) is True
    assert check({"title": 1}) is False
    compile_cache.compiled(schema, counting)
    assert counting.calls == 1  # ... and the entry written again, whole


def test_corrupt_entry_is_rebuilt(_cache: Path) -> None:
    """An entry with a flipped byte fails its checksum and is compiled and written again."""

    def flip(data: bytes) -> bytes:
        i = len(data) // 2
        return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]

    _rebuilt(_cache, flip)


def test_truncated_entry_is_rebuilt(_cache: Path) -> None:
    """An entry cut short (a crash mid-write by another tool, a full disk) is rebuilt."""
    _rebuilt(_cache, lambda data: data[: len(data) // 3])


def test_garbage_entry_is_rebuilt(_cache: Path) -> None:
    """An entry that is not one at all (or empty) is rebuilt, never executed."""
    _rebuilt(_cache, lambda data: b"")
    _rebuilt(_cache, lambda data: os.urandom(len(data)))


def test_entry_of_another_schema_is_not_trusted(_cache: Path) -> None:
    """A whole entry built from a different schema, found under this schema's name (a stale
    entry, a checksum collision), is rebuilt: the stored schema is compared byte for byte."""
    schema = load_schema("config")
    compile_cache.compiled(schema, generate)
    (mine,) = _entries(_cache)
    compile_cache.compiled(load_schema("checkpoint-line"), generate)
    (other,) = [p for p in _entries(_cache) if p != mine]
    mine.write_bytes(other.read_bytes())
    counting = Counting()
    check = compile_cache.compiled(schema, counting)
    assert counting.calls == 1
    assert check({"lr": 1}) is True  # a config check, not the checkpoint line's


def test_unwritable_cache_folder_just_works(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With a cache folder that cannot be created (under a regular file), predicates compile as
    before, nothing raises, nothing is written."""
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    monkeypatch.setenv("RLIO_CACHE_DIR", str(blocker / "cache"))
    schema = load_schema("rollout-summary-line")
    counting = Counting()
    for _ in range(2):
        check = compile_cache.compiled(schema, counting)
        assert check(factories.trajectory(0)) is True
    assert counting.calls == 2
    assert blocker.read_bytes() == b""


def test_validate_command_runs_with_an_unwritable_cache(tmp_path: Path) -> None:
    """``rlio validate`` prints the same report with an unusable cache folder, a cold cache and
    a warm one."""
    run = factories.cookbook_run(tmp_path / "run")
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    outputs = []
    for folder in (blocker / "cache", tmp_path / "cache", tmp_path / "cache"):
        env = {**os.environ, "RLIO_CACHE_DIR": str(folder)}
        proc = subprocess.run([sys.executable, "-m", "rlio", "validate", str(run)], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        outputs.append((proc.returncode, proc.stdout, proc.stderr))
    assert outputs[0][0] in (0, 1) and outputs[0][1]
    assert outputs[0] == outputs[1] == outputs[2]
    assert _entries(tmp_path / "cache")  # the usable folder got its entries


def test_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """RLIO_CACHE_DIR wins, then $XDG_CACHE_HOME/rlio, then ~/.cache/rlio."""
    monkeypatch.setenv("RLIO_CACHE_DIR", "/x/rlio-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", "/y")
    monkeypatch.setenv("HOME", "/home/someone")
    assert compile_cache.cache_dir() == "/x/rlio-cache"
    monkeypatch.delenv("RLIO_CACHE_DIR")
    assert compile_cache.cache_dir() == "/y/rlio"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compile_cache.cache_dir() == "/home/someone/.cache/rlio"
