"""``rlio report``: charts, checkpoints, validation and links of one page for a whole run."""

from __future__ import annotations

import json
import os
import re
import shutil
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import factories
import pytest

from rlio import layout
from rlio.cli import main
from rlio.errors import RunNotFoundError, UnknownMetricError
from rlio.findings import Report, finding
from rlio.report import reading, render_run_report, write_run_report

CORPUS = Path(__file__).resolve().parents[3] / "conformance" / "cases"


def cookbook_run(root: Path, iterations: int, **kw: Any) -> Path:
    """A plain cookbook run of ``iterations`` (finite metrics, test evaluator every 5, pages)."""
    return factories.cookbook_run(root, iterations, quirks=False, **kw)


def charts(page: str) -> dict[str, tuple[int, int]]:
    """``{metric: (points drawn, points in the run)}`` of every chart on the page."""
    found = re.findall(r'<figure class="card chart-card" data-metric="([^"]*)">.*?'
                       r'data-points="(\d+)" data-total="(\d+)"', page)
    return {unescape(k): (int(p), int(t)) for k, p, t in found}


def links(page: str) -> list[str]:
    """The hrefs of the iteration links, decoded."""
    section = page[page.index('<section id="iterations">'):]
    return [unquote(unescape(h)) for h in re.findall(r"<a\b[^>]*\bhref=\"([^\"]*)\"", section)]


@pytest.mark.parametrize("run_layout", ["flat", "nested"])
def test_charts_and_links_for_both_layouts(tmp_path: Path, run_layout: layout.Layout) -> None:
    """The usual keys the run logged are charted with one point per step; every page of both
    splits is linked, as rlio's page beside the report (the cookbook's pages carry no rlio
    header)."""
    run = cookbook_run(tmp_path / "run", 12, layout_name=run_layout)
    page = render_run_report(run, validate=False)
    assert charts(page) == {
        "env/all/reward/total": (12, 12), "progress/done_frac": (12, 12),
        "optim/kl_sample_train_v1": (12, 12), "optim/entropy": (12, 12),
        "optim/lr": (12, 12), "test/env/all/reward/total": (3, 3),
    }
    expected = sorted("report/" + layout.iteration_path(run_layout, i, "html", label=label)
                      for i in range(12) for label in [None, "test"]
                      if label is None or i % 5 == 0)
    assert sorted(links(page)) == expected
    assert f"<dd>{run_layout}</dd>" in page


def test_cookbook_quirks_are_tolerated_and_said(tmp_path: Path) -> None:
    """NaN tokens, null, a blank line, a bad line and a torn tail are skipped and reported."""
    run = tmp_path / "run"
    run.mkdir()
    (run / layout.METRICS).write_bytes(
        b'{"progress/batch": 0, "optim/kl_sample_train_v2": 0.5, "optim/entropy": NaN}\n'
        b"\n"
        b'{"progress/batch": 1, "optim/kl_sample_train_v2": Infinity, "optim/entropy": null}\n'
        b"not json\n"
        b'{"progress/batch": 2, "optim/kl_sample_train_v2": 0.25, "optim/entropy": 1.5}\n'
        b'{"progress/batch": 3, "optim/kl_sample_tr')
    page = render_run_report(run, validate=False)
    assert charts(page)["optim/kl_sample_train_v2"] == (2, 2)  # v2 charted: v1 never logged
    assert "optim/kl_sample_train_v1" not in charts(page)
    assert charts(page)["optim/entropy"] == (1, 1)
    for note in ("the last line is torn", "1 line(s) are not JSON", "1 blank line(s)",
                 "2 line(s) hold NaN/Infinity tokens", "2 null or non-finite value(s) not drawn"):
        assert note in page, note
    assert "last 0.25 at progress/batch 2" in page


