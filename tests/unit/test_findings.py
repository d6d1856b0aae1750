"""Findings: severities, the Finding/Report shapes of docs/format.md §10, the stable catalogue."""

from __future__ import annotations

import re

import pytest

import rlio
from rlio.findings import (
    CATALOGUE,
    Finding,
    Report,
    Severity,
    catalogue_markdown,
    finding,
    pointer_of,
)

#: Codes are stable: once published, a code keeps its number and default severity forever.
PINNED = {
    "RL101": "error", "RL102": "error", "RL103": "warning", "RL104": "warning",
    "RL105": "warning", "RL106": "error", "RL107": "error", "RL108": "warning",
    "RL109": "error", "RL110": "warning", "RL111": "error", "RL112": "warning",
    "RL113": "error", "RL114": "error", "RL115": "info", "RL116": "info", "RL117": "warning",
    "RL118": "warning",
    "RL201": "error", "RL202": "warning", "RL203": "info", "RL204": "info", "RL205": "warning",
    "RL301": "info", "RL302": "warning", "RL303": "warning", "RL304": "warning",
    "RL305": "info", "RL306": "info", "RL307": "info", "RL308": "error",
    "RL401": "error", "RL402": "error", "RL403": "error", "RL404": "error", "RL405": "error",
    "RL406": "warning", "RL407": "info", "RL408": "warning", "RL409": "warning",
    "RL410": "info", "RL411": "warning", "RL412": "info", "RL413": "info", "RL414": "warning",
    "RL415": "warning",
    "RL501": "error",
}


def test_catalogue_codes_are_stable() -> None:
    """Every pinned code still exists with its default severity (codes are never reused)."""
    for code, sev in PINNED.items():
        assert str(CATALOGUE[code].severity) == sev, code
    assert set(CATALOGUE) == set(PINNED), "add new codes to PINNED (never renumber)"


def test_catalogue_shape() -> None:
    """Codes are RL + 3 digits grouped by hundreds (1-5); titles are short single lines."""
    for code, info in CATALOGUE.items():
        assert re.fullmatch(r"RL[1-5][0-9]{2}", code), code
        assert info.title and "\n" not in info.title and len(info.title) < 120, code
    assert list(CATALOGUE) == sorted(CATALOGUE)


def test_catalogue_markdown_lists_every_code() -> None:
    """The README table has a header and one row per code."""
    rows = catalogue_markdown().splitlines()
    assert rows[0] == "| code | default severity | meaning |"
    assert len(rows) == 2 + len(CATALOGUE)
    assert rows[2].startswith("| RL101 | error |")


def test_severity_order_and_parse() -> None:
    """ERROR > WARNING > INFO; parse accepts any case and names the accepted words on error."""
    assert Severity.ERROR > Severity.WARNING > Severity.INFO
    assert Severity.parse("Warning") is Severity.WARNING
    assert str(Severity.INFO) == "info"
    with pytest.raises(ValueError, match="error, warning or info"):
        Severity.parse("fatal")


def test_finding_uses_catalogue_severity_unless_overridden() -> None:
    """finding() takes the catalogue's severity; an explicit severity wins."""
    f = finding("RL103", "torn", file="metrics.jsonl", line=4)
    assert f == Finding("RL103", Severity.WARNING, "metrics.jsonl", 4, "", "torn")
    assert finding("RL112", "m", severity=Severity.INFO).severity is Severity.INFO
    with pytest.raises(KeyError):
        finding("RL999", "unknown code")


def test_finding_to_dict_has_spec_keys_in_order() -> None:
    """A finding serializes to the six docs/format.md §10 keys, severity as a word."""
    d = finding("RL201", "bad", file="a.jsonl", line=2, pointer="/x").to_dict()
    assert list(d) == ["code", "severity", "file", "line", "pointer", "message"]
    assert d["severity"] == "error" and d["line"] == 2


def test_report_sorts_counts_and_ok() -> None:
    """Report.build sorts by (file, line, pointer, code); counts and ok follow the findings."""
    fs = [finding("RL201", "b", file="b.jsonl", line=2), finding("RL104", "a", file="b.jsonl"),
          finding("RL105", "c", file="b.jsonl", line=1), finding("RL304", "run")]
    report = Report.build("run", fs, layout="flat")
    assert [f.code for f in report.findings] == ["RL304", "RL104", "RL105", "RL201"]
    assert report.counts == {"error": 1, "warning": 3, "info": 0}
    assert report.ok is False
    assert [f.code for f in report.at_or_above(Severity.WARNING)] == [
        "RL304", "RL104", "RL105", "RL201"]
    assert Report.build("run", fs[1:2]).ok is True
    doc = report.to_dict()
    assert list(doc) == ["version", "run", "ok", "counts", "findings"]
    assert doc["version"] == rlio.__version__ and doc["run"] == "run"


def test_pointer_escaping() -> None:
    """JSON pointers escape ~ and / (RFC 6901)."""
    assert pointer_of(["env/all", 0, "a~b"]) == "/env~1all/0/a~0b"
    assert pointer_of([]) == ""


def test_sort_key_orders_none_and_int_lines() -> None:
    """Sorting by Finding.sort_key never raises on mixed None/int lines; None sorts first."""
    fs = [finding("RL201", "b", file="m.jsonl", line=3), finding("RL104", "a", file="m.jsonl"),
          finding("RL105", "c", file="m.jsonl", line=1, pointer="/x"),
          finding("RL102", "d", file="m.jsonl", line=1), finding("RL304", "run")]
    ordered = sorted(fs, key=Finding.sort_key)
    assert [(f.file, f.line, f.code) for f in ordered] == [
        ("", None, "RL304"), ("m.jsonl", None, "RL104"), ("m.jsonl", 1, "RL102"),
        ("m.jsonl", 1, "RL105"), ("m.jsonl", 3, "RL201")]


def test_findings_are_not_orderable() -> None:
    """Finding defines no ordering: comparing two with < raises TypeError (use sort_key)."""
    a = finding("RL201", "x", file="m.jsonl", line=None)
    b = finding("RL201", "x", file="m.jsonl", line=2)
    with pytest.raises(TypeError):
        _ = a < b
    with pytest.raises(TypeError):
        sorted([b, a])
