"""validate_run: clean cookbook runs, each docs/format.md §9 defect at its file, line, pointer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import (
    HTML,
    cookbook_run,
    dumps,
    errors,
    findings,
    has,
    jsonl,
    logtree_doc,
    metrics_lines,
    trajectory,
    write,
)

from rlio import layout
from rlio.errors import NotARunError, RunNotFoundError
from rlio.findings import Report, Severity
from rlio.validate import validate_run

LAYOUTS: list[layout.Layout] = ["flat", "nested"]


def summaries(lay: layout.Layout, n: int = 1, label: str | None = None) -> str:
    """Run-relative path of iteration ``n``'s rollout summaries."""
    return layout.iteration_path(lay, n, "rollout_summaries", label=label)


# -- clean runs -------------------------------------------------------------------------------


@pytest.mark.parametrize("lay", LAYOUTS)
def test_cookbook_run_has_no_error(tmp_path: Path, lay: layout.Layout) -> None:
    """A run with every cookbook quirk validates with warnings and infos only, in both layouts."""
    run = cookbook_run(tmp_path / "run", layout_name=lay)
    report = validate_run(run)
    assert report.ok, [f for f in report.findings if f.severity is Severity.ERROR]
    assert report.layout == lay
    found = {(f.code, f.file) for f in report.findings}
    assert ("RL104", "metrics.jsonl") in found
    assert ("RL104", "config.json") in found
    assert ("RL411", layout.iteration_path(lay, 2, "html")) in found
    assert ("RL204", layout.iteration_path(lay, 0, "logtree")) in found
    assert not {c for c, _ in found} & {"RL408", "RL409", "RL201", "RL202", "RL103", "RL112"}


@pytest.mark.parametrize("lay", LAYOUTS)
def test_cookbook_quirks_are_at_most_warnings(tmp_path: Path, lay: layout.Layout) -> None:
    """NaN tokens, naive timestamps, eval-only end lines, 0-byte summaries: warning or info."""
    run = cookbook_run(tmp_path / "run", layout_name=lay)
    severities = {f.code: f.severity for f in validate_run(run).findings}
    assert severities["RL104"] is Severity.WARNING
    assert severities["RL204"] is Severity.INFO
    assert severities["RL407"] is Severity.INFO


def test_nan_reported_once_per_file_at_first_line(tmp_path: Path) -> None:
    """NaN tokens on many lines give one RL104 per file, at the first such line."""
    run = cookbook_run(tmp_path / "run")
    rl104 = [f for f in validate_run(run).findings
             if f.code == "RL104" and f.file == "metrics.jsonl"]
    assert len(rl104) == 1
    assert rl104[0].line == 1
    assert "3 line(s)" in rl104[0].message


def test_demo_run_written_by_rlio_validates_clean(tmp_path: Path) -> None:
    """A run written through rlio's own writer (the demo) has no error."""
    from rlio import demo

    for lay in LAYOUTS:
        out = tmp_path / lay
        demo.run_demo(str(out), layout=lay, iterations=3, seed=1)
        assert errors(out) == []


def test_missing_run_raises_run_not_found(tmp_path: Path) -> None:
    """A location that does not exist raises RunNotFoundError (the only raise for data)."""
    with pytest.raises(RunNotFoundError):
        validate_run(tmp_path / "absent")
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunNotFoundError):
        validate_run(tmp_path / "file")


def test_required_files_missing(tmp_path: Path) -> None:
    """A run holding records but lacking metrics.jsonl: an RL109 error (config.json: an RL118
    warning, the writer cannot make a loop write it first); a folder holding only config.json
    is not a run at all (NotARunError)."""
    run = cookbook_run(tmp_path / "run")
    (run / "metrics.jsonl").unlink()
    assert ("RL109", "error", "metrics.jsonl", None, "") in findings(run)
    write(run, "metrics.jsonl", b"")
    (run / "config.json").unlink()
    assert ("RL118", "warning", "config.json", None, "") in findings(run)
    only_config = tmp_path / "hf"
    write(only_config, "config.json", "{}")
    with pytest.raises(NotARunError, match="no run found"):
        validate_run(only_config)


def test_report_is_sorted_and_counted(tmp_path: Path) -> None:
    """Findings come sorted by (file, line, pointer, code) and counts add up."""
    report = validate_run(cookbook_run(tmp_path / "run"))
    assert list(report.findings) == sorted(report.findings, key=lambda f: f.sort_key())
    assert sum(report.counts.values()) == len(report.findings)
    assert isinstance(report, Report)


