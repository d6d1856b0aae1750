"""Run directories written by hand the way the Tinker cookbook writes them (no rlio involved).

Shared by the validator's tests. Each builder reproduces a cookbook quirk SPEC.md lists: Python
``json.dumps`` defaults (``NaN``/``Infinity`` tokens, ASCII escapes, ", " separators), indent-2
config and logtree JSON without a final newline, naive ``started_at`` timestamps, 0-byte summary
files, HTML-only iterations, rolling checkpoints with nested extra keys, an eval-only metrics line
at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlio import layout
from rlio.validate import validate_run

NAN = float("nan")


def dumps(obj: Any) -> str:
    """The cookbook's serializer: ``json.dumps`` defaults."""
    return json.dumps(obj)


def write(root: Path, rel: str, data: bytes | str) -> Path:
    """Write ``data`` at run-relative ``rel`` (parents created)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def jsonl(records: list[Any]) -> str:
    """Cookbook JSONL: one ``json.dumps`` line per record."""
    return "".join(dumps(r) + "\n" for r in records)


def trajectory(iteration: int, group: int, traj: int, *, split: str = "train",
               n_steps: int = 2, final: float = 0.0) -> dict[str, Any]:
    """A valid rollout summary (SPEC §6) whose total_reward matches its steps."""
    steps = []
    for i in range(n_steps):
        steps.append({"step_idx": i, "ob_len": 100 + i, "ac_len": 20, "reward": 0.25 * (i + 1),
                      "episode_done": i == n_steps - 1, "metrics": {"format": 1.0},
                      "logs": {"answer": "42"}})
    total = sum(s["reward"] for s in steps) + final
    return {"schema_version": 1, "split": split, "iteration": iteration, "group_idx": group,
            "traj_idx": traj, "tags": ["math"], "sampling_client_step": iteration,
            "total_reward": total, "final_reward": final,
            "trajectory_metrics": {"num_turns": n_steps}, "steps": steps, "final_ob_len": 0}


def logtree_doc(title: str, path: str | None, started_at: str) -> dict[str, Any]:
    """A small logtree document with a conversation node, as the cookbook serializes it."""
    conversation = {"type": "conversation", "messages": [
        {"role": "user", "content": "What is 6*7? \u00e9"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                          {"type": "text", "text": "42"}]},
    ]}
    return {"title": title, "started_at": started_at, "path": path, "root": {
        "tag": "body", "attrs": {"class": "lt-root"}, "children": [
            {"tag": "h1", "attrs": {"class": "lt-title"}, "children": [title]},
            {"tag": "section", "attrs": {"class": "lt-section"}, "children": [
                {"tag": "h2", "attrs": {}, "children": ["Group Rollout"]},
                {"tag": "div", "attrs": {}, "children": [], "data": conversation},
            ]},
        ]}}


HTML = ('<!doctype html>\n<html lang="en">\n<head>\n<title>t</title>\n</head>\n'
        '<body class="lt-root">\n</body>\n</html>\n')


def cookbook_run(root: Path, *, layout_name: layout.Layout = "flat", iterations: int = 3,
                 html_only_last: bool = True) -> Path:
    """A run as the cookbook writes it, with every documented quirk. Validates with no error."""
    root.mkdir(parents=True, exist_ok=True)
    write(root, "config.json", json.dumps({
        "learning_rate": 1e-5, "log_path": str(root), "kl_coef": NAN,
        "dataset_builder": {"__type__": "<class 'pathlib.PosixPath'>", "fn": {}},
    }, indent=2))
    write(root, "code.diff", b"")
    metrics = []
    for i in range(iterations):
        metrics.append({"step": i, "progress/batch": i, "optim/lr": 1e-5,
                        "progress/done_frac": (i + 1) / iterations,
                        "env/all/reward/total": 0.5 if i else NAN, "optim/kl_sample_train_v1": NAN,
                        "time/total": 1.5, "time/sample:count": 3})
    metrics.append({"step": iterations, "test/env/all/reward/total": 0.75})  # eval-only at end
    write(root, "metrics.jsonl", jsonl(metrics))
    write(root, "checkpoints.jsonl", jsonl([
        {"name": "000001", "batch": 1, "state_path": "tinker://run-1/weights/000001",
         "rolling": True, "extra": {"a": [1], "b": {"c": None}}},
        {"name": "000002", "batch": 2, "state_path": "tinker://run-1/weights/000002",
         "sampler_path": "tinker://run-1/sampler_weights/000002"},
        {"name": "final", "batch": iterations, "state_path": "tinker://run-1/weights/final",
         "sampler_path": "tinker://run-1/sampler_weights/final"},
    ]))
    write(root, "timing_spans.jsonl", jsonl([
        {"step": i, "spans": [{"name": "sample", "duration": 0.5, "wall_start": 10.0 + i,
                               "wall_end": 10.5 + i, "attributes": {"k": 1}}]}
        for i in range(iterations)]))
    write(root, "trace_events.jsonl", jsonl([
        {"name": "train_step", "ph": "B", "pid": 0, "tid": 12, "ts": 1.5,
         "args": {"track": "main"}, "cat": "async"},
        {"name": "train_step", "ph": "E", "pid": 0, "tid": 12, "ts": 2.5, "args": {}}]))
    write(root, "logs.log", "INFO started\n")
    for i in range(iterations):
        last = i == iterations - 1
        html = layout.iteration_path(layout_name, i, "html")
        write(root, html, HTML)
        if last and html_only_last:
            continue  # an HTML-only iteration, as old runs wrote them
        stamp = f"2025-03-01T12:0{i}:00" if i % 2 == 0 else f"2025-03-01T12:0{i}:07.518204"
        write(root, layout.iteration_path(layout_name, i, "logtree"),
              json.dumps(logtree_doc(f"RL Iteration {i}", str(root / html), stamp), indent=2))
        records = [trajectory(i, g, t) for g in range(2) for t in range(3)]
        records[0]["trajectory_metrics"]["kl"] = NAN
        write(root, layout.iteration_path(layout_name, i, "rollout_summaries"), jsonl(records))
        if i == 0:
            write(root, layout.iteration_path(layout_name, i, "rollout_summaries", label="test"),
                  b"")  # an evaluator that produced nothing: 0 bytes
            ev_html = layout.iteration_path(layout_name, i, "html", label="test")
            write(root, ev_html, HTML)
            write(root, layout.iteration_path(layout_name, i, "logtree", label="test"),
                  json.dumps(logtree_doc("Running evaluation test 0", str(root / ev_html),
                                         "2025-03-01 12:00"), indent=2))
    return root


def findings(root: Path, **kw: Any) -> list[tuple[str, str, str, int | None, str]]:
    """``(code, severity, file, line, pointer)`` of every finding of ``validate_run(root)``."""
    report = validate_run(root, **kw)
    return [(f.code, str(f.severity), f.file, f.line, f.pointer) for f in report.findings]


def codes(root: Path, **kw: Any) -> set[str]:
    """The set of codes ``validate_run(root)`` reports."""
    return {f[0] for f in findings(root, **kw)}


def errors(root: Path) -> list[tuple[str, str, str, int | None, str]]:
    """Error-level findings only."""
    return [f for f in findings(root) if f[1] == "error"]
