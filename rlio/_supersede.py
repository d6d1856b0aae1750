"""What a restart supersedes (docs/format.md §5): the suffix of metrics.jsonl (and of
timing_spans.jsonl) at or after the restart batch, and the per-iteration files from that
iteration on. Read from the end of the file, so the
cost is bounded by the superseded region, not the run."""

from __future__ import annotations

from rlio import layout
from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_TAIL_LINE, backward_lines, count_newlines
from rlio.storage.base import Storage

#: The per-iteration kinds a restart at iteration n supersedes from n on.
ITERATION_KINDS = frozenset({"html", "logtree", "rollout_summaries", "timing_gantt"})


class MetricsCut:
    """The superseded suffix of metrics.jsonl: its start offset and number of complete lines."""

    __slots__ = ("lines", "offset")

    def __init__(self, offset: int, lines: int) -> None:
        self.offset, self.lines = offset, lines


#: The step-keyed logs a restart rewinds: what a resumed run logs again goes to their
#: ``.superseded`` sidecars.
STEP_LOGS = (layout.METRICS, layout.TIMING_SPANS)


def metrics_cut(storage: Storage, next_batch: int,
                rel: str = layout.METRICS) -> MetricsCut | None:
    """Find the suffix of complete lines of ``rel`` (metrics.jsonl, or another log whose lines
    carry a ``step``: timing_spans.jsonl) a restart at ``next_batch`` supersedes.

    The suffix is the longest run of lines at the end of the file in which every line carrying an
    integer ``step`` has ``step >= next_batch``, trimmed to start at such a line (lines without a
    step, or unparseable, inside it go with it). Reading stops at the first line, from the end,
    whose step is below ``next_batch``: an async eval line with a repeated step before that point
    stays, which keeps the read bounded by the superseded region (plus any run of lines without
    a step just before it).
    """
    try:
        size = storage.size(rel)
    except FileNotFoundError:
        return None
    cut: MetricsCut | None = None
    complete = 0
    for seg in backward_lines(storage, rel, size,
                              max_line=MAX_TAIL_LINE + 1):
        if not seg.terminated:
            continue  # a torn tail is not a line; the writer moves it to metrics.jsonl.torn
        complete += 1
        step = step_of(seg.data)
        if step is None:
            continue
        if step < next_batch:
            break
        cut = MetricsCut(seg.start, complete)
    return cut


def whole_file_cut(storage: Storage, rel: str = layout.METRICS) -> MetricsCut | None:
    """All complete lines of ``rel``: what a restart from iteration 0 supersedes."""
    try:
        size = storage.size(rel)
    except FileNotFoundError:
        return None
    lines = count_newlines(storage, rel, size)
    return MetricsCut(0, lines) if lines else None


def step_of(data: bytes | None) -> int | None:
    if data is None or not data.strip():
        return None
    try:
        value, _ = decode(data)
    except DecodeError:
        return None
    step = value.get("step") if isinstance(value, dict) else None
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def superseded_files(storage: Storage, next_batch: int) -> list[str]:
    """Per-iteration files (both layouts, every split) at iteration ``next_batch`` or later."""
    out = []
    for entry in storage.walk():
        if entry.kind != "file":
            continue
        rp = layout.parse_path(entry.path)
        if rp.kind in ITERATION_KINDS and rp.iteration is not None and rp.iteration >= next_batch:
            out.append(entry.path)
    return sorted(out)
