"""Regenerate the conformance corpus (``conformance/cases/``) from docs/format.md, exactly.

Usage: ``python conformance/build_cases.py [OUT_DIR]``. Without an argument it rewrites
``conformance/cases/`` in place and the case table of ``conformance/README.md``; with one it writes
the cases under ``OUT_DIR`` only (the test suite does this to prove the committed corpus is what
this script produces).

The committed files are the corpus: another implementation reads only ``cases/``. This script is
self-contained (stdlib only, no ``rlio`` import) so the expectations come from docs/format.md,
not from the code under test. Each case is a tiny run directory plus ``expected.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

Files = dict[str, bytes]

# Warning- and error-level codes no clean run may produce (docs/format.md §10, at least these).
CLEAN_FORBIDDEN = [
    "RL101", "RL102", "RL103", "RL104", "RL105", "RL106", "RL107", "RL108", "RL109", "RL110",
    "RL111", "RL112", "RL113", "RL201", "RL202", "RL302", "RL303", "RL304", "RL401", "RL402",
    "RL403", "RL404", "RL405", "RL406", "RL408", "RL409", "RL411", "RL501", "RL118",
]


# --------------------------------------------------------------------------------------------
# Encoding helpers: rlio style (compact, raw UTF-8) and cookbook style (Python json defaults).
# --------------------------------------------------------------------------------------------


def compact(obj: Any) -> bytes:
    """One JSON document as rlio writes it: compact separators, raw UTF-8."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def cookbook(obj: Any) -> bytes:
    """One JSON document as the cookbook writes it: ``json.dumps`` defaults (NaN tokens, ASCII)."""
    return json.dumps(obj).encode()


def pretty(obj: Any) -> bytes:
    """Indent-2, ASCII-escaped, no final newline: the cookbook's config.json and logtree JSON."""
    return json.dumps(obj, indent=2).encode()


def jsonl(records: Iterable[Any], enc: Callable[[Any], bytes] = compact) -> bytes:
    """JSONL: each record on its own line, each line terminated."""
    return b"".join(enc(r) + b"\n" for r in records)


def raw_lines(*lines: bytes | str) -> bytes:
    """Literal lines (bytes kept as is), each terminated."""
    return b"".join((ln.encode() if isinstance(ln, str) else ln) + b"\n" for ln in lines)


# --------------------------------------------------------------------------------------------
# Run-file builders (docs/format.md §1-§8).
# --------------------------------------------------------------------------------------------


def it_path(layout: str, n: int, artifact: str, label: str | None = None) -> str:
    """Path of a per-iteration file (docs/format.md §1); ``artifact``: html, logtree, summaries."""
    suffix = {"html": ".html", "logtree": "_logtree.json",
              "rollout_summaries": "_rollout_summaries.jsonl"}[artifact]
    stem = "train" if label is None else f"eval_{label}"
    if layout == "flat":
        return f"{stem}_iteration_{n:06d}{suffix}"
    return f"iteration_{n:06d}/{stem}{suffix}"


def gantt_path(layout: str, n: int) -> str:
    """Path of the optional timing chart of iteration ``n``."""
    if layout == "flat":
        return f"timing_gantt_{n:06d}.html"
    return f"iteration_{n:06d}/timing_gantt.html"


def metrics_line(step: int, n_batches: int = 2, **extra: Any) -> dict[str, Any]:
    """A typical RL metrics line of iteration ``step`` (docs/format.md §3)."""
    rec: dict[str, Any] = {
        "step": step,
        "progress/batch": step,
        "progress/done_frac": round((step + 1) / max(n_batches, step + 1), 4),
        "optim/lr": 4e-05,
        "env/all/reward/total": 0.5,
        "env/all/ac_tokens_per_turn": 31.5,
        "optim/entropy": 0.61,
        "optim/kl_sample_train_v1": 0.0012,
        "time/sample": 2.25,
        "time/sample:count": 4,
        "time/total": 3.5,
    }
    rec.update(extra)
    return rec


def step_rec(i: int, reward: float | None, done: bool) -> dict[str, Any]:
    """One step of a trajectory (docs/format.md §6)."""
    return {"step_idx": i, "ob_len": 40 + 8 * i, "ac_len": 12, "reward": reward,
            "episode_done": done, "metrics": {"format": 1.0}, "logs": {}}


def traj(split: str, it: int, g: int, t: int, rewards: tuple[float | None, ...] = (0.5,),
         final: float | None = 0.25, **over: Any) -> dict[str, Any]:
    """One rollout-summary record, keys in the documented order (docs/format.md §6)."""
    steps = [step_rec(i, r, i == len(rewards) - 1) for i, r in enumerate(rewards)]
    known = [r for r in rewards if r is not None]
    total = None if final is None or len(known) < len(rewards) else sum(known) + final
    rec: dict[str, Any] = {
        "schema_version": 1, "split": split, "iteration": it, "group_idx": g, "traj_idx": t,
        "tags": ["arithmetic"], "sampling_client_step": it, "total_reward": total,
        "final_reward": final, "trajectory_metrics": {"correct": 1.0}, "steps": steps,
        "final_ob_len": 0,
    }
    for k, v in over.items():
        rec[k] = v
    return rec


def summaries(split: str, it: int, groups: int = 2, per_group: int = 2) -> list[dict[str, Any]]:
    """A small, valid rollout-summaries file's records."""
    return [traj(split, it, g, t) for g in range(groups) for t in range(per_group)]


def node(tag: str, *children: Any, attrs: dict[str, str] | None = None,
         data: dict[str, Any] | None = None) -> dict[str, Any]:
    """A logtree node (docs/format.md §7); ``data`` last when present."""
    out: dict[str, Any] = {"tag": tag, "attrs": attrs or {}, "children": list(children)}
    if data is not None:
        out["data"] = data
    return out


CONVERSATION = {
    "type": "conversation",
    "messages": [
        {"role": "user", "content": "What is 17 + 25? Answer with a number."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "17 + 25 = 42"},
                                          {"type": "text", "text": "42"}], "trainable": True},
    ],
}


def logtree_doc(title: str, html_path: str | None, *, started_at: str,
                extra_children: Iterable[Any] = (), conversation: Any = None) -> dict[str, Any]:
    """A small logtree document: a title, one Group Rollout section with a conversation."""
    conv = CONVERSATION if conversation is None else conversation
    root = node(
        "body",
        node("h1", title),
        node("section",
             node("h2", "Group Rollout"),
             node("div", attrs={"class": "lt-conversation"}, data=conv),
             node("table",
                  node("caption", "Reward"),
                  node("tr", node("th", "correct"), node("td", "1.0")),
                  attrs={"class": "lt-table"})),
        *extra_children,
    )
    return {"title": title, "started_at": started_at, "path": html_path, "root": root}


def html_doc(title: str) -> bytes:
    """A complete HTML twin (docs/format.md §7)."""
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
        f"<title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n<section><h2>Group Rollout</h2>"
        "<div class=\"lt-conversation\"><p><b>user:</b> What is 17 + 25? Answer with a number.</p>"
        "<p><b>assistant:</b> 42</p></div></section>\n</body>\n</html>\n"
    ).encode()


def cookbook_html(title: str) -> bytes:
    """An HTML twin as older producers write it: upper-case doctype, no final newline."""
    return html_doc(title).replace(b"<!doctype html>", b"<!DOCTYPE html>").rstrip(b"\n")


RUN_ROOT = "/runs/exp1"  # where the producer saw the run; logtree "path" values start with it
RLIO_TIME = "2025-03-01T12:00:{s:02d}.250000+00:00"


def add_iteration(files: Files, layout: str, n: int, label: str | None = None, *,
                  style: str = "rlio", started_at: str | None = None,
                  html: bool = True, logtree: bool = True, summaries_: bool = True) -> None:
    """Add the logtree JSON, HTML twin and rollout summaries of one iteration (train or eval)."""
    title = f"RL Iteration {n}" if label is None else f"Eval {label} Iteration {n}"
    split = "train" if label is None else f"eval/{label}"
    if started_at is None:
        started_at = RLIO_TIME.format(s=n % 60)
    if logtree:
        doc = logtree_doc(title, f"{RUN_ROOT}/{it_path(layout, n, 'html', label)}",
                          started_at=started_at)
        files[it_path(layout, n, "logtree", label)] = pretty(doc) if style == "cookbook" else (
            compact(doc) + b"\n")
    if html:
        files[it_path(layout, n, "html", label)] = html_doc(title)
    if summaries_:
        enc = cookbook if style == "cookbook" else compact
        files[it_path(layout, n, "rollout_summaries", label)] = jsonl(
            summaries(split, n, groups=2 if label is None else 1), enc)


def ckpt(name: str, batch: int | None = None, *, state: bool = True, sampler: bool = True,
         **extra: Any) -> dict[str, Any]:
    """A checkpoint record, keys in the documented order (docs/format.md §5)."""
    rec: dict[str, Any] = {"name": name}
    if batch is not None:
        rec["batch"] = batch
    if state:
        rec["state_path"] = f"tinker://run-7f3a/weights/{name}"
    if sampler:
        rec["sampler_path"] = f"tinker://run-7f3a/sampler_weights/{name}"
    rec.update(extra)
    return rec


CONFIG = {
    "model_name": "Qwen/Qwen3-4B-Instruct-2507",
    "log_path": RUN_ROOT,
    "learning_rate": 4e-05,
    "batch_size": 8,
    "group_size": 2,
    "lora_rank": 32,
    "eval_every": 1,
    "save_every": 1,
    "dataset_builder": {"name": "arithmetic", "seed": 0},
}

CODE_DIFF = (
    b"diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n"
    b"-lr = 1e-5\n+lr = 4e-5\n"
)