def test_a_resume_draws_the_latest_value_of_repeated_steps(tmp_path: Path) -> None:
    """Steps logged again after a resume replace the crashed run's values; the drop is noted."""
    run = tmp_path / "run"
    run.mkdir()
    steps = [(0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0), (2, 20.0), (3, 30.0), (4, 40.0)]
    (run / layout.METRICS).write_text(
        "".join(json.dumps({"step": s, "env/all/reward/total": r}) + "\n" for s, r in steps))
    page = render_run_report(run, validate=False)
    assert charts(page)["env/all/reward/total"] == (5, 5)
    assert "step drops back to 2" in page
    assert "last 40 at step 4" in page and "max 40" in page and "max 3 " not in page
    assert page.count('class="restart"') == 1  # the resume guide, on the one chart with data


def test_an_eval_line_trailing_a_step_is_not_a_resume(tmp_path: Path) -> None:
    """An async evaluator line logged after a later training step does not count as a resume."""
    run = tmp_path / "run"
    run.mkdir()
    lines = [{"step": 0, "progress/batch": 0}, {"step": 1, "progress/batch": 1},
             {"step": 0, "test/env/all/reward/total": 0.5}, {"step": 2, "progress/batch": 2}]
    (run / layout.METRICS).write_text("".join(json.dumps(x) + "\n" for x in lines))
    page = render_run_report(run, validate=False)
    assert "drops back" not in page and 'class="restart"' not in page
    assert charts(page)["test/env/all/reward/total"] == (1, 1)


def test_checkpoint_kinds_and_resume_point(tmp_path: Path) -> None:
    """Periodic, rolling and final checkpoints are told apart; resume is the last state_path."""
    run = cookbook_run(tmp_path / "run", 10)
    records = [
        {"name": "000002", "batch": 2, "state_path": "tinker://r/weights/000002"},
        {"name": "000003", "batch": 3, "state_path": "tinker://r/weights/000003", "rolling": True},
        {"name": "000004", "batch": 4, "state_path": "tinker://r/weights/000004",
         "sampler_path": "tinker://r/sampler_weights/000004"},
        {"name": "final", "batch": 10, "sampler_path": "tinker://r/sampler_weights/final"},
    ]
    (run / layout.CHECKPOINTS).write_text("".join(json.dumps(r) + "\n" for r in records))
    page = render_run_report(run, validate=False)
    assert 'data-periodic="2" data-rolling="1" data-final="1"' in page
    assert "restart at batch 4 from checkpoint 000004 (checkpoints.jsonl line 3)" in page
    assert re.search(r'<tr class="is-resume"><td>3</td><td>000004</td>', page)
    assert [len(re.findall(f'data-kind="{k}"', page)) for k in
            ("periodic", "rolling", "final", "resume")] == [2, 1, 1, 1]



def test_resume_point_is_read_resume_states(tmp_path: Path) -> None:
    """The page's resume point is ``read_resume_state``'s, torn last line included."""
    run = cookbook_run(tmp_path / "run", 6)
    (run / layout.CHECKPOINTS).write_text(
        '{"name": "000003", "batch": 3, "state_path": "tinker://r/weights/000003"}\n'
        '{"name": "final", "batch": 6, "sampler_path": "tinker://r/sampler_weights/final"}\n'
        '{"name": "000004", "ba')
    page = render_run_report(run, validate=False)
    assert "restart at batch 3 from checkpoint 000003 (checkpoints.jsonl line 1)" in page
    assert "the last line is torn" in page


def test_no_checkpoints_means_restart_from_zero(tmp_path: Path) -> None:
    """A run without a checkpoint ledger says a restart begins at iteration 0."""
    page = render_run_report(cookbook_run(tmp_path / "run", 3), validate=False)
    assert "No checkpoints.jsonl" in page
    assert "no resumable checkpoint: a restart begins at iteration 0" in page


