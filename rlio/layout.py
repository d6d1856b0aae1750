"""The naming contract of a run directory (docs/format.md §1): padding, layouts, labels, parsing.

Pure functions, no I/O. Every other module asks this one for a file name instead of building it.
"""

from __future__ import annotations

import fnmatch
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, overload

Layout: TypeAlias = Literal["flat", "nested"]
Artifact: TypeAlias = Literal["html", "logtree", "rollout_summaries"]

METRICS: Final = "metrics.jsonl"
CONFIG: Final = "config.json"
CHECKPOINTS: Final = "checkpoints.jsonl"
CODE_DIFF: Final = "code.diff"
TIMING_SPANS: Final = "timing_spans.jsonl"
LOGS: Final = "logs.log"
TRACE_EVENTS: Final = "trace_events.jsonl"
REPORT: Final = "report.html"
#: The folder of the cookbook's token capture (0.6.1 ``JsonlFileSink``): ``capture/<kind>.jsonl``,
#: one file per record kind (docs/format.md §8).
CAPTURE_DIR: Final = "capture"
#: The folder beside ``report.html`` where ``rlio report`` writes its iteration and prompt pages.
REPORT_PAGES: Final = "report"

Format: TypeAlias = Literal["jsonl", "json", "html", "text", "opaque"]

HTML_TYPE: Final = "text/html; charset=utf-8"
JSON_TYPE: Final = "application/json"
TEXT_TYPE: Final = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class FileKind:
    """One kind of run file: how its name is matched and how it is read and stored.

    Attributes:
        kind: the ``RunPath.kind`` of such files.
        name: the exact file name of a top-level file; for a per-iteration file, the end of its
            name (``"_logtree.json"``; the timing chart: its nested name).
        per_iteration: whether the name carries an iteration (both layouts, docs/format.md §1).
        schema: the schema judging it (per line for JSONL), or None.
        format: ``jsonl`` (one record a line), ``json`` (one document), ``html``, ``text``
            (UTF-8 text) or ``opaque`` (not read by the validator).
        append_only: a torn last line is what a crash leaves, not corruption.
        content_type: the Content-Type it is stored with (a browser opens reports from GCS).
        wildcard: ``name`` is a pattern of run-relative paths (``*``: any name without a
            ``/``), the kind of every match no other row names; not a fixed file.
    """

    kind: str
    name: str
    per_iteration: bool
    schema: str | None
    format: Format
    append_only: bool
    content_type: str
    wildcard: bool = False

    def __post_init__(self) -> None:
        if (self.format in ("jsonl", "json")) != (self.schema is not None):
            raise ValueError(f"file kind {self.kind!r}: JSONL and JSON kinds, and only they, "
                             f"name a schema (format {self.format!r}, schema {self.schema!r})")


#: Every kind of run file, the one table other modules derive their views from.
FILE_KINDS: Final[tuple[FileKind, ...]] = (
    FileKind("metrics", METRICS, False, "metrics-line", "jsonl", True, TEXT_TYPE),
    FileKind("config", CONFIG, False, "config", "json", False, JSON_TYPE),
    FileKind("checkpoints", CHECKPOINTS, False, "checkpoint-line", "jsonl", True, TEXT_TYPE),
    FileKind("code_diff", CODE_DIFF, False, None, "text", False, TEXT_TYPE),
    FileKind("timing_spans", TIMING_SPANS, False, "timing-spans-line", "jsonl", True, TEXT_TYPE),
    FileKind("logs", LOGS, False, None, "opaque", True, TEXT_TYPE),
    FileKind("trace_events", TRACE_EVENTS, False, "trace-event-line", "jsonl", True, TEXT_TYPE),
    FileKind("report", REPORT, False, None, "html", False, HTML_TYPE),
    FileKind("html", ".html", True, None, "html", False, HTML_TYPE),
    FileKind("logtree", "_logtree.json", True, "logtree", "json", False, JSON_TYPE),
    FileKind("rollout_summaries", "_rollout_summaries.jsonl", True, "rollout-summary-line",
             "jsonl", False, TEXT_TYPE),
    FileKind("timing_gantt", "timing_gantt.html", True, None, "html", False, HTML_TYPE),
    FileKind("capture_sample", f"{CAPTURE_DIR}/sample.jsonl", False, "capture-sample-line",
             "jsonl", True, TEXT_TYPE),
    FileKind("capture_train_op", f"{CAPTURE_DIR}/train_op.jsonl", False,
             "capture-train-op-line", "jsonl", True, TEXT_TYPE),
    FileKind("capture", f"{CAPTURE_DIR}/*.jsonl", False, "capture-line", "jsonl", True, TEXT_TYPE,
             wildcard=True),
)