def base_run(layout: str | None = "flat", iterations: int = 2, *, evals: Iterable[str] = ("test",),
             extras: bool = True, per_iteration: bool = True) -> Files:
    """A complete, clean rlio-style run: every top-level file type and every iteration's files."""
    files: Files = {
        "metrics.jsonl": jsonl(metrics_line(i, iterations) for i in range(iterations)),
        "config.json": compact(CONFIG) + b"\n",
        "checkpoints.jsonl": jsonl(
            [ckpt(f"{i + 1:06d}", i + 1) for i in range(iterations - 1)]
            + [ckpt("final", iterations)]),
    }
    if extras:
        files["code.diff"] = CODE_DIFF
        files["timing_spans.jsonl"] = jsonl(
            {"step": i, "spans": [
                {"name": "sample", "duration": 2.25, "wall_start": 1740830400.0 + 10 * i,
                 "wall_end": 1740830402.25 + 10 * i},
                {"name": "train_step", "duration": 1.0, "wall_start": 1740830402.5 + 10 * i,
                 "wall_end": 1740830403.5 + 10 * i}]}
            for i in range(iterations))
        files["trace_events.jsonl"] = jsonl(
            [{"name": "sample", "ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 2250000,
              "args": {"step": 0}, "cat": "rl"},
             {"name": "train_step", "ph": "X", "pid": 1, "tid": 2, "ts": 2500000, "dur": 1000000,
              "args": {"step": 0}}])
        files["logs.log"] = b"2025-03-01 12:00:00,250 INFO rl.train: Starting training\n"
    if per_iteration and layout is not None:
        for n in range(iterations):
            add_iteration(files, layout, n)
            for label in evals:
                add_iteration(files, layout, n, label)
            files[gantt_path(layout, n)] = html_doc(f"Timing {n}")
    return files


def metrics_only(steps: Iterable[int], **extra: Any) -> Files:
    """A run of metrics, config and (optionally) checkpoints only: no per-iteration logging."""
    steps = list(steps)
    files: Files = {
        "metrics.jsonl": jsonl(metrics_line(s, max(steps) + 1) for s in steps),
        "config.json": compact(CONFIG) + b"\n",
    }
    files.update(extra)
    return files


# --------------------------------------------------------------------------------------------
# Cases.
# --------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One conformance case: a run directory and the findings it must (and must not) produce."""

    name: str
    description: str
    spec: str
    files: Files
    findings: list[dict[str, Any]] = field(default_factory=list)
    forbidden: list[str] = field(default_factory=list)
    no_errors: bool | None = None
    symlinks: dict[str, str] = field(default_factory=dict)
    run_is_file: bool = False
    exit_code: int | None = None
    filesystem_only: bool = False

    def expected(self) -> dict[str, Any]:
        """The ``expected.json`` document."""
        has_error = any(f["severity"] == "error" for f in self.findings)
        no_errors = (not has_error) if self.no_errors is None else self.no_errors
        exit_code = self.exit_code
        if exit_code is None:
            exit_code = 0 if no_errors else 1
        doc: dict[str, Any] = {
            "description": self.description,
            "spec": self.spec,
            "exit_code": exit_code,
            "findings": self.findings,
        }
        if self.forbidden:
            doc["forbidden_codes"] = sorted(set(self.forbidden))
        doc["no_errors"] = no_errors
        if self.filesystem_only or self.symlinks or self.run_is_file:
            doc["filesystem_only"] = True
        return doc


def F(code: str, severity: str, file: str, line: int | None = None,
      pointer: str = "") -> dict[str, Any]:
    """An expected finding."""
    return {"code": code, "severity": severity, "file": file, "line": line, "pointer": pointer}


CASES: list[Case] = []


def case(fn: Callable[[], Case]) -> Callable[[], Case]:
    """Register a case builder (cases are listed in definition order)."""
    CASES.append(fn())
    return fn


# ---- clean runs ----------------------------------------------------------------------------


@case
def _clean_flat() -> Case:
    return Case("clean_flat", "A complete rlio-style run in the flat layout: every file type, two "
                "iterations, a train and an eval split, timing charts. No warning or error.",
                "§1-§8", base_run("flat"), forbidden=CLEAN_FORBIDDEN)


@case
def _clean_nested() -> Case:
    return Case("clean_nested", "The same complete run in the nested layout (iteration_N/ "
                "folders). No warning or error.", "§1-§8", base_run("nested"),
                forbidden=CLEAN_FORBIDDEN)


@case
def _clean_async() -> Case:
    files = base_run("flat", 3, evals=())
    lines = [
        {"step": 0, "training_client/step": 0, "optim/lr": 4e-05, "env/all/reward/total": 0.25},
        {"step": 1, "training_client/step": 1, "optim/lr": 4e-05, "env/all/reward/total": 0.5},
        {"step": 1, "test/env/all/reward/total": 0.5, "test/env/all/correct": 0.5},
        {"step": 2, "training_client/step": 2, "optim/lr": 4e-05, "env/all/reward/total": 0.75},
        {"step": 3, "test/env/all/reward/total": 0.75, "test/env/all/correct": 0.75},
    ]
    files["metrics.jsonl"] = jsonl(lines)
    # Off-policy sampling: the sampler is one step behind the iteration.
    files[it_path("flat", 2, "rollout_summaries")] = jsonl(
        traj("train", 2, g, t, sampling_client_step=1) for g in range(2) for t in range(2))
    return Case("clean_async_eval_lines", "Async mode: `training_client/step` instead of "
                "`progress/batch`, an eval-only line repeating a step and one eval line one past "
                "the last iteration, sampling_client_step below iteration. Legitimate: no "
                "unexplained-order warning, no error.", "§3, §6, §9", files,
                forbidden=CLEAN_FORBIDDEN)


COOKBOOK_CONVERSATION = {
    "type": "conversation",
    "messages": [
        {"role": "user", "content": "Combien font 17 + 25 ? R\u00e9ponds en chiffres."},
        {"role": "assistant", "content": "17 + 25 = 42 \u2713 \u2014 \U0001f600"},
    ],
}


@case
def _clean_naming() -> Case:
    files = base_run("flat", 2, evals=("0", "gsm8k_main", "math-500.v2"))
    files["metrics.jsonl"] = jsonl([
        metrics_line(0, 2, **{"state_path": "tinker://run-7f3a/weights/000000",
                              "train/is_warmup": True, "0/env/all/reward/total": 0.5}),
        metrics_line(1, 2, **{"train/is_warmup": False, "gsm8k/main/env/all/correct": 0.5,
                              "math-500.v2/env/all/correct": None}),
    ])
    add_iteration(files, "flat", 1000000)  # seven digits: no padding needed
    return Case("clean_naming_and_values", "Evaluator labels `0` (a nameless evaluator), "
                "`gsm8k_main` and `math-500.v2`, an iteration past 999999 (seven digits), metrics "
                "values that are strings, booleans and null. Valid: no warning or error.",
                "§1, §3", files, forbidden=CLEAN_FORBIDDEN)


# A cookbook run may warn only about its documented quirks: tokens and an HTML-only iteration.
COOKBOOK_FORBIDDEN = [c for c in CLEAN_FORBIDDEN if c not in ("RL104", "RL411")]


def _cookbook_run(layout: str) -> tuple[Files, list[dict[str, Any]]]:
    """A run as the Tinker cookbook writes it, with every documented quirk; and its findings."""
    n = 3
    lines: list[dict[str, Any]] = []
    for i in range(n):
        lines.append(metrics_line(i, n))
    lines[0]["optim/entropy"] = float("nan")
    lines[1]["time/sample"] = float("inf")
    lines[1]["env/all/reward/min"] = float("-inf")
    lines.append({"step": n, "test/env/all/reward/total": 0.75, "test/env/all/correct": 0.75,
                  "test/time/total": 5.0})  # eval-only line at the end, one past the last batch
    config = dict(CONFIG)
    config.update({
        "log_path": "/home/user/runs/math-rl",
        "renderer": "<class 'tinker_cookbook.renderers.Qwen3Renderer'>",
        "reward_fn": {},
        "max_grad_norm": float("nan"),
        "comment": "r\u00e9sum\u00e9 \u2013 \u6570\u5b66",  # written as ASCII \uXXXX escapes
    })
    files: Files = {
        "metrics.jsonl": jsonl(lines, cookbook),
        "config.json": pretty(config),  # indent 2, no final newline
        "checkpoints.jsonl": jsonl([
            {"name": "000001", "batch": 1, "state_path": "tinker://run-7f3a/weights/000001",
             "sampler_path": "tinker://run-7f3a/sampler_weights/000001", "rolling": True,
             "loop_state": {"batch": 1, "epoch": 0, "rng": [1, 2, 3]}},
            {"name": "000002", "batch": 2, "state_path": "tinker://run-7f3a/weights/000002",
             "rolling": True, "loop_state": {"batch": 2, "epoch": 0, "rng": [4, 5, 6]}},
            {"name": "final", "batch": 3, "state_path": "tinker://run-7f3a/weights/final",
             "sampler_path": "tinker://run-7f3a/sampler_weights/final"},
        ], cookbook),
        "code.diff": b"",  # a clean work tree: an empty diff
        "timing_spans.jsonl": jsonl([
            {"step": 0, "spans": [{"name": "sample", "duration": 2.25, "wall_start": 1740830400.0,
                                   "wall_end": 1740830402.25}]},
            {"step": 1, "spans": [{"name": "sample", "duration": float("nan"),
                                   "wall_start": 1740830410.0, "wall_end": float("nan")}]},
        ], cookbook),
    }
    root = "/home/user/runs/math-rl"
    for i, started in ((0, "2025-03-01T12:00:00"), (1, "2025-03-01T12:03:07.518204")):
        for label in (None, "test"):
            title = f"RL Iteration {i}" if label is None else f"Eval test Iteration {i}"
            doc = logtree_doc(title, f"{root}/{it_path(layout, i, 'html', label)}",
                              started_at=started, conversation=COOKBOOK_CONVERSATION)
            files[it_path(layout, i, "logtree", label)] = pretty(doc)
            files[it_path(layout, i, "html", label)] = cookbook_html(title)
    split_recs = summaries("train", 0)
    split_recs[0]["trajectory_metrics"] = {"kl": float("nan"), "correct": 1.0}
    for rec in split_recs:  # newer cookbooks add stop_reason and a pass-through trace per step
        rec["steps"] = [
            {**{k: v for k, v in st.items() if k not in ("metrics", "logs")},
             "stop_reason": "stop", "metrics": st["metrics"], "logs": st["logs"],
             "trace": {"sampler": "tinker", "tokens": [1, 2]}}
            for st in rec["steps"]]
    files[it_path(layout, 0, "rollout_summaries")] = jsonl(split_recs, cookbook)
    files[it_path(layout, 1, "rollout_summaries")] = jsonl(summaries("train", 1), cookbook)
    files[it_path(layout, 0, "rollout_summaries", "test")] = b""  # no eval trajectory: 0 bytes
    files[it_path(layout, 1, "rollout_summaries", "test")] = jsonl(
        summaries("eval/test", 1, groups=1), cookbook)
    files[it_path(layout, 2, "html")] = html_doc("RL Iteration 2")  # old-style: HTML only
    findings = [
        F("RL104", "warning", "metrics.jsonl", 1),  # one per file, at the first token line
        F("RL104", "warning", "config.json"),
        F("RL104", "warning", "timing_spans.jsonl", 2),
        F("RL104", "warning", it_path(layout, 0, "rollout_summaries"), 1),
        F("RL204", "info", it_path(layout, 0, "logtree"), None, "/started_at"),
        F("RL204", "info", it_path(layout, 1, "logtree", "test"), None, "/started_at"),
        F("RL411", "warning", it_path(layout, 2, "html")),
    ]
    return files, findings


