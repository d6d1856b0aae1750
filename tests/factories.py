"""Shared builders of the test suite: runs and records written by hand, files, and processes.

Runs here are written the way the Tinker cookbook writes them (no rlio involved), so the
validator, the report and the readers are tested against what really lands on disk. The quirky
run reproduces every cookbook quirk docs/format.md lists: Python ``json.dumps`` defaults
(``NaN``/``Infinity`` tokens, ASCII escapes, ", " separators), indent-2 config and logtree JSON
without a final newline, naive ``started_at`` timestamps, 0-byte summary files, HTML-only
iterations, rolling checkpoints with nested extra keys, an eval-only metrics line at the end.

Import it from any test as ``import factories`` or ``from factories import cookbook_run``
(``tests/`` is on pytest's ``pythonpath``).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import pathlib
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rlio import RecordError, RunWriter, layout
from rlio.cli import main
from rlio.validate import validate_run

NAN = float("nan")

HTML = ('<!doctype html>\n<html lang="en">\n<head>\n<title>t</title>\n</head>\n'
        '<body class="lt-root">\n</body>\n</html>\n')
"""A minimal well-formed logtree HTML page."""

Row = tuple[str, str, str, int | None, str]
"""A finding as ``(code, severity, file, line, pointer)``."""


# -- files ------------------------------------------------------------------------------------


def dumps(obj: Any) -> str:
    """The cookbook's serializer: ``json.dumps`` defaults (NaN tokens, ", " separators)."""
    return json.dumps(obj)


def jsonl(records: Iterable[Any]) -> str:
    """Cookbook JSONL: one ``json.dumps`` line per record, each ending in a newline."""
    return "".join(dumps(r) + "\n" for r in records)