#: Each kind's row, by kind name.
KINDS: Final[dict[str, FileKind]] = {k.kind: k for k in FILE_KINDS}

#: Files at a fixed run-relative path (top-level, and the known capture kinds) and their kind.
TOP_LEVEL_KINDS: Final[dict[str, str]] = {
    k.name: k.kind for k in FILE_KINDS if not k.per_iteration and not k.wildcard
}

#: Append-only files: a torn last line there is what a crash leaves, not corruption.
APPEND_ONLY: Final = frozenset(
    k.name for k in FILE_KINDS if k.append_only and not k.per_iteration and not k.wildcard
)
#: Kinds whose files are named by a pattern: (its parts split at ``/``, kind).
_WILDCARDS: Final = tuple((k.name.split("/"), k.kind) for k in FILE_KINDS if k.wildcard)
#: The capture kinds with a schema of their own, by record kind (``"sample"`` -> its file kind).
CAPTURE_KINDS: Final[dict[str, str]] = {
    k.name[len(CAPTURE_DIR) + 1:-len(".jsonl")]: k.kind for k in FILE_KINDS
    if k.name.startswith(CAPTURE_DIR + "/") and not k.wildcard
}

#: Sidecar suffixes. Bytes rlio moves out of an append-only file are kept here, never deleted:
#: a torn last line found on reopen, and lines a resume supersedes.
TORN_SUFFIX: Final = ".torn"
SUPERSEDED_SUFFIX: Final = ".superseded"
#: The cookbook (0.6.1) rewinds ``metrics.jsonl`` on resume itself and keeps the original as
#: ``metrics.jsonl.pre_resume_NNNNNN``: a known sidecar too.
_PRE_RESUME = re.compile(re.escape(METRICS) + r"\.pre_resume_[0-9]+")

#: A file name's limit on the file systems runs live on (ext4, APFS, NTFS: 255 bytes).
MAX_NAME_BYTES: Final = 255
#: The longest name around a label: ``eval_<label>_iteration_NNNNNN_rollout_summaries.jsonl``
#: (a six-digit iteration, the longest per-iteration suffix).
_LABEL_FRAME: Final = len("eval_") + len("_iteration_") + 6 + len("_rollout_summaries.jsonl")
#: Longest evaluator label (209): the longest whose every file name fits ``MAX_NAME_BYTES``
#: at a six-digit iteration. A longer sanitized name is cut and ends in ``-`` plus 8 hex digits
#: of a hash of the raw name, so two long names never share a label. Shorter labels are never
#: cut: the cookbook writes them as they are.
MAX_LABEL: Final = MAX_NAME_BYTES - _LABEL_FRAME
_LABEL_HASH: Final = 8
#: Largest iteration: a signed 64-bit integer, which every JSON reader keeps exactly and every
#: file name holds.
MAX_ITERATION: Final = 2**63 - 1
#: Where logtree twins carry their shared write id: the JSON's first key and the HTML's meta name.
WRITE_ID_KEY: Final = "write_id"
WRITE_ID_META: Final = "rlio-write-id"

_ARTIFACTS: Final[tuple[Artifact, ...]] = ("html", "logtree", "rollout_summaries")
_ARTIFACT_SUFFIX: Final[dict[Artifact, str]] = {a: KINDS[a].name for a in _ARTIFACTS}
_SUFFIX_ARTIFACT: Final[dict[str, Artifact]] = {v: k for k, v in _ARTIFACT_SUFFIX.items()}
_LABEL_OUTSIDE = re.compile(r"[^A-Za-z0-9_.-]+")
_LABEL_OK = re.compile(r"[A-Za-z0-9_.-]+")
_SUFFIXES = "(?P<suffix>" + "|".join(map(re.escape, _SUFFIX_ARTIFACT)) + ")"
_FLAT = re.compile(r"(?:train|eval_(?P<label>.+?))_iteration_(?P<n>[0-9]+)" + _SUFFIXES)
_NESTED_DIR = re.compile(r"iteration_(?P<n>[0-9]+)")
_NESTED_FILE = re.compile(r"(?:train|eval_(?P<label>.+?))" + _SUFFIXES)
_FLAT_GANTT = re.compile(r"timing_gantt_(?P<n>[0-9]+)\.html")