@case
def _cookbook_flat() -> Case:
    files, findings = _cookbook_run("flat")
    return Case("cookbook_quirks_flat", "A cookbook-written flat run with every documented "
                "quirk: NaN/Infinity/-Infinity tokens (metrics, config, timing spans, "
                "summaries), an eval-only metrics line at the end, rolling checkpoints with "
                "nested extra keys and a final one, an empty code.diff, a 0-byte eval summaries "
                "file, an HTML-only iteration, naive started_at with and without microseconds, "
                "indent-2 JSON without final newline, ASCII \\uXXXX escapes, HTML with an "
                "upper-case doctype and no final newline. Valid: warnings and infos only.",
                "§2, §3, §4, §5, §6, §7, §8", files, findings,
                forbidden=COOKBOOK_FORBIDDEN)


@case
def _cookbook_nested() -> Case:
    files, findings = _cookbook_run("nested")
    return Case("cookbook_quirks_nested", "The cookbook-quirk run in the nested layout (cookbook "
                "0.2+). Valid: warnings and infos only.", "§1, §2, §3, §5, §6, §7", files, findings,
                forbidden=COOKBOOK_FORBIDDEN)


TOKENS_061 = {"sampled": 18432, "prefill_cached": 4096, "prefill_uncached": 12288,
              "trained": 17920}


def _eval_event_061(step: int, elapsed: float, cost: float) -> dict[str, Any]:
    """An async-eval metrics line of cookbook 0.6.1 (``log_metrics_event``): the evaluator's
    metrics, the snapshot coordinates, and each metric again under eval/by_{step,cost,time}/."""
    evals = {"test/env/all/correct": 0.25 + 0.25 * step, "test/env/all/reward/total": 0.5 + step}
    line: dict[str, Any] = {"step": step, **evals,
                            "eval/snapshot/training_step": step,
                            "eval/snapshot/elapsed_seconds": elapsed,
                            "eval/snapshot/cumulative_cost_usd": cost,
                            "eval/completed_elapsed_seconds": elapsed + 4.5}
    for axis in ("step", "cost", "time"):
        line.update({f"eval/by_{axis}/{k}": v for k, v in evals.items()})
    line["eval/timing/time/total"] = 4.5
    return line


@case
def _cookbook_061() -> Case:
    n = 3
    files = base_run("nested", n, evals=("test",))
    lines: list[dict[str, Any]] = []
    for i in range(n):
        lines.append({**metrics_line(i, n), "time/sample": 2.25, "time/train_step": 1.0,
                      "time/total": 3.5, "tokens/sampled": 6144, "cost/step_usd": 0.04,
                      "cost/cumulative_usd": 0.04 * (i + 1), "async/staleness_mean": 0.5,
                      "total_cached_ob_tokens": 1024})
        lines.append(_eval_event_061(i, 10.0 * i + 3.5, 0.04 * (i + 1)))
    lines.append({"cost/total_usd": 0.12, "tokens/total": 18432})  # log_summary: no step
    files["metrics.jsonl"] = jsonl(lines, cookbook)
    files["checkpoints.jsonl"] = jsonl([
        {"name": "000002", "batch": 2, "state_path": "tinker://run-7f3a/weights/000002",
         "rolling": True, "cumulative_tokens": TOKENS_061,
         "discarded_tokens": {k: 0 for k in TOKENS_061}},
        {"name": "final", "batch": 3, "state_path": "tinker://run-7f3a/weights/final",
         "sampler_path": "tinker://run-7f3a/sampler_weights/final",
         "cumulative_tokens": TOKENS_061, "discarded_tokens": {k: 512 for k in TOKENS_061}},
    ], cookbook)
    files["trace_events.jsonl"] = jsonl([
        {"name": "sample", "ph": "B", "pid": 4242, "tid": 1, "ts": 1740830400000000.0,
         "args": {"step": 0}},
        {"name": "process_name", "ph": "M", "pid": 4242, "tid": 1, "ts": 0.0,
         "args": {"name": "train"}},
        {"name": "sample", "ph": "E", "pid": 4242, "tid": 1, "ts": 1740830402250000.0,
         "args": {}, "cat": "rl"},
    ], cookbook)
    files[".metrics.jsonl.4242.tmp"] = files["metrics.jsonl"][:40]
    files["iteration_000001/.train_rollout_summaries.jsonl.4242.tmp"] = b""
    return Case("cookbook_061_run", "What cookbook 0.6.1 writes: async-eval lines with "
                "eval/snapshot/* coordinates and eval/by_{step,cost,time}/* aliases, tokens/, "
                "cost/ and async/ keys, a log_summary row without step, span metrics without "
                "_async, trace events (B/E/M), timing_gantt.html pages, logs.log, checkpoints "
                "with cumulative_tokens/discarded_tokens and rolling, and two of the cookbook's "
                "own interrupted-write temp files (.<name>.<pid>.tmp): RL306, not unknown files.",
                "§1, §3, §5, §8", files,
                [F("RL306", "info", ".metrics.jsonl.4242.tmp"),
                 F("RL306", "info", "iteration_000001/.train_rollout_summaries.jsonl.4242.tmp")],
                forbidden=["RL301", "RL302", "RL408", *CLEAN_FORBIDDEN])


@case
def _schema_checkpoint_tokens() -> Case:
    files = metrics_only([0, 1, 2])
    files["checkpoints.jsonl"] = jsonl([
        ckpt("000001", 1, cumulative_tokens={**TOKENS_061, "sampled": -1}),
        ckpt("000002", 2, discarded_tokens={**TOKENS_061, "trained": 1.5}),
        ckpt("000003", 3, rolling="yes"),
    ])
    return Case("schema_checkpoint_tokens", "Checkpoint token counts and rolling: a negative "
                "count is a warning (line 1), a fractional count (line 2) and a string rolling "
                "(line 3) are errors.", "§5", files,
                [F("RL205", "warning", "checkpoints.jsonl", 1, "/cumulative_tokens/sampled"),
                 F("RL201", "error", "checkpoints.jsonl", 2, "/discarded_tokens/trained"),
                 F("RL201", "error", "checkpoints.jsonl", 3, "/rolling")], exit_code=1)


# ---- resume, rewind, sidecars, metrics order -----------------------------------------------


@case
def _resumed() -> Case:
    steps = [0, 1, 2, 3, 4, 3, 4, 5]
    files = metrics_only(steps)
    files["checkpoints.jsonl"] = jsonl([ckpt("000003", 3), ckpt("000006", 6)])
    return Case("resumed_run", "A crash after iteration 4 and a resume from the checkpoint at "
                "batch 3: metrics drop back from step 4 to 3 (line 6). Explained: info, not a "
                "warning.", "§3, §5, §9", files,
                [F("RL407", "info", "metrics.jsonl", 6, "/step")], forbidden=["RL408"])


@case
def _rewound() -> Case:
    files = metrics_only([0, 1, 2, 3])
    files["checkpoints.jsonl"] = jsonl([ckpt("000002", 2), ckpt("000004", 4)])
    files["metrics.jsonl.superseded"] = jsonl([metrics_line(2, 4), metrics_line(3, 4)])
    files["checkpoints.jsonl.torn"] = b'{"name": "000005", "batch": 5, "state_pa'
    return Case("rewound_with_sidecars", "A run rlio rewound on resume: the superseded metrics "
                "lines kept in metrics.jsonl.superseded and a repaired torn checkpoint tail kept "
                "in checkpoints.jsonl.torn. Sidecars are reported (info), not parsed as run files.",
                "§1, §2, §5", files,
                [F("RL305", "info", "metrics.jsonl.superseded"),
                 F("RL305", "info", "checkpoints.jsonl.torn")],
                forbidden=["RL103", "RL102", "RL301", "RL408"])