def test_thousands_of_iterations_stay_small(tmp_path: Path) -> None:
    """5,000 iterations and 5,000 checkpoints give a page under 1 MB with <= 1,000 points/chart."""
    run = cookbook_run(tmp_path / "run", 5000, evaluator_every=50, logtrees=False)
    (run / layout.CHECKPOINTS).write_text("".join(
        json.dumps({"name": f"{i:06d}", "batch": i, "state_path": f"tinker://r/weights/{i:06d}",
                    "rolling": i % 10 != 0}) + "\n" for i in range(1, 5001)))
    page = render_run_report(run, validate=False)
    assert len(page.encode()) < 1_000_000
    drawn = charts(page)
    assert drawn["env/all/reward/total"][1] == 5000
    assert all(points <= 1000 for points, _ in drawn.values())
    assert len(links(page)) == 5100
    assert "Showing the last 200 of 5,000 records." in page


def test_user_metrics_are_charted_and_unknown_ones_refused(tmp_path: Path) -> None:
    """``metrics=`` adds a chart per key; a key the run never logged is an error naming the
    run's closest keys."""
    run = cookbook_run(tmp_path / "run", 4)
    page = render_run_report(run, metrics=["test/env/all/reward/total"], validate=False)
    assert charts(page)["test/env/all/reward/total"] == (1, 1)
    with pytest.raises(UnknownMetricError) as info:
        render_run_report(run, metrics=["optim/kl_sample_train_v3"], validate=False)
    assert info.value.closest[0] == "optim/kl_sample_train_v1"
    assert "optim/kl_sample_train_v1" in str(info.value)
    with pytest.raises(UnknownMetricError, match="closest: env/all/reward/total"):
        render_run_report(run, metrics=["reward/total"], validate=False)


def test_usual_keys_are_charted_by_their_real_names(tmp_path: Path) -> None:
    """Bare ``entropy`` and ``kl_sample_train_v1``, tokens, cost and time are charted; a key of
    no usual family is listed, not charted, and no empty box is drawn."""
    run = tmp_path / "run"
    run.mkdir()
    lines = [{"step": i, "entropy": 1.0 - i / 10, "kl_sample_train_v1": 0.01 * i,
              "tokens/cumulative/sampled": 100 * i, "cost/cumulative_usd": 0.1 * i,
              "time/total": 3.0, "env/all/by_group/frac_mixed": 0.5, "custom/thing": i}
             for i in range(3)]
    (run / layout.METRICS).write_text("".join(json.dumps(r) + "\n" for r in lines))
    page = render_run_report(run, validate=False)
    assert set(charts(page)) == {"entropy", "kl_sample_train_v1", "tokens/cumulative/sampled",
                                 "cost/cumulative_usd", "time/total",
                                 "env/all/by_group/frac_mixed"}
    assert "not logged in this run" not in page
    assert "1 other metric keys" in page and "<code>custom/thing</code>" in page


def test_run_text_is_escaped(tmp_path: Path) -> None:
    """Metric names, checkpoint fields, config text and file names appear only as text."""
    evil = "<script>window.__pwned=1</script><img src=x onerror=alert(1)>"
    run = tmp_path / "run"
    run.mkdir()
    (run / layout.METRICS).write_text(json.dumps({"step": 0, evil: 1.0}) + "\n")
    (run / layout.CONFIG).write_text(json.dumps({"x": evil}))
    (run / layout.CHECKPOINTS).write_text(json.dumps({"name": evil, "batch": 1,
                                                      "state_path": evil}) + "\n")
    (run / "eval_<img src=x onerror=alert(1)>_iteration_000000.html").write_text("x")
    page = render_run_report(run, metrics=[evil], validate=False)
    assert "<script" not in page and "<img" not in page and "onerror=alert" not in page.replace(
        "onerror=alert(1)&gt;", "")
    assert page.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 4
    assert ('href="report/eval_%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E_iteration_000000.html"'
            in page)