# -- rollout summaries (docs/format.md §6, §9) -----------------------------------------------------


@pytest.mark.parametrize("lay", LAYOUTS)
def test_iteration_mismatch(tmp_path: Path, lay: layout.Layout) -> None:
    """A record whose iteration differs from the file name's is RL401 at /iteration."""
    run = cookbook_run(tmp_path / "run", layout_name=lay)
    recs = [trajectory(1, 0, t) for t in range(3)]
    recs[1]["iteration"] = 7
    write(run, summaries(lay), jsonl(recs))
    assert has(errors(run), "RL401", summaries(lay), 2, "/iteration")


@pytest.mark.parametrize("lay", LAYOUTS)
def test_split_mismatch(tmp_path: Path, lay: layout.Layout) -> None:
    """A train file holding an eval record, and an eval file with another label: RL402 /split."""
    run = cookbook_run(tmp_path / "run", layout_name=lay)
    write(run, summaries(lay), jsonl([trajectory(1, 0, 0, split="eval/test")]))
    write(run, summaries(lay, label="gsm8k"), jsonl([
        trajectory(1, 0, 0, split="eval/gsm8k"), trajectory(1, 0, 1, split="eval/other")]))
    found = errors(run)
    assert has(found, "RL402", summaries(lay), 1, "/split")
    assert has(found, "RL402", summaries(lay, label="gsm8k"), 2, "/split")
    assert not has(found, "RL402", summaries(lay, label="gsm8k"), 1)


def test_duplicate_pairs(tmp_path: Path) -> None:
    """A repeated (group_idx, traj_idx) is RL403 at the later line, also out of order."""
    run = cookbook_run(tmp_path / "run")
    recs = [trajectory(1, 0, 0), trajectory(1, 0, 1), trajectory(1, 1, 0), trajectory(1, 0, 1)]
    write(run, summaries("flat"), jsonl(recs))
    found = errors(run)
    assert has(found, "RL403", summaries("flat"), 4, "")
    assert [f for f in found if f[0] == "RL403"] == [("RL403", "error", summaries("flat"), 4, "")]


def test_out_of_order_pairs_without_duplicates_are_fine(tmp_path: Path) -> None:
    """Pairs in any order are valid when none repeats (the slow uniqueness pass finds none)."""
    run = cookbook_run(tmp_path / "run")
    write(run, summaries("flat"), jsonl([trajectory(1, 1, 0), trajectory(1, 0, 1),
                                         trajectory(1, 0, 0)]))
    assert errors(run) == []


def test_step_idx_gap(tmp_path: Path) -> None:
    """step_idx must run 0..n-1: RL404 pointing at the first wrong one."""
    run = cookbook_run(tmp_path / "run")
    rec = trajectory(1, 0, 0, n_steps=3)
    rec["steps"][2]["step_idx"] = 5
    single = trajectory(1, 0, 1, n_steps=1)
    single["steps"][0]["step_idx"] = 1
    write(run, summaries("flat"), jsonl([rec, single]))
    found = errors(run)
    assert has(found, "RL404", summaries("flat"), 1, "/steps/2/step_idx")
    assert has(found, "RL404", summaries("flat"), 2, "/steps/0/step_idx")


def test_total_reward_mismatch_and_tolerance(tmp_path: Path) -> None:
    """total_reward off by 0.5 is RL405; off by 1e-9, or an int total, is fine."""
    run = cookbook_run(tmp_path / "run")
    bad = trajectory(1, 0, 0)
    bad["total_reward"] += 0.5
    close = trajectory(1, 0, 1)
    close["total_reward"] += 1e-9
    as_int = trajectory(1, 0, 2, n_steps=1)
    as_int["steps"][0]["reward"] = 1
    as_int["total_reward"] = 1
    none = trajectory(1, 0, 3)
    none["steps"][0]["reward"] = None
    none["total_reward"] = None
    write(run, summaries("flat"), jsonl([bad, close, as_int, none]))
    found = [f for f in errors(run) if f[0] == "RL405"]
    assert found == [("RL405", "error", summaries("flat"), 1, "/total_reward")]


def test_steps_after_episode_done(tmp_path: Path) -> None:
    """Steps after episode_done: true are RL406 warnings at the first extra step."""
    run = cookbook_run(tmp_path / "run")
    rec = trajectory(1, 0, 0, n_steps=3)
    rec["steps"][0]["episode_done"] = True
    write(run, summaries("flat"), jsonl([rec]))
    found = findings(run)
    assert ("RL406", "warning", summaries("flat"), 1, "/steps/1") in found