@case
def _timing_repeats() -> Case:
    files = metrics_only([0, 1, 2, 3])
    files["checkpoints.jsonl"] = jsonl([ckpt("000002", 2)])
    files["metrics.jsonl.pre_resume_000002"] = jsonl(metrics_line(s, 4) for s in range(4))
    files["timing_spans.jsonl"] = jsonl(
        {"step": s, "spans": [{"name": "sample", "duration": 1.0, "wall_start": float(k),
                               "wall_end": float(k + 1)}]}
        for k, s in enumerate([0, 1, 2, 3, 2, 3]))
    return Case("timing_spans_repeated_steps", "A resume from the checkpoint at batch 2 that "
                "rewound metrics.jsonl (the cookbook's own copy kept aside) but left the crashed "
                "steps' timing spans in timing_spans.jsonl: steps 2 and 3 repeat (lines 5, 6).",
                "§5, §8, §9", files,
                [F("RL415", "warning", "timing_spans.jsonl", 5, "/step"),
                 F("RL415", "warning", "timing_spans.jsonl", 6, "/step"),
                 F("RL305", "info", "metrics.jsonl.pre_resume_000002")],
                forbidden=["RL408"])


@case
def _cookbook_pre_resume() -> Case:
    files = metrics_only([0, 1, 2, 3])
    files["checkpoints.jsonl"] = jsonl([ckpt("000002", 2)])
    files["metrics.jsonl.pre_resume_000002"] = jsonl(metrics_line(s, 4) for s in range(4))
    return Case("cookbook_pre_resume_sidecar", "The cookbook 0.6.1 rewinds metrics.jsonl on "
                "resume itself and keeps the original as metrics.jsonl.pre_resume_NNNNNN: a known "
                "sidecar (info), not an unknown file.", "§1, §5", files,
                [F("RL305", "info", "metrics.jsonl.pre_resume_000002")],
                forbidden=["RL301", "RL302", "RL408"])


@case
def _cookbook_html_only() -> Case:
    files = metrics_only([0, 1, 2])
    for n in range(3):
        add_iteration(files, "flat", n, logtree=False, summaries_=False)
        add_iteration(files, "flat", n, "test", logtree=False, summaries_=False)
    return Case("cookbook_html_only", "A run of a release that wrote HTML reports only (cookbook "
                "0.1.0): one run-level info, not a warning per page.", "§7, §9", files,
                [F("RL413", "info", "")], forbidden=["RL411"])


@case
def _final_summary_row() -> Case:
    files = metrics_only([0, 1, 2])
    files["metrics.jsonl"] += jsonl([{"step": 3, "cost/total_usd": 1.25, "tokens/total": 4096}])
    return Case("final_summary_row", "A step-stamped cost/token summary row after the last "
                "iteration is explained (info) as a final summary row.", "§3, §9", files,
                [F("RL407", "info", "metrics.jsonl", 4, "/step")], forbidden=["RL408"])


@case
def _metrics_jump() -> Case:
    return Case("metrics_unexplained_jump", "Metrics step goes 0, 1, 4: an unexplained gap "
                "(warning at the line of step 4).", "§3, §9",
                metrics_only([0, 1, 4]), [F("RL408", "warning", "metrics.jsonl", 3, "/step")])


@case
def _metrics_drop() -> Case:
    files = metrics_only([0, 1, 2, 3, 1, 2])
    files["checkpoints.jsonl"] = jsonl([ckpt("000003", 3)])
    return Case("metrics_unexplained_drop", "Metrics step drops from 3 back to 1 but no "
                "checkpoint has batch 1: unexplained (warning at line 5).", "§3, §9", files,
                [F("RL408", "warning", "metrics.jsonl", 5, "/step")], forbidden=["RL407"])


@case
def _ckpt_beyond() -> Case:
    files = metrics_only([0, 1, 2])
    files["checkpoints.jsonl"] = jsonl([ckpt("000002", 2), ckpt("000009", 9)])
    return Case("checkpoint_beyond_metrics", "A resumable checkpoint at batch 9 while metrics "
                "end at step 2 (allowed: batch <= 3).", "§9", files,
                [F("RL409", "warning", "checkpoints.jsonl", 2, "/batch")])


@case
def _ckpt_no_batch() -> Case:
    files = metrics_only([0, 1, 2, 3])
    files["checkpoints.jsonl"] = jsonl([
        ckpt("000002", 2),
        ckpt("000003", None, state=False),  # sampler-only, not resumable: no batch is fine
        ckpt("000004", None),
    ])
    return Case("resumable_checkpoint_without_batch", "The last resumable checkpoint record "
                "(has state_path) has no batch: the cookbook's loop would crash resuming from "
                "it. A sampler-only record without batch (line 2) is fine.", "§5", files,
                [F("RL501", "error", "checkpoints.jsonl", 3)])


@case
def _ckpt_float_batch() -> Case:
    files = metrics_only([0, 1, 2, 3, 4, 5])
    files["checkpoints.jsonl"] = jsonl([ckpt("000002", 2), {**ckpt("000005", None), "batch": 5.0}])
    return Case("resumable_checkpoint_float_batch", "The last resumable checkpoint's batch is "
                "5.0: an integral float, which the schema's integer admits but no restart can "
                "use (batch must be an int from 0 to 2**63 - 1); the writer refuses it.", "§5",
                files, [F("RL501", "error", "checkpoints.jsonl", 2)])


@case
def _metrics_forward_jump_onto_checkpoint() -> Case:
    files = metrics_only([0, 1, 2, 5])
    files["checkpoints.jsonl"] = jsonl([ckpt("000005", 5)])
    return Case("metrics_forward_jump_onto_checkpoint", "Steps jump from 2 to 5 and a checkpoint "
                "sits at batch 5: a crash between a checkpoint and its metrics line loses one "
                "line, not two, and a resume re-logs steps, it never skips forward, so the jump "
                "is unexplained (RL408), not RL407.", "§9", files,
                [F("RL408", "warning", "metrics.jsonl", 4, "/step")], forbidden=["RL407"])


@case
def _metrics_empty_key() -> Case:
    files = metrics_only([0, 1, 2])
    lines = [metrics_line(s, 3) for s in range(3)]
    lines[1][""] = 1.0
    lines[2]["loss/"] = 1.0
    files["metrics.jsonl"] = jsonl(lines)
    return Case("metrics_empty_and_slash_keys", "An empty metric key (line 2) is an error (no "
                "reader can name it; the writer refuses it); a key ending in '/' (line 3) is a "
                "warning (a name part is missing).", "§3", files,
                [F("RL201", "error", "metrics.jsonl", 2, "/"),
                 F("RL205", "warning", "metrics.jsonl", 3, "/loss~1")])


# ---- parse and I/O -------------------------------------------------------------------------


@case
def _torn_metrics() -> Case:
    files = base_run("flat", 3, evals=(), extras=False)
    files["metrics.jsonl"] = jsonl(metrics_line(i, 4) for i in range(3)) + b'{"step":3,"progress/ba'
    return Case("torn_metrics", "A crash mid-append leaves a torn last line in metrics.jsonl "
                "(no final newline, not JSON): a warning, not an error.", "§2", files,
                [F("RL103", "warning", "metrics.jsonl", 4)], forbidden=["RL102"])


@case
def _torn_unterminated_json() -> Case:
    files = metrics_only([0, 1])
    files["metrics.jsonl"] += compact(metrics_line(2, 3))
    return Case("torn_metrics_unterminated", "The last metrics line is complete JSON but has no "
                "final newline: still a torn line (the write may have been cut exactly there), "
                "a warning.", "§2", files, [F("RL103", "warning", "metrics.jsonl", 3)],
                forbidden=["RL102"])


@case
def _torn_append_only() -> Case:
    files = base_run("nested", 2, evals=())
    files["checkpoints.jsonl"] = jsonl([ckpt("000001", 1)]) + b'{"name":"000002","batch":2,"sta'
    files["timing_spans.jsonl"] += b'{"step":2,"spans":[{"name":"sam'
    return Case("torn_checkpoints_and_spans", "Torn last lines in checkpoints.jsonl and "
                "timing_spans.jsonl (append-only files): warnings.", "§2, §5", files,
                [F("RL103", "warning", "checkpoints.jsonl", 2),
                 F("RL103", "warning", "timing_spans.jsonl", 3)], forbidden=["RL102"])


@case
def _torn_replaced() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    path = it_path("flat", 0, "rollout_summaries")
    files[path] = jsonl(summaries("train", 0, 1, 2)) + compact(traj("train", 0, 1, 0))[:60]
    return Case("torn_rollout_summaries", "A rollout-summaries file is replaced whole, never "
                "appended: an unterminated, unparseable last line there is an error.", "§2, §6",
                files, [F("RL113", "error", path, 3)])


@case
def _invalid_json_middle() -> Case:
    files = base_run("flat", 1, evals=())
    files["metrics.jsonl"] = raw_lines(
        compact(metrics_line(0, 3)), b'{"step": 1, "progress/batch": 1,',
        compact(metrics_line(2, 3)))
    event = b'{"name":"sample","ph":"X","pid":1,"tid":1,"ts":0,"args":{}}'
    files["trace_events.jsonl"] = raw_lines(b'{"name":"sample","ph":"X","pi' + event, event)
    files["checkpoints.jsonl"] = raw_lines(compact(ckpt("000001", 1)), b"not json",
                                           compact(ckpt("000002", 2)))
    return Case("invalid_json_mid_file", "An object cut short in the middle of an append-only "
                "JSONL file (alone, or with the restart's first line glued to it) is crash damage "
                "readers skip: a warning, not a torn line, because lines follow. Any other "
                "non-JSON line there is an error.", "§2", files,
                [F("RL117", "warning", "metrics.jsonl", 2),
                 F("RL117", "warning", "trace_events.jsonl", 1),
                 F("RL102", "error", "checkpoints.jsonl", 2)], forbidden=["RL103"])


@case
def _invalid_json_document() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["config.json"] = b'{"model_name": "Qwen/Qwen3-4B", "learning_rate": 4e-05,, }'
    lt = it_path("flat", 0, "logtree")
    files[lt] = b'{"title": "RL Iteration 0", "started_at": "2025-03-01T12:00:00", "root": {'
    return Case("invalid_json_document", "config.json and a logtree JSON that are not JSON "
                "(a syntax error; a truncated document): errors with no line.", "§2, §4, §7",
                files, [F("RL102", "error", "config.json"), F("RL102", "error", lt)])