def _fake_validator(monkeypatch: pytest.MonkeyPatch, run_fn: Any) -> None:
    monkeypatch.setattr(reading, "validate_run", lambda r, **_: run_fn(r))


def test_validation_summary_counts_and_caps_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The validator's counts are shown and at most 200 findings, errors first, escaped."""
    run = cookbook_run(tmp_path / "run", 2)
    findings = [finding("RL301", f"info <{i}>", file=f"f{i}") for i in range(249)]
    findings.append(finding("RL201", "bad <value>", file=layout.METRICS, line=7, pointer="/a~1b"))
    _fake_validator(monkeypatch, lambda r: Report.build(str(r), findings))
    page = render_run_report(run)
    assert "FAILED</span>: " in page and "1 error(s)" in page and "249 info" in page
    section = page[page.index('<section id="validation">'):page.index('<section id="iter')]
    assert section.count("<tr class=") == 200
    assert "Showing the first 200 of 250 findings" in section
    first = section.index('<tr class="sev-error"><td>error</td><td>RL201</td>'
                          "<td><code>metrics.jsonl:7 /a~1b</code></td><td>bad &lt;value&gt;")
    assert first < section.index('<tr class="sev-info">')


def test_validation_failing_still_renders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crashing validator is reported on the page, not raised."""
    run = cookbook_run(tmp_path / "run", 2)

    def boom(run: str) -> Report:
        raise RuntimeError("validator <bug>")

    _fake_validator(monkeypatch, boom)
    page = render_run_report(run)
    assert "Validation failed to run: RuntimeError: validator &lt;bug&gt;" in page
    assert charts(page)["env/all/reward/total"] == (2, 2)


def test_write_defaults_to_report_inside_the_run(tmp_path: Path) -> None:
    """Without ``output`` the page goes to ``<run>/report.html`` atomically, links relative."""
    run = cookbook_run(tmp_path / "run", 3, layout_name="nested")
    where = write_run_report(run, validate=False)
    assert where == str(run / "report.html")
    assert sorted(os.listdir(run))[:1] == ["config.json"]  # no temporary file left behind
    page = (run / "report.html").read_text()
    assert links(page)[0] == "report/iteration_000000/train.html"
    assert all((run / href).is_file() for href in links(page))


@pytest.mark.parametrize("where", ["elsewhere/page.html", "run/sub/page.html", "outdir"])
def test_links_resolve_from_wherever_the_page_is_written(tmp_path: Path, where: str) -> None:
    """Links are relative to the output's directory, inside or outside the run (or a folder)."""
    run = cookbook_run(tmp_path / "run", 3)
    out = tmp_path / where
    if where == "outdir":
        out.mkdir()
    written = Path(write_run_report(run, output=str(out), validate=False))
    assert written == (out / "report.html" if where == "outdir" else out)
    hrefs = links(written.read_text())
    assert len(hrefs) == 4
    assert all((written.parent / h).resolve().is_file() for h in hrefs)


def test_a_missing_run_is_an_error(tmp_path: Path) -> None:
    """A run that does not exist raises RunNotFoundError naming it."""
    with pytest.raises(RunNotFoundError, match="nope"):
        write_run_report(tmp_path / "nope")


