"""The validator's fast decoder path reports exactly what the exact path reports.

Rollout-summary lines are first given to the msgspec decoder (``rlio._schema.decoders``); a line it
refuses takes the exact path (orjson, the compiled check, jsonschema's explanation). The findings,
their lines, pointers and messages must not depend on which path judged a line: each run here is
validated twice, once with the decoder disabled, and the reports compared.
"""

from __future__ import annotations

import copy
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import NAN, cookbook_run, jsonl, trajectory, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlio.validate.scan as stream_mod
from rlio import layout
from rlio.validate import validate_run
from rlio.validate.checks.rollouts import RolloutChecks
from rlio.validate.scan import Sink, scan_jsonl

PATH = layout.iteration_path("flat", 1, "rollout_summaries")
Rows = list[tuple[str, str, str, int | None, str, str]]


def rows(run: Path, **kw: Any) -> Rows:
    """Every finding of the run with its message."""
    return [(f.code, str(f.severity), f.file, f.line, f.pointer, f.message)
            for f in validate_run(run, **kw).findings]


def both_paths(run: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[Rows, Rows]:
    """The report with the fast decoder, then with it disabled (exact path only)."""
    fast = rows(run, **kw)
    with monkeypatch.context() as m:
        m.setattr(stream_mod, "decoder_for", lambda name: None)
        exact = rows(run, **kw)
    return fast, exact


def step(at: int, **values: Any) -> Callable[[dict[str, Any]], None]:
    """An edit of step ``at`` (a no-op when the record has no steps)."""

    def edit(rec: dict[str, Any]) -> None:
        if rec.get("steps"):
            rec["steps"][at].update(values)

    return edit


EDITS: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("iteration 1.0", lambda r: r.update(iteration=1.0)),
    ("wrong iteration", lambda r: r.update(iteration=2)),
    ("eval split", lambda r: r.update(split="eval/x")),
    ("bad split", lambda r: r.update(split="Train")),
    ("group 1.0", lambda r: r.update(group_idx=float(r["group_idx"]))),
    ("huge group", lambda r: r.update(group_idx=2**64)),
    ("repeat pair", lambda r: r.update(group_idx=0, traj_idx=0)),
    ("bad total", lambda r: r.update(total_reward=7)),
    ("int total", lambda r: r.update(total_reward=3)),
    ("null total", lambda r: r.update(total_reward=None)),
    ("NaN total", lambda r: r.update(total_reward=NAN)),
    ("NaN metric", lambda r: r["trajectory_metrics"].update(kl=NAN)),
    ("step_idx 1.0", step(0, step_idx=0.0)),
    ("step_idx off", step(-1, step_idx=9)),
    ("early done", step(0, episode_done=True)),
    ("null reward", step(0, reward=None)),
    ("int reward", step(0, reward=1)),
    ("trace", step(0, trace={"a": [1, 2]}, stop_reason="stop")),
    ("undeclared step key", step(0, ob_text="hi")),
    ("undeclared top key", lambda r: r.update(extra=1)),
    ("no steps", lambda r: r.update(steps=[], total_reward=r["final_reward"])),
    ("missing key", lambda r: r.pop("tags", None)),
    ("key order", lambda r: r.update({"tags": r.pop("tags", [])})),
    ("schema_version true", lambda r: r.update(schema_version=True)),
]