#: Infix of the temporary files rlio writes next to their target before an atomic rename
#: (``.<name>.rlio-tmp-<hex>``).
TEMP_INFIX: Final = ".rlio-tmp-"
#: The cookbook's own (0.6.1 ``LocalStorage.write``): ``.<name>.<pid>.tmp``, renamed over
#: ``<name>``; a crash in between leaves it.
_COOKBOOK_TEMP = re.compile(r"\..+\.[0-9]+\.tmp")


def is_temp_file(name: str) -> bool:
    """True for the file name (no folder) of an interrupted atomic write, rlio's or the
    cookbook's: not a run file, safe to delete once no writer runs."""
    return name.startswith(".") and (TEMP_INFIX in name or bool(_COOKBOOK_TEMP.fullmatch(name)))


#: Where the cookbook puts its runs by default: ``$TINKER_COOKBOOK_RUNS_DIR``, else
#: ``~/tinker-runs`` (its ``cli_utils.runs_path``); ``rlio validate`` without a PATH looks there.
RUNS_DIR_ENV: Final = "TINKER_COOKBOOK_RUNS_DIR"
DEFAULT_RUNS_DIR: Final = "~/tinker-runs"


#: What makes a folder a run (docs/format.md §1, "What counts as a run"), as messages say it.
RUN_DEFINITION: Final = (f"{METRICS}, {CHECKPOINTS} or per-iteration files, "
                         f"or {CONFIG} together with {CODE_DIFF}")
_PER_ITERATION: Final = frozenset(k.kind for k in FILE_KINDS if k.per_iteration)


def is_run_root(names: Iterable[str]) -> bool:
    """Whether a folder whose direct children are ``names`` is a run: it holds ``metrics.jsonl``,
    ``checkpoints.jsonl`` or per-iteration files (flat names or ``iteration_NNNNNN`` folders),
    or ``config.json`` together with ``code.diff``.

    The one definition of "a run": every command says "no run found" for any other folder (a
    model folder holding only ``config.json`` is not a run), and fleet discovery descends into
    folders until it finds one.
    """
    seen = set(names)
    if METRICS in seen or CHECKPOINTS in seen or {CONFIG, CODE_DIFF} <= seen:
        return True
    return any(is_iteration_dir(n) or parse_path(n).kind in _PER_ITERATION for n in seen)


def is_iteration_dir(name: str) -> bool:
    """Whether ``name`` is a nested-layout iteration folder (``iteration_000042``): a run's own
    folder, where fleet discovery never looks for another run."""
    return _NESTED_DIR.fullmatch(name) is not None


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
    if n > MAX_ITERATION:
        got = f"a {len(str(n))}-digit number" if n.bit_length() > 256 else str(n)
        raise ValueError(f"iteration must be at most 2**63 - 1 (a file name must hold it), "
                         f"got {got}")
    return n


def format_iteration(iteration: int) -> str:
    """Return ``iteration`` zero-padded to at least six digits (``42`` -> ``"000042"``).

    Raises:
        ValueError: ``iteration`` is not an iteration number (``iteration_number``).
    """
    return f"{iteration_number(iteration):06d}"


def uncut_label(name: str) -> str:
    """An evaluator name's label before any cut (docs/format.md §1): ``"test set (v2)"`` ->
    ``"test_set_v2"``; what the cookbook names files with, whatever its length."""
    return _LABEL_OUTSIDE.sub("_", str(name)).strip("._") or "unnamed"


def sanitize_label(name: str) -> str:
    """An evaluator name's label as rlio writes it: ``uncut_label``, unless longer than
    ``MAX_LABEL`` characters; such a label is cut and ends in ``-`` plus a stable 8-hex hash of
    the raw name (``MAX_LABEL`` characters in all), so every file name of it fits 255 bytes.
    """
    text = str(name)
    label = uncut_label(text)
    if len(label) <= MAX_LABEL:
        return label
    import hashlib  # only a long label needs it (an import a command's start pays otherwise)

    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"),
                             digest_size=_LABEL_HASH // 2).hexdigest()
    return f"{label[:MAX_LABEL - _LABEL_HASH - 1]}-{digest}"