def test_cli_writes_the_page_with_extra_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rlio report RUN -o FILE --metric K`` writes the page, charts K and says where."""
    run = cookbook_run(tmp_path / "run", 3)
    out = tmp_path / "r.html"
    assert main(["report", str(run), "-o", str(out), "--metric", "optim/lr"]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert charts(out.read_text())["optim/lr"] == (3, 3)
    assert main(["report", str(tmp_path / "absent")]) == 2


def test_every_conformance_run_renders(tmp_path: Path) -> None:
    """The report renders every run of the conformance corpus (cookbook quirks, damage, both
    layouts) without raising; an unreadable run raises RunNotFoundError."""
    cases = sorted(CORPUS.glob("*/run"))
    assert cases, f"no conformance cases under {CORPUS}"
    for source in cases:
        expected = json.loads((source.parent / "expected.json").read_text())
        if not source.is_dir() or source.is_symlink() or expected["exit_code"] == 2:
            with pytest.raises(RunNotFoundError):
                render_run_report(source, validate=False)
            continue
        run = tmp_path / source.parent.name
        shutil.copytree(source, run, symlinks=True)
        page = render_run_report(run, validate=False)
        assert page.startswith("<!doctype html>") and page.endswith("</html>\n"), source


def test_a_run_behind_a_uri_is_read_through_storage() -> None:
    """A ``memory://`` run (no local path at all) is reported, and the page written beside it."""
    from rlio.demo import run_demo
    from rlio.storage import open_storage

    run = "memory://rlio-report-test/run"
    run_demo(run, layout="nested", iterations=3)
    assert write_run_report(run) == f"{run}/report.html"
    page = open_storage(run).read_bytes("report.html").decode()
    assert charts(page)["progress/done_frac"] == (3, 3)
    assert "iteration_000002/train.html" in links(page)
    elsewhere = "memory://rlio-report-test/pages/r.html"
    assert write_run_report(run, output=elsewhere, validate=False) == elsewhere
    pages = open_storage("memory://rlio-report-test/pages")
    page = pages.read_bytes("r.html").decode()
    assert "r/iteration_000000/train.html" in links(page)  # rlio's pages beside the report
    assert pages.stat("r/iteration_000000/train.html") is not None


def test_the_page_does_not_report_itself_as_an_unknown_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validating a run that holds its own report leaves out just that one finding."""
    run = cookbook_run(tmp_path / "run", 2)
    findings = [finding("RL301", "unknown", file="report.html"),
                finding("RL301", "unknown", file="notes.txt")]
    _fake_validator(monkeypatch, lambda r: Report.build(str(r), findings))
    inside = render_run_report(run)
    assert "<code>notes.txt</code>" in inside and "<code>report.html</code>" not in inside
    assert "1 info" in inside
    elsewhere = render_run_report(run, output=str(tmp_path / "report.html"))
    assert "<code>report.html</code>" in elsewhere and "2 info" in elsewhere


@pytest.mark.parametrize("layout_name", ["flat", "nested"])
def test_a_reported_run_still_validates_with_no_finding(tmp_path: Path, layout_name: str) -> None:
    """The report's pages inside a run are known files, and the iteration pages it rewrites in
    place keep their logtree twin's write id: the demo run validates clean before and after."""
    from rlio.demo import run_demo
    from rlio.validate import validate_run

    run = tmp_path / "run"
    run_demo(str(run), layout=layout_name, iterations=4, seed=1)
    assert validate_run(run).counts == {"error": 0, "warning": 0, "info": 0}
    write_run_report(run)
    assert (run / layout.REPORT_PAGES).is_dir()
    assert validate_run(run).findings == ()


def test_every_trajectory_anchor_the_report_links_exists(tmp_path: Path) -> None:
    """The worst/best rows (and prompt samples) link to #traj-G-T only where that page has the
    anchor: a trajectory whose transcript was not logged links to its page alone."""
    from rlio.demo import run_demo

    run = tmp_path / "run"
    run_demo(str(run), layout="flat", iterations=4, seed=0)
    written = Path(write_run_report(run, validate=False))
    pages = [written, *(run / layout.REPORT_PAGES).rglob("*.html")]
    checked = 0
    for page in pages:
        for href in re.findall(r'href="([^"#]*)#(traj-[0-9]+-[0-9]+)"', page.read_text()):
            target = (page.parent / unquote(unescape(href[0]))).resolve() if href[0] else page
            assert f'id="{href[1]}"' in target.read_text(), (page, href)
            checked += 1
    assert checked > 0
    assert re.search(r'href="[^"#]+\.html">page</a>', written.read_text())  # rows without one