def test_schema_error_has_pointer_and_one_finding_per_record(tmp_path: Path) -> None:
    """An invalid record gives one RL201 with the best error's pointer."""
    run = cookbook_run(tmp_path / "run")
    rec = trajectory(1, 0, 0)
    rec["steps"][1]["reward"] = "high"
    rec["tags"] = "math"
    write(run, summaries("flat"), jsonl([trajectory(1, 0, 1), rec]))
    rl201 = [f for f in errors(run) if f[0] == "RL201"]
    assert len(rl201) == 1
    assert rl201[0][3] == 2
    assert rl201[0][4] in ("/tags", "/steps/1/reward")


def test_rollout_key_order(tmp_path: Path) -> None:
    """Keys out of the documented order are one RL202 warning per file."""
    run = cookbook_run(tmp_path / "run")
    recs = [dict(reversed(list(trajectory(1, 0, t).items()))) for t in range(3)]
    write(run, summaries("flat"), jsonl(recs))
    rl202 = [f for f in findings(run) if f[0] == "RL202"]
    assert rl202 == [("RL202", "warning", summaries("flat"), 1, "")]


def test_unterminated_summary_file_is_rl113(tmp_path: Path) -> None:
    """A replaced-whole file cut mid-line is RL113, not a torn-tail warning."""
    run = cookbook_run(tmp_path / "run")
    data = jsonl([trajectory(1, 0, 0), trajectory(1, 0, 1)])
    write(run, summaries("flat"), data[:-30])
    assert has(errors(run), "RL113", summaries("flat"), 2)


# -- metrics and checkpoints (docs/format.md §3, §5, §9) -------------------------------------------


def test_resume_drop_is_info(tmp_path: Path) -> None:
    """A drop back to a checkpoint's batch is RL407 info at the line of the drop."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", metrics_lines([0, 1, 2, 3, 4, 2, 3]))
    write(run, "checkpoints.jsonl", jsonl([{"name": "000002", "batch": 2,
                                            "state_path": "tinker://r/weights/000002"}]))
    found = findings(run)
    assert ("RL407", "info", "metrics.jsonl", 6, "/step") in found
    assert not [f for f in found if f[0] == "RL408"]


def test_unexplained_drop_and_jump_are_warnings(tmp_path: Path) -> None:
    """A drop or a gap no checkpoint explains is RL408 at its line."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", metrics_lines([0, 1, 4, 5, 3]))
    write(run, "checkpoints.jsonl", b"")
    found = findings(run)
    assert ("RL408", "warning", "metrics.jsonl", 3, "/step") in found
    assert ("RL408", "warning", "metrics.jsonl", 5, "/step") in found


def test_gap_to_a_checkpoint_batch_is_explained(tmp_path: Path) -> None:
    """A crash between a rolling checkpoint and its metrics line skips a step: explained."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", metrics_lines([0, 1, 3]))
    write(run, "checkpoints.jsonl", jsonl([{"name": "000003", "batch": 3,
                                            "state_path": "tinker://r/weights/000003"}]))
    found = findings(run)
    assert ("RL407", "info", "metrics.jsonl", 3, "/step") in found


def test_async_eval_lines_are_info(tmp_path: Path) -> None:
    """Eval-only lines repeating a step or one past the last are info, never RL408."""
    run = cookbook_run(tmp_path / "run")
    lines = [{"step": s, "training_client/step": s} for s in range(4)]
    lines.insert(2, {"step": 1, "test/env/all/reward/total": 0.5})
    lines.append({"step": 4, "test/env/all/reward/total": 0.6})
    write(run, "metrics.jsonl", jsonl(lines))
    found = findings(run)
    assert ("RL407", "info", "metrics.jsonl", 3, "/step") in found
    assert not [f for f in found if f[0] == "RL408"]


def test_loop_without_progress_keys_orders_every_line(tmp_path: Path) -> None:
    """A metrics file without progress keys treats every line as a training line."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", jsonl([{"step": s, "loss": 1.0} for s in (0, 1, 2, 5)]))
    write(run, "checkpoints.jsonl", b"")
    assert ("RL408", "warning", "metrics.jsonl", 4, "/step") in findings(run)


