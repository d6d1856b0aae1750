"""Unit tests of the logtree document checks: RL204, RL410, RL203; twins' write ids: RL414."""

from __future__ import annotations

from typing import Any

from rlio import layout
from rlio.schema import known_data_types, logtree_known_types
from rlio.validate.checks.logtree import logtree_checks, twin_write_ids
from rlio.validate.checks.view import RunView
from rlio.validate.scan import Sink

FLAT = layout.parse_path("train_iteration_000001_logtree.json")
NESTED = layout.parse_path("iteration_000001/train_logtree.json")


def check(doc: Any, rp: layout.RunPath = FLAT) -> list[tuple[str, str]]:
    s = Sink("t", 100)
    logtree_checks(doc, s, rp)
    return [(f.code, f.pointer) for f in s.items]


def doc(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"started_at": "2025-03-01T12:00:00Z", "path": None,
                            "root": {"tag": "body", "children": []}}
    base.update(fields)
    return base


def test_started_at_needs_an_offset() -> None:
    """A time without Z or an offset is RL204; dates alone and offset forms are fine."""
    assert check(doc(started_at="2025-03-01T12:00:00")) == [("RL204", "/started_at")]
    assert check(doc(started_at="2025-03-01 12:00")) == [("RL204", "/started_at")]
    for ok in ("2025-03-01T12:00:00Z", "2025-03-01T12:00:00z", "2025-03-01T12:00:00+01:00",
               "2025-03-01T12:00:00-0130", "2025-03-01T12:00:00+01", "2025-03-01", 5):
        assert check(doc(started_at=ok)) == [], ok


def test_path_must_name_the_twin() -> None:
    """path naming another file is RL410; the twin's name, or its nested path, is fine."""
    assert check(doc(path="/x/other.html")) == [("RL410", "/path")]
    assert check(doc(path="/x/train_iteration_000001.html")) == []
    assert check(doc(path="C:\\x\\train_iteration_000001.html")) == []
    assert check(doc(path="/r/iteration_000001/train.html"), NESTED) == []
    assert check(doc(path="/r/iteration_000002/train.html"), NESTED) == [("RL410", "/path")]
    assert check(doc(path="train.html"), NESTED) == []
    assert check(doc(path=""), NESTED) == [("RL410", "/path")]
    assert check(doc(path=None)) == []


def test_unknown_data_types_once_each() -> None:
    """Each unknown data type is one RL203 at its first node; known ones are silent."""
    known = sorted(known_data_types())[0]
    leaf = {"tag": "div", "data": {"type": "hist"}, "children": []}
    root = {"tag": "body", "children": [
        {"tag": "div", "data": {"type": known}, "children": [leaf, "text", leaf]},
        {"tag": "div", "data": {"type": 3}, "children": None}]}
    assert check(doc(root=root)) == [("RL203", "/root/children/0/children/2/data")]


def test_known_data_types_come_from_the_schema() -> None:
    """The known types are the types the schema's if/then clauses name."""
    assert known_data_types() == frozenset({"conversation"})


def test_non_object_document_is_skipped() -> None:
    """A document that is not an object yields nothing."""
    assert check([1]) == []
    assert check(doc(root=[1])) == []


def test_flat_path_is_judged_by_its_file_name_only() -> None:
    """A flat twin is named by its last component, whatever directories a writer's path holds."""
    assert check(doc(path="/runs/exp1/train_iteration_000001.html")) == []
    assert check(doc(path="gs://bucket/exp1/train_iteration_000001.html")) == []
    assert check(doc(path="/runs/exp1/train_iteration_000002.html")) == [("RL410", "/path")]
    assert check(doc(path="/")) == [("RL410", "/path")]  # names no file at all


HTML = "train_iteration_000001.html"
JSON = "train_iteration_000001_logtree.json"