@case
def _invalid_utf8() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["metrics.jsonl"] = raw_lines(
        compact(metrics_line(0, 3)),
        b'{"step":1,"progress/batch":1,"note":"caf\xe9"}',
        compact(metrics_line(2, 3)))
    lt = it_path("flat", 0, "logtree")
    files[lt] = files[lt].replace(b"Group Rollout", b"Group \xc3\x28Rollout")
    rs = it_path("flat", 0, "rollout_summaries")
    files[rs] = files[rs].replace(b'"arithmetic"', b'"arith\xffmetic"', 1)
    return Case("invalid_utf8", "Invalid UTF-8 bytes inside a metrics line (latin-1 é), a logtree "
                "document and the first rollout-summary line: errors.", "§2", files,
                [F("RL101", "error", "metrics.jsonl", 2), F("RL101", "error", lt),
                 F("RL101", "error", rs, 1)])


@case
def _blank_line() -> Case:
    files = metrics_only([0, 1, 2])
    files["metrics.jsonl"] = raw_lines(
        compact(metrics_line(0, 3)), compact(metrics_line(1, 3)), b"", compact(metrics_line(2, 3)))
    files["checkpoints.jsonl"] = raw_lines(compact(ckpt("000001", 1)), b"   ",
                                           compact(ckpt("000002", 2)))
    return Case("blank_lines", "A blank line in metrics.jsonl and a whitespace-only line in "
                "checkpoints.jsonl: tolerated by readers, reported as warnings.", "§2", files,
                [F("RL105", "warning", "metrics.jsonl", 3),
                 F("RL105", "warning", "checkpoints.jsonl", 2)],
                forbidden=["RL102", "RL408"])


@case
def _too_many() -> Case:
    files = metrics_only([0])
    files["metrics.jsonl"] += b"{\n" * 2000
    return Case("too_many_findings", "2,000 invalid lines in metrics.jsonl: the first are "
                "listed, the rest summarized by one capping finding.", "§9, §10", files,
                [F("RL102", "error", "metrics.jsonl", 2), F("RL112", "warning", "metrics.jsonl")])


def _deep_logtree(levels: int) -> bytes:
    """A logtree document whose root data nests ``levels`` arrays (tiny on disk)."""
    head = (b'{"title":"RL Iteration 0","started_at":"2025-03-01T12:00:00+00:00","path":null,'
            b'"root":{"tag":"body","attrs":{},"children":[],"data":{"type":"blob","value":')
    return head + b"[" * levels + b"]" * levels + b"}}}\n"


@case
def _too_deep() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    lt = it_path("flat", 0, "logtree")
    files[lt] = _deep_logtree(2000)
    files["metrics.jsonl"] = raw_lines(
        compact(metrics_line(0, 2)),
        b'{"step":1,"blob":' + b"[" * 1500 + b"]" * 1500 + b"}",
        compact(metrics_line(1, 2)))  # a line follows: not a torn tail
    return Case("logtree_too_deep", "A logtree JSON nested 2,000 levels deep and a metrics line "
                "nested 1,500 deep, beyond what orjson (1,024) and Python's json accept: error "
                "findings, never a crash.", "§2, §7",
                files, [F("RL106", "error", lt), F("RL106", "error", "metrics.jsonl", 2)])


@case
def _deep_ok() -> Case:
    files = base_run("nested", 1, evals=(), extras=False)
    lt = it_path("nested", 0, "logtree")
    inner: dict[str, Any] = node("p", "the deepest section")
    for _ in range(200):
        inner = node("div", inner)
    doc = logtree_doc("RL Iteration 0", f"{RUN_ROOT}/{it_path('nested', 0, 'html')}",
                      started_at=RLIO_TIME.format(s=0), extra_children=[inner])
    files[lt] = compact(doc) + b"\n"
    return Case("logtree_deep_valid", "A logtree whose nodes nest 200 deep (about 400 JSON "
                "levels, under every parser's limit): valid. A validator must not fail on depth.",
                "§7", files, forbidden=CLEAN_FORBIDDEN)


@case
def _empty_config() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["config.json"] = b""
    lt = it_path("flat", 0, "logtree")
    files[lt] = b"\n  \n"
    return Case("empty_json_documents", "config.json is 0 bytes and a logtree JSON holds only "
                "whitespace: a JSON document file must not be empty (unlike a JSONL file).",
                "§2, §4, §7", files,
                [F("RL111", "error", "config.json"), F("RL111", "error", lt)])


@case
def _config_dir() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    del files["config.json"]
    files["config.json/x"] = b"placeholder: git stores no empty directory\n"
    return Case("config_is_directory", "config.json is a directory: the file cannot be read "
                "(error), never a crash.", "§1, §10", files,
                [F("RL107", "error", "config.json")], filesystem_only=True)


@case
def _code_diff() -> Case:
    files = base_run("flat", 1, evals=())
    files["code.diff"] = CODE_DIFF + b"+name = 'caf\xe9'\n"
    return Case("code_diff_not_utf8", "code.diff holds a latin-1 byte: a warning, not an error.",
                "§8", files, [F("RL108", "warning", "code.diff")], forbidden=["RL101"])


@case
def _missing_metrics() -> Case:
    files = base_run("flat", 1, evals=())
    del files["metrics.jsonl"]
    return Case("missing_metrics", "metrics.jsonl is required and absent.", "§1", files,
                [F("RL109", "error", "metrics.jsonl")])


@case
def _missing_config() -> Case:
    files = base_run("nested", 1, evals=())
    del files["config.json"]
    return Case("missing_config", "config.json is absent from a nested run that holds records: a "
                "warning (the run reads and resumes; the writer cannot force a config first).",
                "§1", files, [F("RL118", "warning", "config.json")], forbidden=["RL109"])


@case
def _fresh_empty_metrics() -> Case:
    files = base_run("flat", 1, evals=(), per_iteration=False)
    files["metrics.jsonl"] = b""
    files["checkpoints.jsonl"] = b""
    files["timing_spans.jsonl"] = b""
    files["trace_events.jsonl"] = b""
    return Case("fresh_run_empty_metrics", "A run that has just started: config written, "
                "metrics.jsonl, checkpoints.jsonl, timing_spans.jsonl and trace_events.jsonl "
                "still 0 bytes (valid JSONL). Info only.",
                "§1, §2", files, [F("RL116", "info", "metrics.jsonl")],
                forbidden=CLEAN_FORBIDDEN)


@case
def _temp_file() -> Case:
    files = base_run("nested", 1, evals=(), extras=False)
    tmp = "iteration_000000/.train_logtree.json.rlio-tmp-9c1e7a0b"
    files[tmp] = files[it_path("nested", 0, "logtree")][:50]
    files[".config.json.rlio-tmp-51d2f3aa"] = b""
    return Case("leftover_temp_files", "Temporary files of interrupted atomic writes "
                "(.<name>.rlio-tmp-<hex>) next to their targets: info, not parsed.", "§1", files,
                [F("RL306", "info", tmp), F("RL306", "info", ".config.json.rlio-tmp-51d2f3aa")],
                forbidden=CLEAN_FORBIDDEN)


@case
def _run_is_file() -> Case:
    return Case("run_is_a_file", "The run location is a regular file, not a directory: the run "
                "cannot be read. The CLI exits 2 with no report; the API raises.", "§10", {},
                run_is_file=True, exit_code=2, no_errors=True)


@case
def _config_only_not_a_run() -> Case:
    return Case("not_a_run_config_only", "A folder holding only config.json (a model folder, "
                "say) is not a run: a run holds metrics.jsonl, checkpoints.jsonl or per-iteration "
                "files, or config.json together with code.diff. The CLI exits 2 with no report "
                "(\"no run found\"); the API raises.", "§1",
                {"config.json": compact(CONFIG) + b"\n"}, exit_code=2, no_errors=True)


@case
def _config_and_code_diff() -> Case:
    return Case("config_and_code_diff_is_a_run", "config.json together with code.diff is a run "
                "that has logged nothing yet: metrics.jsonl missing is RL116 info while the run "
                "holds no record.", "§1", {"config.json": compact(CONFIG) + b"\n",
                                           "code.diff": CODE_DIFF},
                [F("RL116", "info", "metrics.jsonl")], no_errors=True)


@case
def _long_evaluator_label() -> Case:
    return Case("long_evaluator_label", "A 120-character evaluator label, written uncut as the "
                "cookbook writes it (every file name fits 255 bytes): clean.", "§1",
                base_run("flat", 2, evals=("e" * 120,)), no_errors=True,
                forbidden=CLEAN_FORBIDDEN)


# ---- schema, per file type -----------------------------------------------------------------


@case
def _schema_metrics_nested() -> Case:
    files = metrics_only([0, 1, 2])
    files["metrics.jsonl"] = jsonl([
        metrics_line(0, 3),
        {"step": 1, "progress/batch": 1, "train/extra": {"a": 1}},
        {"step": 2, "progress/batch": 2, "env/all/tags": ["a", "b"]},
        [3, 0.5],
    ])
    return Case("schema_metrics_nested_value", "Metrics values must be scalars: a nested object "
                "(line 2) and an array (line 3) are errors naming the key; a line that is not an "
                "object (line 4) is an error for the whole record.", "§3", files,
                [F("RL201", "error", "metrics.jsonl", 2, "/train~1extra"),
                 F("RL201", "error", "metrics.jsonl", 3, "/env~1all~1tags"),
                 F("RL201", "error", "metrics.jsonl", 4, "")])


