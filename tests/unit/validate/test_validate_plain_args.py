"""`rlio validate`'s fast reading of plain command lines agrees with the full parser."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlio.cli.main import build_parser
from rlio.cli.validate import parse_plain


def full(argv: list[str]) -> dict[str, object] | None:
    """The full parser's arguments for ``rlio validate ARGV``, or None where it exits."""
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            return vars(build_parser("validate").parse_args(["validate", *argv]))
    except SystemExit:
        return None


@pytest.mark.parametrize("argv", [
    ["runs/a"], ["runs/a", "runs/b", "gs://b/sweep/"], ["runs/a", "--format", "json"],
    ["--format=github", "runs/a"], ["runs/a", "--fail-on", "warning", "-q"],
    ["--quiet", "runs/a", "--jobs", "3"], ["runs/a", "--jobs=0"], ["runs/a", "--jobs", "007"],
    ["--format", "text", "--format", "json", "runs/a"], [""], ["runs a", "x=y"],
])
def test_plain_command_lines_read_as_the_full_parser_reads_them(argv: list[str]) -> None:
    """A plain command line gives exactly the namespace the full parser gives."""
    plain = parse_plain(argv)
    assert plain is not None and vars(plain) == full(argv)


@pytest.mark.parametrize("argv", [
    [], ["-h"], ["runs/a", "--help"], ["runs/a", "--form", "json"], ["runs/a", "--format", "xml"],
    ["runs/a", "--format"], ["runs/a", "--format", "json", "runs/b"], ["--", "-odd"], ["-"],
    ["runs/a", "--jobs", "-1"], ["runs/a", "--jobs", "x"], ["runs/a", "--watch"],
    ["runs/a", "--dask", "tcp://h:1"], ["runs/a", "--interval", "1"], ["runs/a", "-j", "2"],
    ["runs/a", "-qq"], ["runs/a", "--quiet=1"], ["runs/a", "--jobs", "\u0663"],
])
def test_other_command_lines_go_to_the_full_parser(argv: list[str]) -> None:
    """Help, abbreviations, bad choices, missing values and the rarer options are not read fast."""
    assert parse_plain(argv) is None


TOKENS = st.sampled_from([
    "runs/a", "b", "", "--format", "--format=json", "json", "github", "xml", "--fail-on",
    "warning", "info", "--fail-on=error", "-q", "--quiet", "--jobs", "2", "--jobs=4", "-1", "-",
    "--", "--watch", "-j", "--fo", "--format=", "0",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=7))
def test_plain_reading_never_differs_from_the_full_parser(argv: list[str]) -> None:
    """Whatever the command line, a fast reading is exactly the full parser's, or there is none."""
    plain = parse_plain(argv)
    if plain is not None:
        assert vars(plain) == full(argv)