class _Bytes:
    """A run's files as bytes, read by range (a missing file is unreadable)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        if rel not in self.files:
            raise OSError(rel)
        return self.files[rel][start:end]


def twin_findings(files: dict[str, bytes], *, storage: bool = True) -> list[tuple[str, str]]:
    paths = {p: layout.parse_path(p) for p in files}
    v = RunView("flat", paths, dict.fromkeys(paths, "file"), {p: f"shown/{p}" for p in paths},
                storage=_Bytes(files) if storage else None)  # type: ignore[arg-type]
    return [(f.code, f.message) for f in twin_write_ids(v)]


def page(write_id: str, pad: int = 0) -> bytes:
    return b" " * pad + b'<meta name="rlio-write-id" content="%s">' % write_id.encode()


def tree(write_id: str, pad: int = 0) -> bytes:
    return b" " * pad + b'{"write_id":"%s","title":"t"}' % write_id.encode()


def test_twins_with_one_write_id_agree() -> None:
    """Twins carrying the same write id (at the files' first byte) give nothing."""
    assert twin_findings({HTML: page("abc"), JSON: tree("abc")}) == []


def test_twins_with_different_write_ids_are_rl414() -> None:
    """Different ids, or an id on one twin only, are RL414 on the HTML naming both ids."""
    [(code, message)] = twin_findings({HTML: page("abc"), JSON: tree("xyz")})
    assert code == "RL414" and message.startswith(
        f"shown/{JSON} has write id xyz but its HTML twin has abc")
    [(_, message)] = twin_findings({HTML: page("abc"), JSON: b"{}"})
    assert "has write id none but its HTML twin has abc" in message
    [(_, message)] = twin_findings({HTML: b"<html>", JSON: tree("xyz")})
    assert "has write id xyz but its HTML twin has none" in message


def test_twins_are_judged_only_with_storage_and_a_twin() -> None:
    """A view without storage, or an HTML without its JSON twin, yields nothing."""
    assert twin_findings({HTML: page("abc"), JSON: tree("xyz")}, storage=False) == []
    assert twin_findings({HTML: page("abc")}) == []


def test_write_ids_are_read_from_the_files_first_bytes() -> None:
    """The JSON's id must end within its first 256 bytes and the HTML's within 4096."""
    json_id, html_id = len(tree("abc")) - len(',"title":"t"}'), len(page("abc")) - 1
    assert twin_findings({HTML: page("abc"), JSON: tree("abc", 256 - json_id)}) == []
    [(_, message)] = twin_findings({HTML: page("abc"), JSON: tree("abc", 257 - json_id)})
    assert "has write id none but its HTML twin has abc" in message
    assert twin_findings({HTML: page("abc", 4096 - html_id), JSON: tree("abc")}) == []
    [(_, message)] = twin_findings({HTML: page("abc", 4097 - html_id), JSON: tree("abc")})
    assert "has write id abc but its HTML twin has none" in message


def test_known_types_schema_finds_an_unknown_type_at_any_depth() -> None:
    """The known-types schema refuses a document with an unknown data type at any depth of
    list children (whatever else is wrong with it), and nothing else."""
    def doc(root: dict[str, Any]) -> dict[str, Any]:
        return {"title": "t", "started_at": "2025-01-01T00:00:00Z", "root": root}

    deep = {"tag": "a", "attrs": {}, "children": ["t", {"tag": "b", "attrs": {}, "children": [
        {"tag": "c", "attrs": {}, "children": [], "data": {"type": "chart"}}]}]}
    check = logtree_known_types().clean
    assert not check(doc(deep))
    known = {"tag": "a", "attrs": {}, "children": [], "data": {"type": "conversation",
                                                               "messages": []}}
    assert check(doc(known))
    assert check(doc({"tag": "a", "attrs": {}, "children": ["x"]}))
    assert not check(doc({"tag": 5, "children": [{"data": {"type": "chart"}}]}))
    for odd in (None, "text", 5, {"x": {"tag": "c", "data": {"type": "chart"}}}):
        assert check(doc({"tag": "a", "children": odd})), odd