def test_metrics_key_order_and_nested_value(tmp_path: Path) -> None:
    """step not first is RL202 (warning); a nested object value is RL201 at its key."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", jsonl([{"progress/batch": 0, "step": 0},
                                       {"step": 1, "progress/batch": 1, "env/x": {"a": 1}}]))
    found = findings(run)
    assert ("RL202", "warning", "metrics.jsonl", 1, "") in found
    assert has(found, "RL201", "metrics.jsonl", 2, "/env~1x")


def test_missing_iteration_files_are_info(tmp_path: Path) -> None:
    """Metrics steps without per-iteration files are RL412 info at their line."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", metrics_lines([0, 1, 2, 3]))
    found = findings(run)
    assert ("RL412", "info", "metrics.jsonl", 4, "/step") in found
    assert not has(found, "RL412", "metrics.jsonl", 1)


def test_empty_metrics_is_info(tmp_path: Path) -> None:
    """A 0-byte metrics.jsonl (nothing logged yet) is RL116 info, not an error."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", b"")
    found = findings(run)
    assert ("RL116", "info", "metrics.jsonl", None, "") in found
    assert not [f for f in found if f[1] == "error"]


def test_resumable_checkpoint_without_batch(tmp_path: Path) -> None:
    """A record with state_path but no batch is RL501; a sampler-only record is fine."""
    run = cookbook_run(tmp_path / "run")
    write(run, "checkpoints.jsonl", jsonl([
        {"name": "000001", "sampler_path": "tinker://r/sampler_weights/000001"},
        {"name": "000002", "state_path": "tinker://r/weights/000002"}]))
    assert [f for f in errors(run) if f[0] == "RL501"] == [
        ("RL501", "error", "checkpoints.jsonl", 2, "")]


def test_checkpoint_beyond_metrics(tmp_path: Path) -> None:
    """A resumable batch past the last metrics step + 1 is RL409 at /batch."""
    run = cookbook_run(tmp_path / "run")
    write(run, "checkpoints.jsonl", jsonl([
        {"name": "000003", "batch": 3, "state_path": "tinker://r/weights/000003"},
        {"name": "000009", "batch": 9, "state_path": "tinker://r/weights/000009"}]))
    found = findings(run)
    assert ("RL409", "warning", "checkpoints.jsonl", 2, "/batch") in found
    assert not has(found, "RL409", "checkpoints.jsonl", 1)


def test_checkpoint_key_order(tmp_path: Path) -> None:
    """name not first is RL202; the SL loop's epoch-before-batch order is tolerated."""
    run = cookbook_run(tmp_path / "run")
    write(run, "checkpoints.jsonl", jsonl([
        {"name": "000001", "epoch": 0, "batch": 1, "state_path": "tinker://r/w/1"},
        {"batch": 2, "name": "000002", "state_path": "tinker://r/w/2"}]))
    rl202 = [f for f in findings(run) if f[0] == "RL202"]
    assert rl202 == [("RL202", "warning", "checkpoints.jsonl", 2, "")]


def test_torn_and_blank_lines_in_append_only_files(tmp_path: Path) -> None:
    """A torn last line is RL103 (warning), a blank line RL105, a bad middle line followed by
    a JSON line RL117 (crash damage, warning)."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", metrics_lines([0, 1]) + "\n" + '{"step": 2, "progr\n'
          + metrics_lines([2]) + '{"step": 3')
    found = findings(run)
    assert ("RL105", "warning", "metrics.jsonl", 3, "") in found
    assert ("RL117", "warning", "metrics.jsonl", 4, "") in found
    assert ("RL103", "warning", "metrics.jsonl", 6, "") in found
    write(run, "checkpoints.jsonl", '{"name": "000001", "batch": 1}\n{"name": "0000\n')
    assert ("RL103", "warning", "checkpoints.jsonl", 2, "") in findings(run)


def test_cap_per_code_and_file(tmp_path: Path) -> None:
    """Past the cap, one RL112 (warning for error codes) counts the unlisted findings."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", "oops\n" * 30 + metrics_lines([0]))
    report = validate_run(run, max_findings_per_code=10)
    rl102 = [f for f in report.findings if f.code == "RL102" and f.file == "metrics.jsonl"]
    rl112 = [f for f in report.findings if f.code == "RL112" and f.file == "metrics.jsonl"]
    assert len(rl102) == 10
    assert len(rl112) == 1 and rl112[0].severity is Severity.WARNING
    assert "20 more RL102" in rl112[0].message


def test_info_cap_summary_stays_info(tmp_path: Path) -> None:
    """Capping a flood of info findings yields an info RL112 (clean runs stay clean)."""
    run = cookbook_run(tmp_path / "run")
    write(run, "metrics.jsonl", metrics_lines(list(range(40))))
    report = validate_run(run, max_findings_per_code=5)
    rl112 = [f for f in report.findings if f.code == "RL112"]
    assert rl112 and all(f.severity is Severity.INFO for f in rl112)