def label_candidates(evaluator: str) -> tuple[str, ...]:
    """The labels a file of ``evaluator`` (a name or a label) may carry on disk: rlio's, the
    cookbook's uncut one, and the name itself as a file may hold it unsanitized (readers match
    listed files against these; never a guessed path).
    """
    return tuple(dict.fromkeys((sanitize_label(evaluator), uncut_label(evaluator), evaluator)))


def is_valid_label(label: str) -> bool:
    """True when ``label`` is a sanitized label: only ``[A-Za-z0-9_.-]``, no leading or trailing
    ``.`` or ``_``. (Its length is not judged: the cookbook writes long labels uncut.)"""
    return bool(_LABEL_OK.fullmatch(label)) and label.strip("._") == label


def capture_path(kind: str) -> str:
    """The run-relative path of the capture records of ``kind`` (``capture/sample.jsonl``)."""
    if not kind or "/" in kind or kind.startswith("."):
        raise ValueError(f"capture kind must be a file name without '/', got {kind!r}")
    return f"{CAPTURE_DIR}/{kind}.jsonl"


def capture_kind(path: str) -> str | None:
    """The record kind a capture file holds (``capture/sample.jsonl`` -> ``"sample"``), or None
    for a path that is not a capture file."""
    kind = parse_path(path).kind
    if kind != "capture" and kind not in CAPTURE_KINDS.values():
        return None
    return path[len(CAPTURE_DIR) + 1:-len(".jsonl")]


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
    if len(f"{stem}_iteration_{n}{suffix}") > MAX_NAME_BYTES:
        raise ValueError(f"evaluator label {label!r} is too long for iteration {n}: the file "
                         f"name would exceed {MAX_NAME_BYTES} bytes; use a shorter evaluator name")
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
            ``capture_sample``, ``capture_train_op``, ``capture`` (a capture kind without a
            schema of its own), ``sidecar`` or ``unknown``.
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
    if _PRE_RESUME.fullmatch(path):
        return RunPath(path, "sidecar")
    parts = path.split("/")
    for pattern, kind in _WILDCARDS:
        if len(parts) == len(pattern) and all(map(fnmatch.fnmatchcase, parts, pattern)) \
                and not parts[-1].startswith("."):
            return RunPath(path, kind)
    if parts[0] == REPORT_PAGES and len(parts) > 1 and path.endswith(".html"):
        return RunPath(path, "report")  # a page ``rlio report`` derived from the run
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
            if parts[1] == KINDS["timing_gantt"].name:
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
    if first:
        for p in paths:
            rp = parse_path(p)
            if rp.layout is not None:
                return rp.layout
        return None
    return layout_of(parse_path(p).layout for p in paths)


def layout_of(layouts: Iterable[Layout | None]) -> Layout | Literal["mixed"] | None:
    """The layout of a run whose per-iteration paths parsed to ``layouts`` (``RunPath.layout``):
    ``"mixed"`` for both, None for neither."""
    seen = set(layouts)
    seen.discard(None)
    if len(seen) == 2:
        return "mixed"
    if not seen:
        return None
    return "flat" if "flat" in seen else "nested"


def twin_path(rp: RunPath, artifact: Artifact) -> str:
    """The run-relative path of ``rp``'s twin artifact (same layout, iteration and label)."""
    if rp.layout is not None and rp.iteration is not None and rp.problem is None:
        try:
            return iteration_path(rp.layout, rp.iteration, artifact, label=rp.label)
        except ValueError:
            pass
    for suffix in _ARTIFACT_SUFFIX.values():
        if rp.path.endswith(suffix):
            return rp.path[: -len(suffix)] + _ARTIFACT_SUFFIX[artifact]
    return rp.path


def content_type(rel: str) -> str:
    """The Content-Type ``rel`` is stored with: its kind's, else by its extension."""
    row = KINDS.get(parse_path(rel).kind)
    if row is not None:
        return row.content_type
    if rel.endswith(".html"):
        return HTML_TYPE
    return JSON_TYPE if rel.endswith(".json") else TEXT_TYPE