@case
def _schema_metrics_range() -> Case:
    files = metrics_only([0, 1, 2])
    files["metrics.jsonl"] = jsonl([
        {"step": -1, "progress/batch": 0},
        {"step": 0, "progress/batch": 0, "optim/lr": -0.001},
        {"step": 1, "progress/batch": 1, "progress/done_frac": 1.5},
        {"step": 2, "progress/batch": 2, "time/sample:count": 2.5},
    ])
    return Case("schema_metrics_ranges", "Negative step and a non-integer span count (types: "
                "errors); a negative learning rate and done_frac above 1 (ranges: warnings).",
                "§3", files,
                [F("RL201", "error", "metrics.jsonl", 1, "/step"),
                 F("RL205", "warning", "metrics.jsonl", 2, "/optim~1lr"),
                 F("RL205", "warning", "metrics.jsonl", 3, "/progress~1done_frac"),
                 F("RL201", "error", "metrics.jsonl", 4, "/time~1sample:count")])


@case
def _schema_checkpoint() -> Case:
    files = metrics_only([0, 1, 2, 3])
    files["checkpoints.jsonl"] = jsonl([
        ckpt("000001", 1),
        {"batch": 2, "state_path": "tinker://run-7f3a/weights/000002"},
        ckpt("", 3),
        ckpt("000004", 4, state=False, sampler_path=""),
        {"name": "final", "batch": 4, "final": "yes",
         "state_path": "tinker://run-7f3a/weights/final"},
        {"name": "final", "batch": 4, "epoch": None,
         "state_path": "tinker://run-7f3a/weights/final"},
    ])
    return Case("schema_checkpoint", "Checkpoint records: no name (line 2), an empty name "
                "(line 3), an empty sampler_path (line 4), a non-boolean final (line 5), an "
                "absent key written as null (line 6).", "§5", files,
                [F("RL201", "error", "checkpoints.jsonl", 2, ""),
                 F("RL201", "error", "checkpoints.jsonl", 3, "/name"),
                 F("RL201", "error", "checkpoints.jsonl", 4, "/sampler_path"),
                 F("RL201", "error", "checkpoints.jsonl", 5, "/final"),
                 F("RL201", "error", "checkpoints.jsonl", 6, "/epoch")])


def _summaries_case(name: str, description: str, layout: str, recs: list[bytes],
                    findings: Callable[[str], list[dict[str, Any]]], spec: str = "§6",
                    label: str | None = None, **kw: Any) -> Case:
    files = base_run(layout, 2, evals=("test",), extras=False)
    path = it_path(layout, 1, "rollout_summaries", label)
    files[path] = raw_lines(*recs)
    return Case(name, description, spec, files, findings(path), **kw)


@case
def _schema_rollout_types() -> Case:
    def rec(t: int, **over: Any) -> bytes:
        return compact(traj("train", 1, 0, t, **over))
    bad_step = traj("train", 1, 0, 2)
    bad_step["steps"][0]["reward"] = "0.5"
    return _summaries_case(
        "schema_rollout_wrong_types", "Rollout summaries with wrong types: group_idx a string, "
        "tags a string, a step reward a string, sampling_client_step negative.", "flat",
        [rec(0, group_idx="0"), rec(1, tags="arithmetic"), compact(bad_step),
         rec(3, sampling_client_step=-1)],
        lambda p: [F("RL201", "error", p, 1, "/group_idx"), F("RL201", "error", p, 2, "/tags"),
                   F("RL201", "error", p, 3, "/steps/0/reward"),
                   F("RL201", "error", p, 4, "/sampling_client_step")])


@case
def _schema_rollout_missing() -> Case:
    r1 = traj("train", 1, 0, 0)
    del r1["final_ob_len"]
    r2 = traj("train", 1, 0, 1)
    del r2["steps"][0]["logs"]
    r3 = traj("train", 1, 0, 2)
    del r3["schema_version"]
    return _summaries_case(
        "schema_rollout_missing_keys", "Rollout summaries missing final_ob_len (line 1), a "
        "step's logs (line 2) and schema_version (line 3; nested layout).", "nested",
        [compact(r1), compact(r2), compact(r3)],
        lambda p: [F("RL201", "error", p, 1, ""), F("RL201", "error", p, 2, "/steps/0"),
                   F("RL201", "error", p, 3, "")])


@case
def _schema_rollout_extra() -> Case:
    r1 = traj("eval/test", 1, 0, 0)
    r1["reward_breakdown"] = {"format": 0.1}
    r2 = traj("eval/test", 1, 0, 1)
    r2["steps"][0]["stop_reason"] = 5  # extra step keys are free, but stop_reason is a string
    r3 = traj("eval/test", 1, 0, 2)
    r3["schema_version"] = 2
    return _summaries_case(
        "schema_rollout_extra_keys", "Eval rollout summaries with an unknown top-level key, a "
        "non-string stop_reason in a step, and schema_version 2.", "flat",
        [compact(r1), compact(r2), compact(r3)],
        lambda p: [F("RL201", "error", p, 1, ""),
                   F("RL201", "error", p, 2, "/steps/0/stop_reason"),
                   F("RL201", "error", p, 3, "/schema_version")], label="test")


@case
def _schema_logtree_node() -> Case:
    files = base_run("flat", 1, evals=("test",), extras=False)
    train, ev = it_path("flat", 0, "logtree"), it_path("flat", 0, "logtree", "test")
    doc = json.loads(files[train])
    doc["root"]["attrs"] = {"id": 5}
    files[train] = compact(doc) + b"\n"
    doc = json.loads(files[ev])
    del doc["root"]["children"]
    files[ev] = compact(doc) + b"\n"
    return Case("schema_logtree_bad_node", "Logtree nodes breaking the node shape: an attribute "
                "value that is not a string; a node without children.", "§7", files,
                [F("RL201", "error", train, None, "/root/attrs/id"),
                 F("RL201", "error", ev, None, "/root")])


