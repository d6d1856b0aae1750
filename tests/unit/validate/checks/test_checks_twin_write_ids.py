"""RL414: logtree twins from different writes (a kill between the two replaces) are detected."""

from __future__ import annotations

import pathlib

from rlio import RunWriter, validate_run


def _codes(run: pathlib.Path) -> list[str]:
    return [f.code for f in validate_run(run).findings]


def test_twins_of_one_write_agree_and_a_mixed_pair_is_a_warning(tmp_path: pathlib.Path) -> None:
    """The writer's twins carry one write id; an HTML left from an earlier write gives RL414."""
    with RunWriter(tmp_path) as run:
        run.write_config({"lr": 1})
        run.log_metrics({"x": 0}, step=0)
        with run.logtree(0, title="first") as lt:
            lt.text("one")
        html = tmp_path / "train_iteration_000000.html"
        old_html = html.read_bytes()
        assert "RL414" not in _codes(tmp_path)
        with run.logtree(0, title="second") as lt:
            lt.text("two")
    assert "RL414" not in _codes(tmp_path)
    html.write_bytes(old_html)  # what a kill between the JSON and the HTML replace leaves
    found = [f for f in validate_run(tmp_path).findings if f.code == "RL414"]
    assert [(f.file, str(f.severity)) for f in found] == [("train_iteration_000000.html",
                                                           "warning")]
    assert "different writes" in found[0].message


def test_twins_without_write_ids_are_not_judged(tmp_path: pathlib.Path) -> None:
    """Twins that carry no write id at all (the cookbook's) give no RL414."""
    with RunWriter(tmp_path) as run:
        run.write_config({"lr": 1})
        run.log_metrics({"x": 0}, step=0)
        with run.logtree(0, title="first") as lt:
            lt.text("one")
    html = tmp_path / "train_iteration_000000.html"
    html.write_bytes(html.read_bytes().replace(b'<meta name="rlio-write-id"', b"<meta x", 1))
    doc = tmp_path / "train_iteration_000000_logtree.json"
    doc.write_bytes(doc.read_bytes().replace(b'"write_id"', b'"other_key"', 1))
    assert "RL414" not in _codes(tmp_path)
