"""Unit tests of rlio.schema and the schemas/ folder: loadable, well-formed, explained failures."""

from __future__ import annotations

import json

import jsonschema
import pytest
from factories import run_cli

from rlio import schema
from rlio.cli import main

_DRAFT07_ONLY = {"$dynamicRef", "$dynamicAnchor", "unevaluatedProperties", "unevaluatedItems",
                 "prefixItems", "dependentSchemas", "dependentRequired", "$recursiveRef"}


def _keywords(node: object) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            found.add(k)
            found |= _keywords(v)
    elif isinstance(node, list):
        for v in node:
            found |= _keywords(v)
    return found


@pytest.mark.parametrize("name", schema.SCHEMA_NAMES)
def test_every_schema_is_valid_2020_12_with_stable_id(name: str) -> None:
    """Each schema is valid draft 2020-12 with a stable $id and no keyword newer than draft-07."""
    doc = schema.load_schema(name)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc["$id"] == f"urn:rlio:schema:{name}:1"
    assert not (_keywords(doc) & _DRAFT07_ONLY)


def test_every_file_kind_has_a_schema() -> None:
    """KIND_SCHEMA names only existing schemas, one per JSON file kind of docs/format.md."""
    assert set(schema.KIND_SCHEMA.values()) == set(schema.SCHEMA_NAMES)


def test_unknown_schema_name_is_a_clear_error() -> None:
    """Asking for a schema that does not exist names the valid choices."""
    with pytest.raises(ValueError, match="metrics-line"):
        schema.load_schema("nope")


def test_explain_gives_pointer_and_message() -> None:
    """explain() returns the JSON pointer and a one-line message of the best error."""
    checkpoint = schema.record_schema("checkpoint-line")
    assert checkpoint.explain({"name": "000010", "batch": 3}) is None
    pointer, message = checkpoint.explain({"name": "x", "batch": -1}) or ("", "")
    assert pointer == "/batch" and "minimum" in message and "\n" not in message
    metrics = schema.record_schema("metrics-line")
    pointer, _ = metrics.explain({"step": 0, "a/b": {"nested": 1}}) or ("", "")
    assert pointer == "/a~1b"


def test_fast_check_agrees_on_typical_records() -> None:
    """The fast predicate accepts a valid checkpoint and refuses a nameless one."""
    passes = schema.record_schema("checkpoint-line").passes
    assert passes({"name": "final", "state_path": "tinker://r/w/f"})
    assert not passes({"batch": 1})
    assert passes({"name": "x", "state_path": "relative/dir"})
    assert not passes({"name": "x", "state_path": ""})


def test_cli_schema_lists_and_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """`rlio schema` lists the names; `rlio schema NAME` prints that schema as JSON."""
    assert main(["schema"]) == 0
    assert capsys.readouterr().out.split() == list(schema.SCHEMA_NAMES)
    assert main(["schema", "logtree"]) == 0
    assert json.loads(capsys.readouterr().out)["$id"] == "urn:rlio:schema:logtree:1"
    assert main(["schema", "bogus"]) == 2


def test_schemas_load_from_any_working_directory(tmp_path: object) -> None:
    """The schemas are found as package data, not relative to the caller's directory."""
    proc = run_cli("schema", "config", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["title"] == "config.json"