@case
def _schema_logtree_message() -> Case:
    files = base_run("nested", 1, evals=("test",), extras=False)
    train, ev = it_path("nested", 0, "logtree"), it_path("nested", 0, "logtree", "test")
    msgs: list[dict[str, Any]] = [{"content": "no role"}, {"role": "assistant", "content": "ok"}]
    doc = logtree_doc("RL Iteration 0", None, started_at=RLIO_TIME.format(s=0))
    doc["root"]["data"] = {"type": "conversation", "messages": msgs}
    doc["root"]["children"] = []
    files[train] = compact(doc) + b"\n"
    msgs = [{"role": "user", "content": "add"},
            {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function", "id": "c1", "function": {"name": "add"}}]}]
    doc = logtree_doc("Eval test Iteration 0", None, started_at=RLIO_TIME.format(s=0))
    doc["root"]["data"] = {"type": "conversation", "messages": msgs}
    doc["root"]["children"] = []
    files[ev] = compact(doc) + b"\n"
    return Case("schema_logtree_bad_conversation", "Conversation data breaking the message shape "
                "(nested layout): a message without role; a tool call without arguments.", "§7",
                files,
                [F("RL201", "error", train, None, "/root/data/messages/0"),
                 F("RL201", "error", ev, None, "/root/data/messages/1/tool_calls/0/function")])


@case
def _schema_timing() -> Case:
    files = base_run("flat", 2, evals=())
    files["timing_spans.jsonl"] = jsonl([
        {"step": 0, "spans": [{"name": "sample", "duration": 1.0, "wall_start": 0.0,
                               "wall_end": 1.0}]},
        {"step": 1, "spans": [{"name": "sample", "duration": -1.0, "wall_start": 2.0,
                               "wall_end": 1.0}]},
        {"step": 2, "durations": {"sample": 1.0}},
    ])
    return Case("schema_timing_spans", "timing_spans.jsonl: a negative duration (line 2: a "
                "range, a warning) and a record without spans (line 3: an error).", "§8", files,
                [F("RL205", "warning", "timing_spans.jsonl", 2, "/spans/0/duration"),
                 F("RL201", "error", "timing_spans.jsonl", 3, "")])


@case
def _schema_trace() -> Case:
    files = base_run("nested", 1, evals=())
    files["trace_events.jsonl"] = jsonl([
        {"name": "sample", "ph": "B", "pid": 1, "tid": 1, "ts": 0, "args": {}},
        {"name": "sample", "pid": 1, "tid": 1, "ts": 5, "args": {}},
        {"name": "sample", "ph": "E", "pid": 1.5, "tid": 1, "ts": 9, "args": {}},
    ])
    return Case("schema_trace_events", "trace_events.jsonl: an event without ph (line 2) and a "
                "fractional pid (line 3).", "§8", files,
                [F("RL201", "error", "trace_events.jsonl", 2, ""),
                 F("RL201", "error", "trace_events.jsonl", 3, "/pid")])


def capture_sample(it: int, g: int, **over: Any) -> dict[str, Any]:
    """A ``capture/sample.jsonl`` record as the cookbook 0.6.1's capture writes it (§8)."""
    rec: dict[str, Any] = {
        "kind": "sample", "scope": {"run_id": "run-1", "split": "train", "iteration": it,
                                    "group_idx": g},
        "created_at": 1764547200.5 + it, "num_samples": 2, "sampling_session_id": "session-1",
        "seq_id": 4611686018427387 + 2 * it + g, "model_path": "tinker://run-1/sampler/000000",
        "base_model": "Qwen/Qwen3-4B", "prompt_tokens": [1, 2, 3], "prompt_length": 3,
        "sampling_params": {"max_tokens": 64, "temperature": 1.0, "top_p": 1.0, "top_k": -1,
                            "seed": None},
        "samples": [{"tokens": [11, 12], "logprobs": [-0.5, -0.25], "stop_reason": "stop"}] * 2,
        "status": "ok", "latency_sec": 0.25,
    }
    rec.update(over)
    return rec


def capture_op(it: int, op: str, **over: Any) -> dict[str, Any]:
    """A ``capture/train_op.jsonl`` record as the cookbook 0.6.1's capture writes it (§8)."""
    rec: dict[str, Any] = {"kind": "train_op", "op": op,
                           "scope": {"run_id": "run-1", "split": "train", "iteration": it},
                           "created_at": 1764547201.0 + it, "model_id": "model-1"}
    rec.update({"forward_backward": {"num_data": 4},
                "save_weights_for_sampler": {"name": f"{it + 1:06d}"},
                "optim_step": {"hyperparams": {"learning_rate": 4e-05, "beta1": 0.9,
                                               "beta2": 0.95, "eps": 1e-08,
                                               "weight_decay": 0.0, "grad_clip_norm": None}},
                }.get(op, {}))
    rec.update({"status": "ok", "latency_sec": 0.5})
    if op == "forward_backward":
        rec["metrics"] = {"loss:sum": 1.5}
    rec.update(over)
    return rec


@case
def _capture_061() -> Case:
    files = base_run("nested", 2, evals=())
    files["capture/sample.jsonl"] = jsonl(
        [capture_sample(it, g) for it in range(2) for g in range(2)], cookbook)
    files["capture/train_op.jsonl"] = jsonl(
        [capture_op(it, op) for it in range(2)
         for op in ("forward_backward", "optim_step", "save_weights_for_sampler")], cookbook)
    files["capture/reward.jsonl"] = jsonl(
        [{"kind": "reward", "scope": {"run_id": "run-1"}, "created_at": 1764547202.0,
          "value": 1.0}], cookbook)
    return Case("cookbook_061_capture", "The cookbook 0.6.1's token capture: capture/sample.jsonl "
                "and capture/train_op.jsonl are validated by their schemas; a kind without a "
                "schema (reward) is reported as info and checked for kind, scope and created_at.",
                "§8", files, [F("RL307", "info", "capture/reward.jsonl")],
                forbidden=[*CLEAN_FORBIDDEN, "RL301", "RL308"])


@case
def _capture_bad() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["capture/sample.jsonl"] = jsonl([
        capture_sample(0, 0),
        capture_op(0, "optim_step"),
        {k: v for k, v in capture_sample(0, 1).items() if k != "samples"},
        capture_sample(0, 1, samples=[{"tokens": [1, -2], "logprobs": None,
                                       "stop_reason": "stop"}]),
    ], cookbook)
    files["capture/train_op.jsonl"] = jsonl([capture_op(0, "optim_step", scope=[0])], cookbook)
    files["capture/trace.jsonl"] = jsonl([{"kind": "trace", "scope": {}}], cookbook)
    return Case("schema_capture", "Token-capture records: a train_op record in the sample file "
                "(line 2, RL308), an ok sample without samples (line 3), a negative token "
                "(line 4), a scope that is not an object, and a record of an unknown kind "
                "without created_at.", "§8", files,
                [F("RL308", "error", "capture/sample.jsonl", 2, "/kind"),
                 F("RL201", "error", "capture/sample.jsonl", 2, ""),
                 F("RL201", "error", "capture/sample.jsonl", 3, ""),
                 F("RL201", "error", "capture/sample.jsonl", 4, "/samples/0/tokens/1"),
                 F("RL201", "error", "capture/train_op.jsonl", 1, "/scope"),
                 F("RL307", "info", "capture/trace.jsonl"),
                 F("RL201", "error", "capture/trace.jsonl", 1, "")])


@case
def _schema_config() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["config.json"] = b'[\n  "model_name",\n  "Qwen/Qwen3-4B"\n]'
    return Case("schema_config_not_object", "config.json is a JSON array, not an object.", "§4",
                files, [F("RL201", "error", "config.json", None, "")])


@case
def _key_order() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["metrics.jsonl"] = raw_lines(b'{"progress/batch":0,"step":0,"optim/lr":4e-05}')
    files["checkpoints.jsonl"] = raw_lines(
        b'{"batch":1,"name":"000001","state_path":"tinker://run-7f3a/weights/000001"}')
    rs = it_path("flat", 0, "rollout_summaries")
    rec = traj("train", 0, 0, 0)
    reordered = {"split": rec.pop("split"), **rec}
    files[rs] = jsonl([reordered, traj("train", 0, 0, 1)])
    return Case("key_order", "Keys out of the documented order: step not first in a metrics "
                "line; batch before name in a checkpoint; split before schema_version in a "
                "rollout summary. Warnings, not errors.", "§2, §3, §5, §6",
                files,
                [F("RL202", "warning", "metrics.jsonl", 1),
                 F("RL202", "warning", "checkpoints.jsonl", 1),
                 F("RL202", "warning", rs, 1)],
                forbidden=["RL201"])


# ---- cross-file: rollout summaries ---------------------------------------------------------


@case
def _iteration_mismatch() -> Case:
    return _summaries_case(
        "iteration_mismatch_flat", "A record of train_iteration_000001_rollout_summaries.jsonl "
        "says iteration 2.", "flat",
        [compact(traj("train", 1, 0, 0)), compact(traj("train", 2, 0, 1))],
        lambda p: [F("RL401", "error", p, 2, "/iteration")], spec="§6, §9")


@case
def _iteration_mismatch_nested() -> Case:
    return _summaries_case(
        "iteration_mismatch_nested", "A record of iteration_000001/train_rollout_summaries.jsonl "
        "says iteration 0.", "nested",
        [compact(traj("train", 0, 0, 0)), compact(traj("train", 1, 0, 1))],
        lambda p: [F("RL401", "error", p, 1, "/iteration")], spec="§6, §9")


@case
def _split_mismatch() -> Case:
    return _summaries_case(
        "split_mismatch_flat", "Records of the eval `test` file say split `train` and "
        "`eval/other`.", "flat",
        [compact(traj("train", 1, 0, 0)), compact(traj("eval/other", 1, 0, 1)),
         compact(traj("eval/test", 1, 0, 2))],
        lambda p: [F("RL402", "error", p, 1, "/split"), F("RL402", "error", p, 2, "/split")],
        spec="§6, §9", label="test")


@case
def _split_mismatch_nested() -> Case:
    return _summaries_case(
        "split_mismatch_nested", "A record of iteration_000001/train_rollout_summaries.jsonl "
        "says split `eval/test`.", "nested",
        [compact(traj("train", 1, 0, 0)), compact(traj("eval/test", 1, 0, 1))],
        lambda p: [F("RL402", "error", p, 2, "/split")], spec="§6, §9")


@case
def _duplicates() -> Case:
    return _summaries_case(
        "duplicate_pairs", "(group_idx, traj_idx) = (0, 0) appears twice (lines 1 and 3).",
        "flat",
        [compact(traj("train", 1, 0, 0)), compact(traj("train", 1, 0, 1)),
         compact(traj("train", 1, 0, 0)), compact(traj("train", 1, 1, 0))],
        lambda p: [F("RL403", "error", p, 3, "")], spec="§6, §9")


@case
def _step_idx() -> Case:
    r1 = traj("train", 1, 0, 0, rewards=(0.25, 0.25, 0.5))
    r1["steps"][1]["step_idx"] = 2
    r1["steps"][2]["step_idx"] = 3
    r2 = traj("train", 1, 0, 1, rewards=(0.5,))
    r2["steps"][0]["step_idx"] = 1
    return _summaries_case(
        "step_idx_gap", "step_idx must run 0..n-1: 0, 2, 3 (line 1) and 1 (line 2).", "nested",
        [compact(r1), compact(r2)],
        lambda p: [F("RL404", "error", p, 1, "/steps/1/step_idx"),
                   F("RL404", "error", p, 2, "/steps/0/step_idx")], spec="§6, §9")


@case
def _total_reward() -> Case:
    return _summaries_case(
        "total_reward_mismatch", "total_reward 5.0 where the steps sum to 0.5 plus a "
        "final_reward of 0.25 (line 1); the other line agrees.", "flat",
        [compact(traj("train", 1, 0, 0, total_reward=5.0)), compact(traj("train", 1, 0, 1))],
        lambda p: [F("RL405", "error", p, 1, "/total_reward")], spec="§6, §9")


@case
def _total_reward_ok() -> Case:
    good_float = traj("train", 1, 0, 0, rewards=(0.1, 0.2), final=0.0)
    good_float["total_reward"] = 0.3  # 0.1 + 0.2 = 0.30000000000000004: within tolerance
    ten = traj("train", 1, 0, 1, rewards=(0.1,) * 10, final=0.0)
    ten["total_reward"] = 1.0  # the float sum is 0.9999999999999999
    good_int = traj("train", 1, 0, 2, rewards=(1.0,), final=0.0)
    good_int["total_reward"] = 1  # an integer total is valid
    null_step = traj("train", 1, 0, 3, rewards=(None,), final=0.5)  # unknown total: null
    no_steps = traj("train", 1, 0, 4, rewards=(), final=0.25)  # no step: total = final_reward
    negative = traj("train", 1, 1, 0, rewards=(1.0,), final=-1.5)  # negative final reward
    return _summaries_case(
        "total_reward_within_tolerance", "total_reward agreeing with the steps: float rounding "
        "(0.1 + 0.2 written as 0.3; ten 0.1 rewards written as 1.0), an integer total, a null "
        "total when a step reward is unknown, a trajectory without steps, a negative "
        "final_reward. Valid.", "flat",
        [compact(r) for r in (good_float, ten, good_int, null_step, no_steps, negative)],
        lambda p: [], spec="§6, §9", forbidden=CLEAN_FORBIDDEN)


@case
def _after_done() -> Case:
    r = traj("train", 1, 0, 0, rewards=(0.25, 0.5))
    r["steps"][0]["episode_done"] = True
    return _summaries_case(
        "steps_after_episode_done", "A trajectory keeps stepping after episode_done: true "
        "(warning).", "flat", [compact(r), compact(traj("train", 1, 0, 1))],
        lambda p: [F("RL406", "warning", p, 1, "/steps/1")], spec="§6, §9")


# ---- cross-file: logtree, HTML, iteration coverage ----------------------------------------


@case
def _path_not_twin() -> Case:
    files = base_run("flat", 1, evals=("test",), extras=False)
    lt = it_path("flat", 0, "logtree")
    doc = json.loads(files[lt])
    doc["path"] = f"{RUN_ROOT}/train_iteration_000007.html"
    files[lt] = compact(doc) + b"\n"
    ev = it_path("flat", 0, "logtree", "test")
    doc = json.loads(files[ev])
    doc["path"] = None  # no path at all is fine
    files[ev] = compact(doc) + b"\n"
    return Case("logtree_path_not_twin", "A logtree's path names another iteration's HTML "
                "(info); a null path is fine.", "§7, §9", files,
                [F("RL410", "info", lt, None, "/path")])


@case
def _html_only() -> Case:
    files = base_run("flat", 2, evals=(), extras=False)
    del files[it_path("flat", 1, "logtree")]
    return Case("html_without_json_flat", "train_iteration_000001.html has no JSON twin "
                "(warning: old runs only wrote HTML).", "§7, §9", files,
                [F("RL411", "warning", it_path("flat", 1, "html"))])


@case
def _html_only_nested() -> Case:
    files = base_run("nested", 1, evals=("test",), extras=False)
    del files[it_path("nested", 0, "logtree", "test")]
    return Case("html_without_json_nested", "iteration_000000/eval_test.html has no JSON twin.",
                "§7, §9", files, [F("RL411", "warning", it_path("nested", 0, "html", "test"))])


@case
def _twins_from_two_writes() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    j, h = it_path("flat", 0, "logtree"), it_path("flat", 0, "html")
    files[j] = pretty({"write_id": "1111aaaa2222bbbb", **json.loads(files[j])})
    files[h] = files[h].replace(
        b"<head>", b'<head><meta name="rlio-write-id" content="3333cccc4444dddd">', 1)
    return Case("logtree_twins_from_two_writes", "The logtree JSON and its HTML twin carry "
                "different write ids: a kill between the two replaces left them from two writes "
                "(warning).", "§7", files, [F("RL414", "warning", h)])


@case
def _html_bad() -> Case:
    files = base_run("flat", 1, evals=("test",), extras=False)
    a, b = it_path("flat", 0, "html"), it_path("flat", 0, "html", "test")
    g = gantt_path("flat", 0)
    files[a] = b""
    files[b] = html_doc("Eval test Iteration 0")[:120]
    files[g] = b"<!doctype html>\n<html><body><svg width=\"400\""
    return Case("html_empty_or_truncated", "An empty HTML report, a truncated one and a "
                "truncated timing chart: warnings.", "§7", files,
                [F("RL110", "warning", a), F("RL110", "warning", b), F("RL110", "warning", g)])


@case
def _missing_iterations() -> Case:
    files = base_run("flat", 4, evals=(), extras=False)
    for n in (1, 3):
        for art in ("html", "logtree", "rollout_summaries"):
            del files[it_path("flat", n, art)]
        del files[gantt_path("flat", n)]
    return Case("missing_iteration_files", "metrics record iterations 0-3 but only 0 and 2 have "
                "per-iteration files: info (logging can be off), never worse.", "§9", files,
                [F("RL412", "info", "metrics.jsonl", 2, "/step"),
                 F("RL412", "info", "metrics.jsonl", 4, "/step")],
                forbidden=CLEAN_FORBIDDEN)


@case
def _mixed() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["metrics.jsonl"] = jsonl(metrics_line(i, 2) for i in range(2))
    add_iteration(files, "nested", 1)
    return Case("mixed_layouts", "Iteration 0 in the flat layout, iteration 1 nested: one "
                "warning for the run.", "§1, §9", files, [F("RL304", "warning", "")])


# ---- naming --------------------------------------------------------------------------------


@case
def _unpadded() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["train_iteration_7_logtree.json"] = files[it_path("flat", 0, "logtree")]
    files["train_iteration_7.html"] = html_doc("RL Iteration 7")
    files["train_iteration_0000042_rollout_summaries.jsonl"] = b""
    return Case("unpadded_iteration_flat", "Iteration 7 written without zero padding "
                "(train_iteration_7_*) and iteration 42 padded to seven digits (0000042, not "
                "what {N:06d} writes): warnings naming the expected 000007 and 000042.", "§1",
                files,
                [F("RL302", "warning", "train_iteration_7_logtree.json"),
                 F("RL302", "warning", "train_iteration_7.html"),
                 F("RL302", "warning", "train_iteration_0000042_rollout_summaries.jsonl")])


@case
def _unpadded_nested() -> Case:
    files = base_run("nested", 1, evals=(), extras=False)
    files["iteration_7/train.html"] = html_doc("RL Iteration 7")
    return Case("unpadded_iteration_nested", "A nested iteration folder without zero padding "
                "(iteration_7/): a warning.", "§1", files,
                [F("RL302", "warning", "iteration_7/train.html")])


@case
def _bad_label() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    a, b = "eval_gsm8k main_iteration_000000.html", "eval_gsm8k main_iteration_000000_logtree.json"
    files[a] = html_doc("Eval gsm8k main Iteration 0")
    doc = logtree_doc("Eval gsm8k main Iteration 0", f"{RUN_ROOT}/{a}",
                      started_at=RLIO_TIME.format(s=0))
    files[b] = compact(doc) + b"\n"
    c = "eval_test!_iteration_000000_rollout_summaries.jsonl"
    files[c] = b""
    return Case("bad_label", "Evaluator labels with characters outside [A-Za-z0-9_.-] (a space, "
                "a '!'): warnings.", "§1", files,
                [F("RL302", "warning", a), F("RL302", "warning", b), F("RL302", "warning", c)])


@case
def _unknown() -> Case:
    files = base_run("flat", 1, evals=())
    files["notes.txt"] = b"lr sweep 3 of 5\n"
    files["wandb/run-20250301_120000.log"] = b"wandb: syncing\n"
    files["train_iteration_000000.txt"] = b"?\n"
    files["iteration_000000/notes.md"] = b"# notes\n"
    return Case("unknown_files", "Files that match no pattern, at the top and in folders "
                "(also in an iteration_N/ folder): info findings, never errors.", "§1", files,
                [F("RL301", "info", "notes.txt"),
                 F("RL301", "info", "wandb/run-20250301_120000.log"),
                 F("RL301", "info", "train_iteration_000000.txt"),
                 F("RL301", "info", "iteration_000000/notes.md")], forbidden=CLEAN_FORBIDDEN)


@case
def _unknown_data() -> Case:
    files = base_run("nested", 1, evals=(), extras=False)
    lt = it_path("nested", 0, "logtree")
    doc = json.loads(files[lt])
    doc["root"]["children"].append(
        node("div", attrs={"class": "lt-plot"},
             data={"type": "histogram", "bins": [0, 0.5, 1], "counts": [3, 5]}))
    files[lt] = compact(doc) + b"\n"
    return Case("unknown_logtree_data_type", "A logtree node whose data has a type "
                "docs/format.md does not define: valid, reported as info.", "§7", files,
                [F("RL203", "info", lt, None, "/root/children/2/data")],
                forbidden=CLEAN_FORBIDDEN)


@case
def _symlinks() -> Case:
    files = base_run("flat", 1, evals=(), extras=False)
    files["archive/notes.txt"] = b"older attempt\n"
    return Case("symlinks", "Three symbolic links: a file link out of the run (to this case's "
                "expected.json), a file link inside it and a link to a directory of the run. "
                "Never followed: a warning each.", "§1", files,
                [F("RL303", "warning", "escape.json"), F("RL303", "warning", "latest.html"),
                 F("RL303", "warning", "archive_link"), F("RL301", "info", "archive/notes.txt")],
                symlinks={"escape.json": "../expected.json",
                          "latest.html": it_path("flat", 0, "html"),
                          "archive_link": "archive"})


# --------------------------------------------------------------------------------------------
# Writing.
# --------------------------------------------------------------------------------------------


def write_case(c: Case, out: Path) -> None:
    """Write one case directory: ``run/`` and ``expected.json``."""
    d = out / c.name
    d.mkdir(parents=True)
    run = d / "run"
    if c.run_is_file:
        run.write_bytes(b"this run location is a file, not a directory\n")
    else:
        run.mkdir()
        for rel, data in sorted(c.files.items()):
            p = run / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        for rel, target in sorted(c.symlinks.items()):
            os.symlink(target, run / rel)
    (d / "expected.json").write_text(
        json.dumps(c.expected(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build(out: Path) -> None:
    """Write every case under ``out`` (which is emptied first)."""
    names = [c.name for c in CASES]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"duplicate case names: {sorted(dupes)}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for c in CASES:
        write_case(c, out)


def case_table() -> str:
    """The README's case list (Markdown)."""
    rows = ["| case | docs/format.md | expected codes | description |", "| --- | --- | --- | --- |"]
    for c in CASES:
        codes = ", ".join(sorted({f["code"] for f in c.findings})) or "none"
        if c.forbidden == CLEAN_FORBIDDEN:
            codes += " (clean)"
        desc = c.description.replace("|", "\\|")
        rows.append(f"| `{c.name}` | {c.spec} | {codes} | {desc} |")
    return "\n".join(rows)


BEGIN, END = "<!-- cases:begin -->", "<!-- cases:end -->"


def update_readme(readme: Path) -> None:
    """Replace the generated case table between the markers of the README."""
    text = readme.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    readme.write_text(f"{head}{BEGIN}\n{case_table()}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str]) -> int:
    """Entry point: build into ``argv[0]`` or in place (and refresh the README table)."""
    if argv:
        build(Path(argv[0]))
        return 0
    build(HERE / "cases")
    readme = HERE / "README.md"
    if readme.exists() and BEGIN in readme.read_text(encoding="utf-8"):
        update_readme(readme)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
