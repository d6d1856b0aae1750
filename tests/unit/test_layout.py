"""Unit tests of rlio.layout: padding, labels, both layouts' names and path parsing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlio import layout


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("test", "test"),
        ("gsm8k/main", "gsm8k_main"),
        ("test set (v2)", "test_set_v2"),
        ("...", "unnamed"),
        ("", "unnamed"),
        ("_a.b-c_", "a.b-c"),
        ("../../etc", "etc"),
        ("0", "0"),
        ("é/ü", "unnamed"),
    ],
)
def test_sanitize_label_matches_spec_examples(name: str, label: str) -> None:
    """sanitize_label follows docs/format.md §1 including its worked examples."""
    assert layout.sanitize_label(name) == label


@given(st.text())
def test_sanitized_labels_are_safe_fixed_points(name: str) -> None:
    """Any name sanitizes to a non-empty label of the label alphabet that sanitizes to itself."""
    label = layout.sanitize_label(name)
    assert label and layout.is_valid_label(label)
    assert "/" not in label and label not in (".", "..")
    assert layout.sanitize_label(label) == label


@pytest.mark.parametrize(("n", "text"), [(0, "000000"), (42, "000042"), (1_000_000, "1000000")])
def test_format_iteration_pads_to_six_digits(n: int, text: str) -> None:
    """Iterations are zero-padded to at least six digits."""
    assert layout.format_iteration(n) == text


@pytest.mark.parametrize("bad", [-1, True, 1.0, "3"])
def test_format_iteration_rejects_negative_and_non_int(bad: object) -> None:
    """Negative or non-int iterations raise ValueError naming the value."""
    with pytest.raises(ValueError, match="iteration"):
        layout.format_iteration(bad)  # type: ignore[arg-type]


def test_iteration_paths_in_both_layouts() -> None:
    """Per-iteration names follow the flat and nested tables of docs/format.md §1."""
    assert layout.iteration_path("flat", 7, "html") == "train_iteration_000007.html"
    assert (layout.iteration_path("flat", 7, "logtree", label="test")
            == "eval_test_iteration_000007_logtree.json")
    assert (layout.iteration_path("nested", 7, "rollout_summaries")
            == "iteration_000007/train_rollout_summaries.jsonl")
    assert (layout.iteration_path("nested", 7, "html", label="gsm8k_main")
            == "iteration_000007/eval_gsm8k_main.html")


def test_iteration_path_refuses_unsanitized_label_and_bad_layout() -> None:
    """A label that is not sanitized, or an unknown layout, is a ValueError."""
    with pytest.raises(ValueError, match="sanitize_label"):
        layout.iteration_path("flat", 1, "html", label="../x")
    with pytest.raises(ValueError, match="layout"):
        layout.iteration_path("tree", 1, "html")  # type: ignore[arg-type]


@given(
    st.sampled_from(["flat", "nested"]),
    st.integers(0, 10**8),
    st.sampled_from(["html", "logtree", "rollout_summaries"]),
    st.one_of(st.none(), st.text(min_size=1)),
)
def test_parse_path_inverts_iteration_path(lay: str, n: int, art: str, name: str | None) -> None:
    """parse_path recovers kind, iteration, label and layout from any generated name."""
    label = None if name is None else layout.sanitize_label(name)
    rp = layout.parse_path(layout.iteration_path(lay, n, art, label=label))  # type: ignore[arg-type]
    assert (rp.kind, rp.iteration, rp.label, rp.layout, rp.problem) == (art, n, label, lay, None)
    assert rp.split == ("train" if label is None else f"eval/{label}")


def test_parse_path_top_level_sidecars_and_unknown() -> None:
    """Top-level files, sidecars and unknown names are classified, never raising."""
    assert layout.parse_path("metrics.jsonl").kind == "metrics"
    assert layout.parse_path("checkpoints.jsonl").kind == "checkpoints"
    assert layout.parse_path("metrics.jsonl.torn").kind == "sidecar"
    assert layout.parse_path("metrics.jsonl.superseded").kind == "sidecar"
    assert layout.parse_path("notes.txt").kind == "unknown"
    assert layout.parse_path("a/b/c").kind == "unknown"
    assert layout.parse_path("iteration_000001/other.json").kind == "unknown"
    assert layout.parse_path("timing_gantt_000002.html").kind == "timing_gantt"


def test_parse_path_reports_near_misses() -> None:
    """Unpadded iterations and unsanitized labels parse but carry a problem."""
    rp = layout.parse_path("train_iteration_7_logtree.json")
    assert rp.kind == "logtree" and rp.iteration == 7
    assert rp.problem is not None and "000007" in rp.problem
    rp = layout.parse_path("eval_my eval_iteration_000001.html")
    assert rp.label == "my eval" and rp.problem is not None and "my_eval" in rp.problem


def test_detect_layout() -> None:
    """detect_layout tells flat, nested, mixed and none apart."""
    flat = "train_iteration_000001.html"
    nested = "iteration_000001/train.html"
    assert layout.detect_layout([flat, "metrics.jsonl"]) == "flat"
    assert layout.detect_layout([nested]) == "nested"
    assert layout.detect_layout([flat, nested]) == "mixed"
    assert layout.detect_layout(["metrics.jsonl"]) is None


def test_iteration_numbers_accept_index_types() -> None:
    """numpy-style integers (``__index__``) are iterations; the padding is the same."""

    class Index:
        def __index__(self) -> int:
            return 7

    assert layout.iteration_number(Index()) == 7
    assert layout.format_iteration(Index()) == "000007"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="iteration must be >= 0, got -1"):
        layout.iteration_number(-1)


def test_detect_layout_first_stops_at_the_first_iteration_file() -> None:
    """``first=True`` answers the first per-iteration path's layout and reads no further."""
    flat = layout.iteration_path("flat", 0, "html")
    nested = layout.iteration_path("nested", 1, "logtree")

    def paths() -> Iterator[str]:
        yield "metrics.jsonl"
        yield nested
        raise AssertionError("read past the first per-iteration file")

    assert layout.detect_layout(paths(), first=True) == "nested"
    assert layout.detect_layout([flat, nested], first=True) == "flat"
    assert layout.detect_layout(["metrics.jsonl"], first=True) is None


def test_is_temp_file_knows_rlios_and_the_cookbooks_temp_names() -> None:
    """Interrupted-write temp names: .<name>.rlio-tmp-<hex> (rlio), .<name>.<pid>.tmp (cookbook)."""
    assert layout.is_temp_file(".config.json.rlio-tmp-51d2f3aa")
    assert layout.is_temp_file(".metrics.jsonl.4242.tmp")
    assert layout.is_temp_file(".train_logtree.json.1.tmp")
    for name in ("metrics.jsonl.4242.tmp", ".metrics.jsonl.tmp", ".x.42a.tmp", "config.json",
                 ".metrics.jsonl.4242.tmp.bak"):
        assert not layout.is_temp_file(name), name
