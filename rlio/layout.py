"""The naming contract of a run directory (SPEC §1): padding, both layouts, labels, path parsing.

Pure functions, no I/O. Every other module asks this one for a file name instead of building it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal, overload

Layout = Literal["flat", "nested"]
Artifact = Literal["html", "logtree", "rollout_summaries"]

METRICS: Final = "metrics.jsonl"
CONFIG: Final = "config.json"
CHECKPOINTS: Final = "checkpoints.jsonl"
CODE_DIFF: Final = "code.diff"
TIMING_SPANS: Final = "timing_spans.jsonl"
LOGS: Final = "logs.log"
TRACE_EVENTS: Final = "trace_events.jsonl"
REPORT: Final = "report.html"

#: Top-level files and their kind.
TOP_LEVEL_KINDS: Final[dict[str, str]] = {
    METRICS: "metrics",
    CONFIG: "config",
    CHECKPOINTS: "checkpoints",
    CODE_DIFF: "code_diff",
    TIMING_SPANS: "timing_spans",
    LOGS: "logs",
    TRACE_EVENTS: "trace_events",
    REPORT: "report",
}

#: Append-only files: a torn last line there is what a crash leaves, not corruption.
APPEND_ONLY: Final = frozenset({METRICS, CHECKPOINTS, TIMING_SPANS, TRACE_EVENTS, LOGS})

#: Sidecar suffixes. Bytes rlio moves out of an append-only file are kept here, never deleted:
#: a torn last line found on reopen, and lines a resume supersedes.
TORN_SUFFIX: Final = ".torn"
SUPERSEDED_SUFFIX: Final = ".superseded"

_ARTIFACT_SUFFIX: Final[dict[Artifact, str]] = {
    "html": ".html",
    "logtree": "_logtree.json",
    "rollout_summaries": "_rollout_summaries.jsonl",
}
_SUFFIX_ARTIFACT: Final[dict[str, Artifact]] = {v: k for k, v in _ARTIFACT_SUFFIX.items()}
_LABEL_OUTSIDE = re.compile(r"[^A-Za-z0-9_.-]+")
_LABEL_OK = re.compile(r"[A-Za-z0-9_.-]+")
_SUFFIXES = r"(?P<suffix>\.html|_logtree\.json|_rollout_summaries\.jsonl)"
_FLAT = re.compile(r"(?:train|eval_(?P<label>.+?))_iteration_(?P<n>[0-9]+)" + _SUFFIXES)
_NESTED_DIR = re.compile(r"iteration_(?P<n>[0-9]+)")
_NESTED_FILE = re.compile(r"(?:train|eval_(?P<label>.+?))" + _SUFFIXES)
_FLAT_GANTT = re.compile(r"timing_gantt_(?P<n>[0-9]+)\.html")


def iteration_number(value: Any) -> int:
    """``value`` as an iteration number: an integer >= 0 (``int`` or any ``__index__`` type, such
    as numpy integers; ``bool``, floats and strings are refused).

    Raises:
        ValueError: naming the value.
    """
    if isinstance(value, bool):
        raise ValueError(f"iteration must be an int >= 0, got {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"iteration must be an int >= 0, got {value!r}") from None
    if n < 0:
        raise ValueError(f"iteration must be >= 0, got {n}")
    return n


def format_iteration(iteration: int) -> str:
    """Return ``iteration`` zero-padded to at least six digits (``42`` -> ``"000042"``).

    Raises:
        ValueError: ``iteration`` is not an iteration number (``iteration_number``).
    """
    return f"{iteration_number(iteration):06d}"


def sanitize_label(name: str) -> str:
    """Map an evaluator name to its label (SPEC §1): ``"test set (v2)"`` -> ``"test_set_v2"``."""
    label = _LABEL_OUTSIDE.sub("_", str(name)).strip("._")
    return label or "unnamed"


def is_valid_label(label: str) -> bool:
    """True when ``label`` is what ``sanitize_label`` produces for itself (a fixed point)."""
    return bool(_LABEL_OK.fullmatch(label)) and sanitize_label(label) == label


def split_name(label: str | None) -> str:
    """The rollout-summary ``split`` for a file: ``"train"`` or ``"eval/<label>"``."""
    return "train" if label is None else f"eval/{label}"


def iteration_path(
    layout: Layout, iteration: int, artifact: Artifact, *, label: str | None = None
) -> str:
    """Run-relative POSIX path of one per-iteration file.

    Args:
        layout: ``"flat"`` or ``"nested"``.
        iteration: 0-based training batch index.
        artifact: ``"html"``, ``"logtree"`` or ``"rollout_summaries"``.
        label: a *sanitized* evaluator label, or None for the training rollouts.
    """
    n = format_iteration(iteration)
    if label is not None and not is_valid_label(label):
        raise ValueError(f"evaluator label {label!r} is not sanitized; use sanitize_label()")
    stem = "train" if label is None else f"eval_{label}"
    suffix = _ARTIFACT_SUFFIX[artifact]
    if layout == "flat":
        return f"{stem}_iteration_{n}{suffix}"
    if layout == "nested":
        return f"iteration_{n}/{stem}{suffix}"
    raise ValueError(f"layout must be 'flat' or 'nested', got {layout!r}")


@dataclass(frozen=True, slots=True)
class RunPath:
    """What a run-relative path is.

    Attributes:
        path: the run-relative POSIX path that was parsed.
        kind: ``metrics``, ``config``, ``checkpoints``, ``code_diff``, ``timing_spans``, ``logs``,
            ``trace_events``, ``html``, ``logtree``, ``rollout_summaries``, ``timing_gantt``,
            ``sidecar`` or ``unknown``.
        iteration: the iteration in the name, for per-iteration files.
        label: the evaluator label, None for training files and top-level files.
        layout: ``"flat"`` or ``"nested"`` for per-iteration files, else None.
        problem: why a name that looks like a run file breaks the naming rules, else None.
    """

    path: str
    kind: str
    iteration: int | None = None
    label: str | None = None
    layout: Layout | None = None
    problem: str | None = None

    @property
    def split(self) -> str:
        """The ``split`` value records in this file must carry."""
        return split_name(self.label)


def _iteration_problem(digits: str, label: str | None) -> str | None:
    if f"{int(digits):06d}" != digits:
        return f"iteration {digits!r} is not zero-padded to six digits (expected {int(digits):06d})"
    if label is not None and not is_valid_label(label):
        return (
            f"evaluator label {label!r} has characters outside [A-Za-z0-9_.-] or is not "
            f"sanitized (expected {sanitize_label(label)!r})"
        )
    return None


def parse_path(path: str) -> RunPath:
    """Classify a run-relative POSIX path (never raises)."""
    if path in TOP_LEVEL_KINDS:
        return RunPath(path, TOP_LEVEL_KINDS[path])
    base, _, ext = path.rpartition(".")
    if base in TOP_LEVEL_KINDS and "." + ext in (TORN_SUFFIX, SUPERSEDED_SUFFIX):
        return RunPath(path, "sidecar")
    parts = path.split("/")
    if len(parts) == 1:
        m = _FLAT.fullmatch(path)
        if m:
            n, label = m["n"], m["label"]
            return RunPath(
                path, _SUFFIX_ARTIFACT[m["suffix"]], int(n), label, "flat",
                _iteration_problem(n, label),
            )
        m = _FLAT_GANTT.fullmatch(path)
        if m:
            n = m["n"]
            return RunPath(path, "timing_gantt", int(n), None, "flat", _iteration_problem(n, None))
        return RunPath(path, "unknown")
    if len(parts) == 2:
        d = _NESTED_DIR.fullmatch(parts[0])
        if d:
            n = d["n"]
            m = _NESTED_FILE.fullmatch(parts[1])
            if m:
                label = m["label"]
                return RunPath(
                    path, _SUFFIX_ARTIFACT[m["suffix"]], int(n), label, "nested",
                    _iteration_problem(n, label),
                )
            if parts[1] == "timing_gantt.html":
                return RunPath(
                    path, "timing_gantt", int(n), None, "nested", _iteration_problem(n, None)
                )
    return RunPath(path, "unknown")


@overload
def detect_layout(paths: Iterable[str], *, first: Literal[True]) -> Layout | None: ...


@overload
def detect_layout(
    paths: Iterable[str], *, first: bool = False
) -> Layout | Literal["mixed"] | None: ...


def detect_layout(paths: Iterable[str], *, first: bool = False) -> Layout | Literal["mixed"] | None:
    """The layout a set of run-relative paths uses; ``"mixed"`` for both, None for neither.

    With ``first``, the layout of the first per-iteration path, reading no further (a writer
    reopening a run keeps the layout it finds, without listing the whole run).
    """
    seen: set[str] = set()
    for p in paths:
        rp = parse_path(p)
        if rp.layout is not None:
            if first:
                return rp.layout
            seen.add(rp.layout)
            if len(seen) == 2:
                return "mixed"
    if not seen:
        return None
    return "flat" if "flat" in seen else "nested"
