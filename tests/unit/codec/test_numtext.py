"""number_text: the one way rlio's text outputs (show, diff, compare, query) write a number."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlio import RunWriter
from rlio._codec.numtext import number_text
from rlio.cli import main
from rlio.cli.query import render_table


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_reads_back_within_six_significant_digits(value: float) -> None:
    """Every finite float is written short (at most 6 significant digits) and reads back as a
    number within that precision; an integral float below 1e15 is written as an integer."""
    text = number_text(value)
    assert math.isclose(float(text), value, rel_tol=1e-5, abs_tol=0.0)
    if value == int(value) and abs(value) < 1e15:
        assert text == str(int(value))


def test_the_forms_named_in_the_issue() -> None:
    """1e-05, a sum that is not quite 1.1, integers and non-finite numbers."""
    assert [number_text(v) for v in (1e-05, 0.1 + 1.0, 7, 2.0, math.nan, math.inf)] == [
        "1e-05", "1.1", "7", "2", "NaN", "Infinity"]


def test_diff_compare_and_query_print_one_number_the_same_way(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The learning rate 1e-05 and the value 1.1 (1.0999999999999999 after a sum) read the same
    in `rlio diff`, `rlio compare`'s page and `rlio query`'s table (its renderer: DuckDB itself
    is tested in tests/unit/reader/test_reader_sql.py)."""
    for name, lr in (("a", 1e-05), ("b", 2.5e-05)):
        with RunWriter(tmp_path / "runs" / name) as run:
            run.write_config({"lr": lr})
            run.log_metrics({"v": 0.1 + 1.0}, step=0)
    runs = [str(tmp_path / "runs" / n) for n in ("a", "b")]
    assert main(["diff", *runs]) == 0
    assert "lr: 1e-05 -> 2.5e-05" in capsys.readouterr().out
    page = tmp_path / "c.html"
    assert main(["compare", *runs, "-o", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert ">1e-05<" in html and "0.00001" not in html
    table = render_table(["run", "v"], [("a", 0.1 + 1.0), ("b", 1e-05)])  # rlio query's text
    assert table.splitlines()[2:4] == ["a      1.1", "b    1e-05"]