def write(root: Path, rel: str, data: bytes | str) -> Path:
    """Write ``data`` at run-relative ``rel`` (parents created); returns the path."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def write_jsonl(root: Path, rel: str, records: Iterable[Any]) -> Path:
    """Write ``records`` as cookbook JSONL at run-relative ``rel``."""
    return write(root, rel, jsonl(records))


def write_json(root: Path, rel: str, obj: Any, *, indent: int | None = None) -> Path:
    """Write ``obj`` as one JSON document (no final newline) at run-relative ``rel``."""
    return write(root, rel, json.dumps(obj, indent=indent))


def read_jsonl(path: Path) -> list[Any]:
    """How the cookbook reads JSONL: ``json.loads`` per line (a blank line is an error)."""
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# -- records ----------------------------------------------------------------------------------


def rollout_step(i: int, *, last: bool = False, **overrides: Any) -> dict[str, Any]:
    """Step ``i`` of a rollout summary (docs/format.md §6): reward ``0.25 * (i + 1)``."""
    step = {"step_idx": i, "ob_len": 100 + i, "ac_len": 20, "reward": 0.25 * (i + 1),
            "episode_done": last, "metrics": {"format": 1.0}, "logs": {"answer": "42"}}
    step.update(overrides)
    return step


def trajectory(iteration: int, group: int = 0, traj: int = 0, *, split: str = "train",
               n_steps: int = 2, final: float = 0.0, **overrides: Any) -> dict[str, Any]:
    """A valid rollout summary record (docs/format.md §6) whose total_reward matches its steps.

    ``overrides`` replace top-level keys after the record is built (so a wrong ``total_reward``
    or a missing key is one argument away).
    """
    steps = [rollout_step(i, last=i == n_steps - 1) for i in range(n_steps)]
    total = sum(s["reward"] for s in steps) + final
    record = {"schema_version": 1, "split": split, "iteration": iteration, "group_idx": group,
              "traj_idx": traj, "tags": ["math"], "sampling_client_step": iteration,
              "total_reward": total, "final_reward": final,
              "trajectory_metrics": {"num_turns": n_steps}, "steps": steps, "final_ob_len": 0}
    record.update(overrides)
    return record


def ordered_step(i: int, reward: Any = 0.25, **over: Any) -> dict[str, Any]:
    """A rollout step with every key in documented order."""
    out = {"step_idx": i, "ob_len": 10 + i, "ac_len": 3, "reward": reward,
           "episode_done": False, "metrics": {"m": 1.5, "n": 2}, "logs": {"t": "x"}}
    out.update(over)
    return out


def ordered_record(g: int, t: int, n: int = 3, **over: Any) -> dict[str, Any]:
    """A complete rollout record of iteration 4 in documented key order, as training loops
    build it: ``n`` ordered steps, rewards summing to ``total_reward``."""
    out: dict[str, Any] = {
        "schema_version": 1, "split": "train", "iteration": 4, "group_idx": g, "traj_idx": t,
        "tags": ["a"], "sampling_client_step": 4, "total_reward": 0.25 * n + 1.0,
        "final_reward": 1.0, "trajectory_metrics": {"turns": n, "ok": True},
        "steps": [ordered_step(i) for i in range(n)], "final_ob_len": 7,
    }
    out.update(over)
    return out


def rollout_write_outcome(root: str, recs: list[Any], *, check: bool = True) -> tuple[bytes, Any]:
    """Write ``recs`` as iteration 4's rollout summaries of a new run at ``root``: (the file's
    bytes, or ``b"<absent>"``, and (index, pointer, message) of the RecordError or None)."""
    error = None
    with RunWriter(root, check=check) as run:
        try:
            run.write_rollout_summaries(4, copy.deepcopy(recs))
        except RecordError as exc:
            error = (exc.index, exc.pointer, str(exc))
    path = pathlib.Path(root, "train_iteration_000004_rollout_summaries.jsonl")
    return (path.read_bytes() if path.exists() else b"<absent>"), error


def writer_agrees_with_validator(write: Any, files: tuple[str, ...], *,
                                 nonfinite: str = "null") -> bool | None:
    """Call ``write(run)`` on a checked writer and on one with ``check=False``, each in a fresh
    run, and assert the checked one refused (``RecordError``) exactly when the validator reports
    an error in the unchecked one's run; when accepted, both wrote the same bytes of ``files``.
    Returns whether it was accepted (None: not writable even unchecked, and refused)."""
    import tempfile

    from rlio.findings import Severity

    with tempfile.TemporaryDirectory() as d:
        checked, unchecked = Path(d, "checked"), Path(d, "unchecked")
        outcome = []
        for root, check in ((checked, True), (unchecked, False)):
            with RunWriter(root, check=check, nonfinite=nonfinite) as run:  # type: ignore[arg-type]
                try:
                    write(run)
                    outcome.append(True)
                except RecordError:
                    outcome.append(False)
        accepted, written = outcome
        if not written:  # not writable at all (an object, an integer beyond 64 bits)
            assert not accepted
            return None
        found = [f for f in validate_run(unchecked).findings if f.severity == Severity.ERROR]
        assert accepted == (found == []), found
        if accepted:
            for rel in files:
                assert (checked / rel).read_bytes() == (unchecked / rel).read_bytes(), rel
        return accepted


def set_at(obj: Any, path: list[Any], value: Any) -> None:
    """Set ``value`` at ``path`` (keys and indexes) inside ``obj``."""
    node: Any = obj
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


@contextlib.contextmanager
def small_tmpfs(root: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` (``"4m"``) mounted at ``root/mnt`` for a test (skipped only where
    mounting is impossible), unmounted afterwards."""
    mnt = root / "mnt"
    mnt.mkdir()
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (not root or no mount namespace): {out.stderr}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def metrics_line(step: int, **values: Any) -> dict[str, Any]:
    """A training metrics line at ``step`` (``progress/batch`` too), plus ``values``."""
    return {"step": step, "progress/batch": step, "optim/lr": 1e-5, **values}


def metrics_lines(steps: Iterable[int]) -> str:
    """Cookbook JSONL of one training metrics line per step in ``steps``."""
    return jsonl(metrics_line(s) for s in steps)


def checkpoint_line(name: str, batch: int | None = None, **extra: Any) -> dict[str, Any]:
    """A checkpoints.jsonl line with a ``tinker://r/weights/<name>`` state_path, plus ``extra``.

    Pass ``state_path=None`` for a sampler-only line (the key is then left out).
    """
    line: dict[str, Any] = {"name": name}
    if batch is not None:
        line["batch"] = batch
    line["state_path"] = f"tinker://r/weights/{name}"
    line.update(extra)
    return {k: v for k, v in line.items() if not (k == "state_path" and v is None)}


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