# -- documents, HTML, other files (docs/format.md §4, §7, §8) --------------------------------------


def test_logtree_checks(tmp_path: Path) -> None:
    """Unknown data types are RL203 info, path not naming the twin RL410, bad nodes RL201."""
    run = cookbook_run(tmp_path / "run")
    doc = logtree_doc("t", "/elsewhere/other.html", "2025-03-01T12:00:00+00:00")
    doc["root"]["children"].append({"tag": "div", "attrs": {}, "children": [],
                                    "data": {"type": "histogram", "bins": [1, 2]}})
    path = layout.iteration_path("flat", 0, "logtree")
    write(run, path, json.dumps(doc, indent=2))
    found = findings(run)
    assert ("RL203", "info", path, None, "/root/children/2/data") in found
    assert ("RL410", "info", path, None, "/path") in found
    assert not has(found, "RL204", path)
    doc["root"]["children"][0]["attrs"] = {"id": 3}
    write(run, path, json.dumps(doc))
    assert has(errors(run), "RL201", path, None, "/root/children/0/attrs/id")


def test_logtree_path_naming_its_twin_relative_or_nested(tmp_path: Path) -> None:
    """A path naming the twin by absolute path, relative path or basename is not RL410."""
    for lay in LAYOUTS:
        run = cookbook_run(tmp_path / lay, layout_name=lay)
        path = layout.iteration_path(lay, 1, "logtree")
        html = layout.iteration_path(lay, 1, "html")
        for p in (html, str(run / html), html.split("/")[-1]):
            write(run, path, json.dumps(logtree_doc("t", p, "2025-03-01T12:00:00Z")))
            assert not has(findings(run), "RL410", path), (lay, p)


def test_logtree_nested_deep_but_parseable_is_valid(tmp_path: Path) -> None:
    """A logtree 400 nodes deep (800 JSON levels, under orjson's limit) validates."""
    run = cookbook_run(tmp_path / "run")
    node: dict[str, object] = {"tag": "div", "attrs": {}, "children": ["leaf"]}
    for _ in range(400):
        node = {"tag": "div", "attrs": {}, "children": [node]}
    doc = {"title": "t", "started_at": "2025-03-01T12:00:00Z", "path": None, "root": node}
    path = layout.iteration_path("flat", 0, "logtree")
    write(run, path, json.dumps(doc))
    assert not [f for f in findings(run) if f[2] == path]


def test_documents_empty_invalid_and_not_objects(tmp_path: Path) -> None:
    """Empty config is RL111, invalid JSON RL102, a non-object config RL201."""
    run = cookbook_run(tmp_path / "run")
    write(run, "config.json", b"")
    assert has(errors(run), "RL111", "config.json")
    write(run, "config.json", b"  \n ")
    assert has(errors(run), "RL111", "config.json")
    write(run, "config.json", b'{"a": 1,')
    assert has(errors(run), "RL102", "config.json")
    write(run, "config.json", b"[1, 2]")
    assert has(errors(run), "RL201", "config.json", None, "")


def test_html_empty_truncated_and_chart(tmp_path: Path) -> None:
    """Empty or truncated HTML is RL110; a Gantt chart needs only to end with </html>."""
    run = cookbook_run(tmp_path / "run")
    write(run, layout.iteration_path("flat", 0, "html"), b"")
    write(run, layout.iteration_path("flat", 1, "html"), HTML[:60])
    write(run, "timing_gantt_000000.html", "<html><body>chart</body></html>\n")
    write(run, "timing_gantt_000001.html", "<html><body>cha")
    found = findings(run)
    assert has(found, "RL110", layout.iteration_path("flat", 0, "html"))
    assert has(found, "RL110", layout.iteration_path("flat", 1, "html"))
    assert not has(found, "RL110", "timing_gantt_000000.html")
    assert has(found, "RL110", "timing_gantt_000001.html")


def test_code_diff_not_utf8_and_empty(tmp_path: Path) -> None:
    """A non-UTF-8 code.diff is RL108 (warning); an empty one is valid."""
    run = cookbook_run(tmp_path / "run")
    assert not has(findings(run), "RL108", "code.diff")
    write(run, "code.diff", b"diff --git a/x b/x\n+caf\xe9\n")
    assert ("RL108", "warning", "code.diff", None, "") in findings(run)