@st.composite
def rollout_file(draw: st.DrawFn) -> bytes:
    """A summaries file of valid trajectories with edits, raw oddities and a maybe-cut tail."""
    n = draw(st.integers(1, 24))
    recs = [trajectory(1, g, t, n_steps=draw(st.integers(0, 3)), final=draw(
        st.sampled_from([0.0, -0.5, 1]))) for g in range(n // 3 + 1) for t in range(3)][:n]
    out = []
    for rec in recs:
        rec = copy.deepcopy(rec)
        for _ in range(draw(st.integers(0, 2))):
            draw(st.sampled_from(EDITS))[1](rec)
        text = json.dumps(rec, separators=draw(st.sampled_from([(", ", ": "), (",", ":")])))
        raw = draw(st.sampled_from(["", "", "", "blank", "dup", "garbage", "crlf"]))
        if raw == "blank":
            out.append("\n")
        elif raw == "dup":
            text = text[:-1] + ', "iteration": 1}'
        elif raw == "garbage":
            text += " x"
        out.append(text + ("\r\n" if raw == "crlf" else "\n"))
    data = "".join(out).encode()
    if draw(st.booleans()):
        data = data[: len(data) - draw(st.integers(1, 30))]
    return data


#: More examples for a long session: RLIO_FASTPATH_EXAMPLES=2000 pytest this file.
EXAMPLES = int(os.environ.get("RLIO_FASTPATH_EXAMPLES", "40"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=rollout_file(), cap=st.sampled_from([2, 100]))
def test_fast_and_exact_paths_report_the_same(tmp_path_factory: pytest.TempPathFactory,
                                              data: bytes, cap: int) -> None:
    """Random rollout files with every kind of defect: identical reports on both paths."""
    run = cookbook_run(tmp_path_factory.mktemp("run"), iterations=2)
    write(run, PATH, data)
    with pytest.MonkeyPatch.context() as mp:
        fast, exact = both_paths(run, mp, max_findings_per_code=cap)
    assert fast == exact


def test_cookbook_quirks_same_on_both_paths(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The cookbook run (NaN tokens, extra timing-span keys, trace events) reports the same."""
    run = cookbook_run(tmp_path / "run")
    fast, exact = both_paths(run, monkeypatch)
    assert fast == exact


def test_parallel_split_same_on_both_paths(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A file split across a helper process reports the same with and without the decoder."""
    import rlio.validate.engine as validate_mod

    run = cookbook_run(tmp_path / "run")
    recs = [trajectory(1, g, t) for g in range(30) for t in range(4)]
    recs[5]["iteration"] = 1.0
    recs[70]["steps"][1]["step_idx"] = 5
    recs[90]["group_idx"], recs[90]["traj_idx"] = 0, 1
    write(run, PATH, jsonl(recs))
    monkeypatch.setattr(validate_mod, "PARALLEL_MIN_BYTES", 1)
    fast, exact = both_paths(run, monkeypatch, jobs=2)
    assert fast == exact
    assert {r[0] for r in fast if r[2] == PATH} == {"RL403", "RL404"}


def scan(data: bytes, **kw: Any) -> tuple[Sink, list[int], list[int]]:
    """Scan a rollout file; return the sink and the lines each hook saw."""
    path_lines: tuple[list[int], list[int]] = ([], [])
    sink = Sink("f", 100)
    checks = RolloutChecks(sink, iteration=1, label=None)

    def decoded(rec: Any, line: int, raw: bytes) -> None:
        path_lines[0].append(line)
        checks.check(rec, line, raw)

    def record(rec: Any, line: int, ok: bool) -> None:
        path_lines[1].append(line)
        checks.hook(rec, line, ok)

    scan_jsonl(io.BytesIO(data), sink, schema="rollout-summary-line", append_only=False,
               on_record=record, on_decoded=decoded, **kw)
    return sink, path_lines[0], path_lines[1]


def test_plain_records_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past a file's first lines, and once a process judged enough lines of a schema on the
    exact path (so a small run never builds the decoder), records as writers encode them are
    all judged by the decoder, in later small files from their first line."""
    monkeypatch.setattr(stream_mod, "_judged", {})
    monkeypatch.setattr(stream_mod, "_WARM_LINES", 64)
    head = stream_mod._EXACT_FIRST
    small = jsonl([trajectory(1, g, 0) for g in range(4)]).encode()
    for _ in range(0, 64, 4):  # small files: each judged on the exact path, counted
        sink, fast, exact = scan(small)
        assert (fast, exact, sink.items) == ([], [1, 2, 3, 4], [])
    sink, fast, exact = scan(small)
    assert (fast, exact, sink.items) == ([1, 2, 3, 4], [], [])
    monkeypatch.setattr(stream_mod, "_judged", {})
    recs = [trajectory(1, g, t, n_steps=1 + g % 3) for g in range(40) for t in range(2)]
    sink, fast, exact = scan(jsonl(recs).encode())
    assert exact == list(range(1, head + 1))
    assert (fast, sink.items) == (list(range(head + 1, 81)), [])


def test_checks_without_typed_hook_use_exact_path() -> None:
    """A caller with only dict hooks (checkpoints, metrics) never gets typed records."""
    seen: list[Any] = []
    data = jsonl([trajectory(1, 0, 0)]).encode()
    scan_jsonl(io.BytesIO(data), Sink("f", 10), schema="rollout-summary-line",
               append_only=False, on_record=lambda rec, line, ok: seen.append(rec))
    assert isinstance(seen[0], dict)


def test_decoder_pauses_when_most_lines_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose records all carry an undeclared step key stops trying the decoder after a
    while, tries it again later, and still judges every line."""
    monkeypatch.setattr(stream_mod, "_MISSES_PAUSE", 100)
    monkeypatch.setattr(stream_mod, "_EXACT_FIRST", 0)  # the decoder from the first line on
    recs = [trajectory(1, g, 0) for g in range(400)]
    for r in recs[:300]:
        r["steps"][0]["ob_text"] = "passed through"
    tries: list[int] = []
    real = stream_mod.decoder_for("rollout-summary-line")
    assert real is not None

    def counting(line: bytes) -> Any:
        tries.append(1)
        return real(line)

    monkeypatch.setattr(stream_mod, "decoder_for", lambda name: counting)
    sink, fast, exact = scan(jsonl(recs).encode())
    assert sink.items == []
    assert len(fast) + len(exact) == 400
    assert len(tries) < 300  # paused for most of the first 300 lines
    assert fast[-1] == 400 and len(fast) >= 50  # resumed: the last 100 records took it