# -- runs -------------------------------------------------------------------------------------


def cookbook_run(root: Path, iterations: int = 3, *, layout_name: layout.Layout = "flat",
                 quirks: bool = True, evaluator_every: int = 5, logtrees: bool = True) -> Path:
    """A run as the cookbook writes it, in either layout, with ``iterations`` iterations.

    With ``quirks`` (the default) the run holds every documented cookbook quirk and every file
    kind (config, code diff, NaN metrics, checkpoints, timing spans, trace events, logtrees,
    rollout summaries, an empty evaluator at iteration 0, an HTML-only last iteration) and
    validates with no error. Without, it is only what a report charts and links: finite
    metrics with an evaluator line every ``evaluator_every`` iterations, a small config and
    placeholder pages (``logtrees=False``: HTML only), and no checkpoint ledger.
    """
    if quirks:
        return _quirky_run(root, iterations, layout_name)
    return _chart_run(root, iterations, layout_name, evaluator_every, logtrees)


def _chart_run(root: Path, iterations: int, run_layout: layout.Layout, evaluator_every: int,
               logtrees: bool) -> Path:
    """The plain run of ``cookbook_run(quirks=False)``."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(iterations):
        lines.append({"step": i, "progress/batch": i, "progress/done_frac": (i + 1) / iterations,
                      "env/all/reward/total": math.tanh(i / 10), "optim/entropy": 1 - i / 1e4,
                      "optim/kl_sample_train_v1": 0.01, "optim/lr": 4e-5})
        for evaluator in ["test"] if i % evaluator_every == 0 else []:
            lines.append({"step": i, f"{evaluator}/env/all/reward/total": i / iterations})
    write(root, layout.METRICS, jsonl(lines))
    write_json(root, layout.CONFIG, {"model_name": "m", "lr": 4e-5}, indent=2)
    for i in range(iterations):
        labels: list[str | None] = [None] + (["test"] if i % evaluator_every == 0 else [])
        for label in labels:
            for artifact in ("html", "logtree") if logtrees else ("html",):
                write(root, layout.iteration_path(run_layout, i, artifact, label=label),
                      "<!doctype html><p>page</p>" if artifact == "html" else "{}")
    return root


def _quirky_run(root: Path, iterations: int, layout_name: layout.Layout) -> Path:
    """The run of ``cookbook_run(quirks=True)``."""
    root.mkdir(parents=True, exist_ok=True)
    write_json(root, "config.json", {
        "learning_rate": 1e-5, "log_path": str(root), "kl_coef": NAN,
        "dataset_builder": {"__type__": "<class 'pathlib.PosixPath'>", "fn": {}},
    }, indent=2)
    write(root, "code.diff", b"")
    metrics = []
    for i in range(iterations):
        metrics.append({"step": i, "progress/batch": i, "optim/lr": 1e-5,
                        "progress/done_frac": (i + 1) / iterations,
                        "env/all/reward/total": 0.5 if i else NAN, "optim/kl_sample_train_v1": NAN,
                        "time/total": 1.5, "time/sample:count": 3})
    metrics.append({"step": iterations, "test/env/all/reward/total": 0.75})  # eval-only at end
    write_jsonl(root, "metrics.jsonl", metrics)
    write_jsonl(root, "checkpoints.jsonl", [
        {"name": "000001", "batch": 1, "state_path": "tinker://run-1/weights/000001",
         "rolling": True, "extra": {"a": [1], "b": {"c": None}}},
        {"name": "000002", "batch": 2, "state_path": "tinker://run-1/weights/000002",
         "sampler_path": "tinker://run-1/sampler_weights/000002"},
        {"name": "final", "batch": iterations, "state_path": "tinker://run-1/weights/final",
         "sampler_path": "tinker://run-1/sampler_weights/final"},
    ])
    write_jsonl(root, "timing_spans.jsonl", [
        {"step": i, "spans": [{"name": "sample", "duration": 0.5, "wall_start": 10.0 + i,
                               "wall_end": 10.5 + i, "attributes": {"k": 1}}]}
        for i in range(iterations)])
    write_jsonl(root, "trace_events.jsonl", [
        {"name": "train_step", "ph": "B", "pid": 0, "tid": 12, "ts": 1.5,
         "args": {"track": "main"}, "cat": "async"},
        {"name": "train_step", "ph": "E", "pid": 0, "tid": 12, "ts": 2.5, "args": {}}])
    write(root, "logs.log", "INFO started\n")
    for i in range(iterations):
        html = layout.iteration_path(layout_name, i, "html")
        write(root, html, HTML)
        if i == iterations - 1:
            continue  # an HTML-only iteration, as old runs wrote them
        stamp = f"2025-03-01T12:0{i}:00" if i % 2 == 0 else f"2025-03-01T12:0{i}:07.518204"
        write_json(root, layout.iteration_path(layout_name, i, "logtree"),
                   logtree_doc(f"RL Iteration {i}", str(root / html), stamp), indent=2)
        records = [trajectory(i, g, t) for g in range(2) for t in range(3)]
        records[0]["trajectory_metrics"]["kl"] = NAN
        write_jsonl(root, layout.iteration_path(layout_name, i, "rollout_summaries"), records)
        if i == 0:
            write(root, layout.iteration_path(layout_name, i, "rollout_summaries", label="test"),
                  b"")  # an evaluator that produced nothing: 0 bytes
            ev_html = layout.iteration_path(layout_name, i, "html", label="test")
            write(root, ev_html, HTML)
            write_json(root, layout.iteration_path(layout_name, i, "logtree", label="test"),
                       logtree_doc("Running evaluation test 0", str(root / ev_html),
                                   "2025-03-01 12:00"), indent=2)
    return root


# -- validating -------------------------------------------------------------------------------


def findings(root: Path | str, **kw: Any) -> list[Row]:
    """``(code, severity, file, line, pointer)`` of every finding of ``validate_run(root)``."""
    report = validate_run(root, **kw)
    return [(f.code, str(f.severity), f.file, f.line, f.pointer) for f in report.findings]


def codes(root: Path | str, **kw: Any) -> set[str]:
    """The set of codes ``validate_run(root)`` reports."""
    return {f[0] for f in findings(root, **kw)}


def errors(root: Path | str) -> list[Row]:
    """Error-level findings of ``validate_run(root)`` only."""
    return [f for f in findings(root) if f[1] == "error"]


def has(found: Iterable[Row], code: str, file: str, line: int | None = None,
        pointer: str | None = None) -> bool:
    """Whether ``found`` holds ``code`` at ``file`` (and ``line``/``pointer`` when given)."""
    return any(f[0] == code and f[2] == file and (line is None or f[3] == line)
               and (pointer is None or f[4] == pointer) for f in found)


# -- processes --------------------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``rlio ARGV`` in-process: its exit status, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_cli(*args: str, cwd: Path | str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m rlio ARGS`` in a real subprocess, output captured as text, never raising."""
    return subprocess.run([sys.executable, "-m", "rlio", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, check=False)


def run_python(code: str, *argv: str, flags: Iterable[str] = (),
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (dedented) in a fresh interpreter: ``python FLAGS -c code ARGV``.

    Output is captured as text; the caller checks ``returncode`` (a SIGKILL is ``-9``).
    """
    return subprocess.run([sys.executable, *flags, "-c", textwrap.dedent(code), *argv],
                          capture_output=True, text=True, timeout=timeout, check=False)


def strict_json(obj: Any) -> Any:
    """What the strict-JSON writer puts on disk for ``obj``: non-finite floats become None."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [strict_json(v) for v in obj]
    return obj


# -- sweeps (rlio compare, rlio query) --------------------------------------------------------

SWEEP_SYSTEM = "You are a careful assistant."


def sweep_prompt(j: int) -> list[dict[str, Any]]:
    """The conversation of prompt ``j`` in a sweep run (its key depends on ``j`` only)."""
    return [{"role": "system", "content": SWEEP_SYSTEM},
            {"role": "user", "content": f"Question {j}: what is {j} + {j}?"},
            {"role": "assistant", "content": f"The answer is {2 * j}."}]


def sweep_metrics(rewards: list[float], *, cost: bool, late_key: bool) -> list[dict[str, Any]]:
    """One training line per reward (``progress/batch`` = index), with a loss, cumulative tokens,
    ``time/total`` and, with ``cost``, ``cost/cumulative_usd``; with ``late_key`` the last line
    carries ``late/key``, a key no earlier line had."""
    lines = []
    for i, r in enumerate(rewards):
        line: dict[str, Any] = {"step": i, "progress/batch": i,
                                "progress/done_frac": (i + 1) / len(rewards),
                                "env/all/reward/total": r, "train/loss": round(1.0 - r, 6),
                                "tokens/cumulative/sampled": 100 * (i + 1),
                                "tokens/cumulative/trained": 50 * (i + 1), "time/total": 2.0}
        if cost:
            line["cost/cumulative_usd"] = 0.25 * (i + 1)
        if late_key and i == len(rewards) - 1:
            line["late/key"] = 7
        lines.append(line)
    return lines


def sweep_rollout(group: int, reward: float) -> dict[str, Any]:
    """A one-step trajectory of ``group`` whose final reward is ``reward``."""
    return {"group_idx": group, "traj_idx": 0, "tags": ["sweep"], "sampling_client_step": 0,
            "total_reward": reward, "final_reward": reward, "trajectory_metrics": {"turns": 1},
            "steps": [{"step_idx": 0, "ob_len": 10, "ac_len": 5, "reward": 0.0,
                       "episode_done": True, "metrics": {}, "logs": {}}],
            "final_ob_len": 15}


def sweep_logtree(lt: Any, prompt_rewards: list[float]) -> None:
    """The cookbook's structure: group j logs prompt j in ``Trajectory 0``."""
    for j, _ in enumerate(prompt_rewards):
        with lt.section(f"Group {j}"), lt.section("Trajectory 0 Episode"):
            lt.conversation(sweep_prompt(j))


def sweep_run(root: Path, *, config: dict[str, Any], rewards: list[float],
              prompt_rewards: list[float], layout_name: layout.Layout = "flat",
              cost: bool = True, late_key: bool = True, by_writer: bool = True) -> Path:
    """A demo-style run of ``len(rewards)`` iterations: config, metrics (``sweep_metrics``),
    checkpoints ending in ``final``, and at the last iteration a logtree and rollout summaries
    of ``len(prompt_rewards)`` prompts (prompt j scoring ``prompt_rewards[j]``). Written through
    ``RunWriter``, or (``by_writer=False``) file by file as the cookbook writes it."""
    last = len(rewards) - 1
    records = [sweep_rollout(j, r) for j, r in enumerate(prompt_rewards)]
    if by_writer:
        with RunWriter(root, layout=layout_name) as run:
            run.write_config(config)
            for line in sweep_metrics(rewards, cost=cost, late_key=late_key):
                run.log_metrics({k: v for k, v in line.items() if k != "step"}, step=line["step"])
            with run.logtree(last, title=f"RL Iteration {last}") as lt:
                sweep_logtree(lt, prompt_rewards)
            run.write_rollout_summaries(last, records)
            run.record_checkpoint("final", batch=len(rewards), state_path="tinker://s/final")
        return root
    from rlio.logtree import LogTree

    write_json(root, "config.json", config, indent=2)
    write_jsonl(root, "metrics.jsonl", sweep_metrics(rewards, cost=cost, late_key=late_key))
    write_jsonl(root, "checkpoints.jsonl", [checkpoint_line(f"{len(rewards):06d}",
                                                            len(rewards))])
    lt = LogTree(f"RL Iteration {last}")
    sweep_logtree(lt, prompt_rewards)
    write_json(root, layout.iteration_path(layout_name, last, "logtree"), lt.to_json(), indent=2)
    write(root, layout.iteration_path(layout_name, last, "html"), lt.to_html())
    write_jsonl(root, layout.iteration_path(layout_name, last, "rollout_summaries"),
                [{"schema_version": 1, "split": "train", "iteration": last, **r}
                 for r in records])
    return root


#: The seeded sweep's prompt rewards: against ``base``, ``regressed`` loses prompts 0-2 (by 0.5,
#: 0.25, 0.75), gains prompt 3 (by 0.5) and keeps prompts 4-5.
SWEEP_PROMPTS = {"base": [1.0, 0.75, 1.0, 0.0, 0.5, 0.25],
                 "regressed": [0.5, 0.5, 0.25, 0.5, 0.5, 0.25]}


def seeded_sweep(root: Path) -> Path:
    """Four runs under ``root/sweep`` with known differences: ``lr-1e-5/base`` (flat, rlio),
    ``lr-4e-5/regressed`` (nested, rlio, an extra config key, the regressed prompts),
    ``lr-1e-4/cookbook`` (flat, written as the cookbook writes, no cost keys) and ``lr-1e-4/empty``
    (a config and a code diff only: a run that logged nothing yet);
    and ``root/sweep/notes`` (no run)."""
    sweep = root / "sweep"
    base_cfg = {"learning_rate": 1e-5, "model_name": "m/8b",
                "sampling": {"temperature": 1.0, "max_tokens": 256}, "seed": 0}
    sweep_run(sweep / "lr-1e-5" / "base", config=base_cfg,
              rewards=[0.1, 0.3, 0.5, 0.4, 0.6], prompt_rewards=SWEEP_PROMPTS["base"])
    sweep_run(sweep / "lr-4e-5" / "regressed",
              config={**base_cfg, "learning_rate": 4e-5, "extra": True,
                      "sampling": {"temperature": 0.7, "max_tokens": 256}},
              rewards=[0.2, 0.1, 0.05, 0.3, 0.2], prompt_rewards=SWEEP_PROMPTS["regressed"],
              layout_name="nested")
    sweep_run(sweep / "lr-1e-4" / "cookbook", config={**base_cfg, "learning_rate": 1e-4},
              rewards=[0.0, 0.2, 0.9, 0.8], prompt_rewards=[0.0] * 6, cost=False,
              by_writer=False, late_key=False)
    write_json(sweep / "lr-1e-4" / "empty", "config.json", {**base_cfg, "seed": 1})
    (sweep / "lr-1e-4" / "empty" / "code.diff").write_text("", encoding="utf-8")
    (sweep / "notes").mkdir(parents=True)
    return sweep


# -- the real tinker-cookbook's loops (tests/unit/test_cookbook_loops.py, tests/storage/, crash) ---


COOKBOOK_TOKENS = {"sampled": 1200, "prefill_cached": 300, "prefill_uncached": 900, "trained": 1100}
COOKBOOK_CONFIG = {"model_name": "Qwen/Qwen3-8B", "learning_rate": 4e-5, "batch_size": 8}


def cookbook_session(log_dir: Path | str, storage: Any, steps: range, *,
                     resume_from: int | None) -> None:
    """One training process of a cookbook RL loop, writing through ``storage`` (None: the
    cookbook's default backend), as rl/train.py does: rewind on resume, then per step.
    Needs tinker-cookbook (imported here, never at module import)."""
    from tinker_cookbook import stores
    from tinker_cookbook.utils import ml_log, trace

    store = stores.TrainingRunStore(storage) if storage is not None else None
    logger = ml_log.JsonLogger(str(log_dir), store=store)
    store = logger.store
    if resume_from is not None:
        store.truncate_metrics(resume_from)
    else:
        logger.log_hparams(COOKBOOK_CONFIG)
    for i in steps:
        with trace.trace_iteration(step=i) as window:
            with trace.scope_span_sync("sample"):
                pass
            with trace.scope_span_sync("train_step"):
                pass
        store.write_rollouts(i, [trajectory(i, 0, t) for t in range(2)])
        store.write_logtree(i, logtree_doc(f"RL Iteration {i}", None,
                                           "2026-12-01T00:00:00+00:00"))
        metrics = {"progress/batch": i, "env/all/reward/total": 0.75, "optim/lr": 4e-5}
        logger.log_metrics({**metrics, **{k: 0.01 for k in window.get_timing_metrics()}},
                           step=i)
        window.save_timing(i, store=store)
        if i % 2 == 1:
            store.write_checkpoint({
                "name": f"{i + 1:06d}", "batch": i + 1, "state_path": f"tinker://r/w/{i + 1}",
                "cumulative_tokens": COOKBOOK_TOKENS,
                "discarded_tokens": dict.fromkeys(COOKBOOK_TOKENS, 0)})
    logger.log_summary({"cost/total_usd": 1.25})
    logger.close()


def cookbook_two_sessions(log_dir: Path | str, make_storage: Any) -> None:
    """A run killed after step 4 and resumed from its checkpoint at batch 4, then steps 4-5."""
    first = make_storage(log_dir)
    cookbook_session(log_dir, first, range(5), resume_from=None)
    if first is not None:
        first.close()
    second = make_storage(log_dir)
    cookbook_session(log_dir, second, range(4, 6), resume_from=4)
    if second is not None:
        second.close()


def cookbook_files(run: Path) -> dict[str, bytes]:
    """Every file of a run but the timing spans (wall times differ run to run) and code.diff."""
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and p.name not in ("timing_spans.jsonl", "code.diff")}


def cookbook_readers(store: Any) -> dict[str, Any]:
    """What the cookbook's readers return for a run."""
    iterations = store.list_iterations()
    return {
        "config": store.read_config(), "metrics": store.read_metrics(),
        "checkpoints": store.read_checkpoints(),
        "timing": [(r["step"], [s["name"] for s in r["spans"]]) for r in store.read_timing()],
        "iterations": [(it.iteration, it.has_train_rollouts, it.has_train_logtree)
                       for it in iterations],
        "rollouts": [store.read_rollouts(it.iteration) for it in iterations],
        "logtrees": [store.read_logtree(it.iteration) for it in iterations],
        "keys": store.metric_keys(),
    }


# -- the cookbook's token capture (0.6.1 tinker_cookbook.capture) ----------------------------


def cookbook_captures(storage: Any, iterations: int = 2, *, extra_kind: bool = True) -> None:
    """Token-capture records of a small RL loop, written by the real cookbook 0.6.1: its
    ``CaptureExporter(JsonlFileSink(storage))`` and the record builders ``instrument_tinker``
    patches into the SDK (``_make_sample_wrapper``, ``_make_train_op_wrapper``), applied to
    stand-in clients, since ``instrument_tinker`` itself needs the ``tinker`` SDK (``import
    tinker`` fails without it). Per iteration: one sample call per group (2 groups, 2 samples,
    a NaN logprob as the SDK can return), forward_backward, optim_step, save_weights_for_sampler;
    with ``extra_kind`` one record of a kind rlio has no schema of (``reward``)."""
    from concurrent.futures import Future
    from types import SimpleNamespace

    from tinker_cookbook.capture import CaptureExporter, JsonlFileSink, capture, instrument

    def done(value: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        fut.set_result(value)
        return fut

    class Prompt:
        def __init__(self, tokens: list[int]) -> None:
            self.tokens = tokens

        def to_ints(self) -> list[int]:
            return self.tokens

    class Sampler:
        _sampling_session_id = "session-1"
        base_model = "Qwen/Qwen3-4B"

        def __init__(self, step: int) -> None:
            self.model_path = f"tinker://run-1/sampler_weights/{step:06d}"

        def sample(self, prompt: Any, num_samples: int, sampling_params: Any) -> Any:
            seq = SimpleNamespace(tokens=[11, 12, 13], logprobs=[-0.5, -0.25, NAN],
                                  stop_reason="stop")
            return done(SimpleNamespace(sequences=[seq] * num_samples))

    class Trainer:
        model_id = "model-1"

        def forward_backward(self, data: Any, loss_fn: str = "importance_sampling") -> Any:
            return done(SimpleNamespace(metrics={"loss:sum": 1.5}))

        def optim_step(self, adam_params: Any) -> Any:
            return done(SimpleNamespace())

        def save_weights_for_sampler(self, name: str) -> Any:
            return done(SimpleNamespace(path=f"tinker://run-1/sampler_weights/{name}"))

    sample = instrument._make_sample_wrapper(Sampler.sample)
    ops = {op: instrument._make_train_op_wrapper(getattr(Trainer, op), op)
           for op in ("forward_backward", "optim_step", "save_weights_for_sampler")}
    params = SimpleNamespace(max_tokens=64, temperature=1.0, top_p=1.0, top_k=-1, seed=None)
    adam = SimpleNamespace(learning_rate=4e-5, beta1=0.9, beta2=0.95, eps=1e-8,
                           weight_decay=0.0, grad_clip_norm=None)
    exporter = CaptureExporter(JsonlFileSink(storage), flush_interval_sec=0.01)
    saved, instrument._exporter = instrument._exporter, exporter
    try:
        with capture(run_id="run-1", split="train"):
            for i in range(iterations):
                with capture(iteration=i):
                    for g in range(2):
                        with capture(group_idx=g):
                            sample(Sampler(i), Prompt([1, 2, 3 + g]), 2, params)
                    ops["forward_backward"](Trainer(), data=[1, 2, 3, 4])
                    ops["optim_step"](Trainer(), adam)
                    ops["save_weights_for_sampler"](Trainer(), name=f"{i + 1:06d}")
        if extra_kind:
            exporter.enqueue({"kind": "reward", "scope": {"run_id": "run-1"},
                              "created_at": 1.0, "value": 1.0})
    finally:
        instrument._exporter = saved
        exporter.shutdown()


# -- runs of grouped rollouts (datasets, per-prompt change) ---------------------------------------

GROUP_SYSTEM = "Answer with a number."


def group_prompt(g: int) -> str:
    """The user message of group ``g`` (every trajectory of a group answers it)."""
    return f"Problem {g}: what is {g} * 3?"


def group_run(root: Path, rewards: list[list[list[float]]], *, evaluator: str | None = None,
              response: Any = None, layout_name: layout.Layout = "flat",
              config: dict[str, Any] | None = None, prompt: Any = None,
              metrics: Any = None) -> Path:
    """A run through ``RunWriter`` whose iteration ``i`` has ``len(rewards[i])`` groups of
    math-style trajectories: group ``g`` asks ``group_prompt(g)``, trajectory ``t`` answers
    ``response(i, g, t)`` (default ``"Answer {i}.{g}.{t}"``) and scores ``rewards[i][g][t]`` as
    its step reward (``final_reward`` 0.0). The logtree has the cookbook's sections (``Group g``
    > ``Trajectory t Episode``); ``sampling_client_step`` is ``i``, and a checkpoint of batch
    ``i`` with a sampler path precedes iteration ``i`` (from 1). With ``evaluator``, the
    rollouts are that evaluator's instead of training ones; ``prompt(i, g)`` replaces the user
    message, ``metrics(i, g, t)`` gives ``trajectory_metrics``."""
    answer = response or (lambda i, g, t: f"Answer {i}.{g}.{t}")
    ask = prompt or (lambda i, g: group_prompt(g))
    with RunWriter(root, layout=layout_name) as run:
        run.write_config(config or {"model_name": "m/1b", "learning_rate": 1e-5})
        run.write_code_diff(text="diff --git a/x b/x\n")
        for i, groups in enumerate(rewards):
            if i > 0:
                run.record_checkpoint(f"{i:06d}", batch=i, state_path=f"tinker://r/w/{i:06d}",
                                      sampler_path=f"tinker://r/s/{i:06d}")
            records = []
            with run.logtree(i, title=f"RL Iteration {i}", evaluator=evaluator) as lt:
                for g, group in enumerate(groups):
                    with lt.section(f"Group {g}"):
                        for t, r in enumerate(group):
                            with lt.section(f"Trajectory {t} Episode"):
                                lt.conversation([
                                    {"role": "system", "content": GROUP_SYSTEM},
                                    {"role": "user", "content": ask(i, g)},
                                    {"role": "assistant", "content": answer(i, g, t)}])
                            records.append({
                                "group_idx": g, "traj_idx": t, "tags": ["math"],
                                "sampling_client_step": i, "total_reward": r,
                                "final_reward": 0.0,
                                "trajectory_metrics": metrics(i, g, t) if metrics else {},
                                "steps": [{"step_idx": 0, "ob_len": 10, "ac_len": 4,
                                           "reward": r, "episode_done": True, "metrics": {},
                                           "logs": {}}],
                                "final_ob_len": 0})
            run.write_rollout_summaries(i, records, evaluator=evaluator)
            run.log_metrics({"progress/batch": i}, step=i)
    return root


def upload_folder(local: Path, bucket_uri: str) -> str:
    """Copy a local folder to a fresh prefix under ``bucket_uri`` (``gs://bucket``), file by
    file; returns the prefix's URI."""
    from rlio.storage import open_storage

    uri = f"{bucket_uri}/s-{uuid.uuid4().hex[:12]}"
    store = open_storage(uri, create=True)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            store.replace(path.relative_to(local).as_posix(), path.read_bytes())
    return uri