def test_timing_and_trace_schemas(tmp_path: Path) -> None:
    """timing_spans and trace_events lines are judged by their schemas."""
    run = cookbook_run(tmp_path / "run")
    write(run, "timing_spans.jsonl", jsonl([{"step": 0, "spans": [{"name": "x"}]}]))
    write(run, "trace_events.jsonl", jsonl([{"name": "x", "ph": "B", "pid": 0}]))
    found = errors(run)
    assert has(found, "RL201", "timing_spans.jsonl", 1)
    assert has(found, "RL201", "trace_events.jsonl", 1)


# -- names and layout (docs/format.md §1) ----------------------------------------------------------


def test_names_unknown_bad_sidecars_and_temp_files(tmp_path: Path) -> None:
    """Unknown names are info, bad names warnings, sidecars and temp files info."""
    run = cookbook_run(tmp_path / "run")
    write(run, "notes.txt", "x")
    write(run, "wandb/run-1/files/output.log", "x")
    write(run, "train_iteration_7_logtree.json",
          json.dumps(logtree_doc("t", None, "2025-01-01T00:00:00Z")))
    write(run, "metrics.jsonl.superseded", "garbage\n")
    write(run, "checkpoints.jsonl.torn", '{"na\n')
    write(run, ".config.json.rlio-tmp-1a2b3c4d", "{")
    found = findings(run)
    assert ("RL301", "info", "notes.txt", None, "") in found
    assert ("RL301", "info", "wandb/run-1/files/output.log", None, "") in found
    assert ("RL302", "warning", "train_iteration_7_logtree.json", None, "") in found
    assert ("RL305", "info", "metrics.jsonl.superseded", None, "") in found
    assert ("RL305", "info", "checkpoints.jsonl.torn", None, "") in found
    assert ("RL306", "info", ".config.json.rlio-tmp-1a2b3c4d", None, "") in found
    assert not [f for f in found if f[1] == "error"]


def test_mixed_layouts(tmp_path: Path) -> None:
    """Files of both layouts in one run are one RL304 warning for the run."""
    run = cookbook_run(tmp_path / "run")
    write(run, summaries("nested", 5), jsonl([trajectory(5, 0, 0)]))
    assert ("RL304", "warning", "", None, "") in findings(run)
    assert validate_run(run).layout == "mixed"


def test_unknown_files_are_capped_run_wide(tmp_path: Path) -> None:
    """Hundreds of unknown files (a wandb folder) are listed up to the cap, then counted."""
    run = cookbook_run(tmp_path / "run")
    for i in range(30):
        write(run, f"wandb/f{i:03d}.log", "x")
    report = validate_run(run, max_findings_per_code=10)
    assert len([f for f in report.findings if f.code == "RL301"]) == 10
    assert any(f.code == "RL112" and f.file == "" and "20 more RL301" in f.message
               for f in report.findings)


def test_json_output_keys_for_a_run(tmp_path: Path) -> None:
    """Report.to_dict has exactly version, run, ok, counts, findings; each finding six keys."""
    doc = validate_run(cookbook_run(tmp_path / "run")).to_dict()
    assert list(doc) == ["version", "run", "ok", "counts", "findings"]
    assert list(doc["counts"]) == ["error", "warning", "info"]
    assert all(list(f) == ["code", "severity", "file", "line", "pointer", "message"]
               for f in doc["findings"])
    assert dumps(doc)


def test_memory_uri_run_validates_like_a_local_one(tmp_path: Path) -> None:
    """Only the Storage interface is used: a memory:// copy gives the same findings."""
    import fsspec

    run = cookbook_run(tmp_path / "run", layout_name="nested")
    write(run, summaries("nested"), jsonl([trajectory(1, 0, 0), trajectory(1, 0, 0),
                                           trajectory(1, 0, 1)])[:-5])
    fs = fsspec.filesystem("memory")
    for p in run.rglob("*"):
        if p.is_file():
            fs.pipe(f"/validate-copy/{p.relative_to(run).as_posix()}", p.read_bytes())
    try:
        local = [(f.code, f.file, f.line, f.pointer) for f in validate_run(run).findings]
        remote = [(f.code, f.file, f.line, f.pointer)
                  for f in validate_run("memory://validate-copy").findings]
    finally:
        fs.rm("/validate-copy", recursive=True)
    assert remote == local
    assert ("RL403", summaries("nested"), 2, "") in local
    assert ("RL113", summaries("nested"), 3, "") in local
