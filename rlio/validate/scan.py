"""The validator's per-file passes: stream JSONL line by line, parse JSON documents, sniff HTML.

Memory stays flat: a JSONL file is read by the bounded line reader (``rlio._codec.lines``) and
each record is dropped as soon as it has been judged. Each line is parsed by orjson and judged
by its schema (``rlio.schema.record_schema``: jsonschema-rs, every rule); a record that failed is
explained only while the file's findings of that code are under the cap.
Everything here returns findings as values: a hostile file (invalid UTF-8, a torn tail, a 10 MB
string, JSON nested past every parser's limit) is a finding, never an exception.
"""

from __future__ import annotations

import codecs
import contextlib
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, Final, NamedTuple, TypeAlias

import orjson

from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_LINE, ForwardLines
from rlio._codec.prefix import is_cut_record
from rlio.findings import CATALOGUE, Finding, Severity, finding
from rlio.schema import TOO_DEEP_TO_EXPLAIN, Level, RecordSchema, record_schema

#: A JSON document (config, logtree) larger than this is not parsed; RL114.
MAX_DOCUMENT: Final = 512 << 20
#: A line longer than this is reported at info level (RL115).
LONG_LINE: Final = 1 << 20
_CHUNK: Final = 1 << 20

#: ``on_record(record, line, schema_valid)``: the per-record checks of one file kind.
RecordHook: TypeAlias = Callable[[Any, int, bool], None]


def short(value: Any, limit: int = 60) -> str:
    """``repr`` of ``value`` cut to ``limit`` characters: messages stay one short line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Sink:
    """The findings of one file, capped per code (the excess is counted, then summarized)."""

    def __init__(self, file: str, cap: int) -> None:
        self.file = file
        self.cap = max(1, cap)
        self.items: list[Finding] = []
        self.counts: dict[str, int] = {}
        self.nonfinite_first: int | None = None
        self.nonfinite_lines = 0

    def full(self, code: str) -> bool:
        """True once ``code`` reached the cap (callers may skip the work of building a message)."""
        return self.counts.get(code, 0) >= self.cap

    def add(
        self, code: str, message: str, *, line: int | None = None, pointer: str = "",
        severity: Severity | None = None,
    ) -> None:
        """Record one finding in this file (counted only, once the code is capped)."""
        n = self.counts.get(code, 0) + 1
        self.counts[code] = n
        if n <= self.cap:
            self.items.append(finding(code, message, file=self.file, line=line, pointer=pointer,
                                      severity=severity))

    def nonfinite(self, line: int | None) -> None:
        """Note a line holding NaN/Infinity tokens; one RL104 per file is built by ``finish``."""
        if self.nonfinite_first is None:
            self.nonfinite_first = line
        self.nonfinite_lines += 1

    def merge(self, other: Sink, line_offset: int) -> None:
        """Fold in a later byte range's findings (its line numbers start after ``line_offset``)."""
        for f in other.items:
            self.add(f.code, f.message, line=None if f.line is None else f.line + line_offset,
                     pointer=f.pointer, severity=f.severity)
        for code, n in other.counts.items():
            self.counts[code] = self.counts.get(code, 0) + max(0, n - other.cap)
        if other.nonfinite_first is not None:
            if self.nonfinite_first is None:
                self.nonfinite_first = other.nonfinite_first + line_offset
            self.nonfinite_lines += other.nonfinite_lines

    def finish(self) -> list[Finding]:
        """The findings, plus one RL104 for non-finite tokens and one RL112 per capped code."""
        out = list(self.items)
        if self.nonfinite_lines:
            where = (f"in {self.nonfinite_lines} line(s); the first is here"
                     if self.nonfinite_first is not None else "in this document")
            out.append(finding(
                "RL104", f"NaN/Infinity tokens (not strict JSON; read as null) {where}",
                file=self.file, line=self.nonfinite_first))
        for code, n in sorted(self.counts.items()):
            if n > self.cap:
                out.append(capped(code, n - self.cap, self.cap, file=self.file))
        return out


def capped(code: str, extra: int, cap: int, *, file: str) -> Finding:
    """The RL112 summary of ``extra`` unlisted ``code`` findings: a warning, or info when the
    capped code is info (a flood of infos must not raise a clean run's severity)."""
    sev = Severity.INFO if CATALOGUE[code].severity is Severity.INFO else None
    return finding("RL112", f"{extra} more {code} finding(s) here are not listed (cap {cap} "
                            "per code)", file=file, severity=sev)


def verdict(check: Callable[[Any], bool], instance: Any) -> bool:
    """The check's verdict; instances too deep for the Python stack go to a deep thread."""
    try:
        return bool(check(instance))
    except RecursionError:
        return bool(call_deep(check, instance))


def explain_one(rs: RecordSchema, instance: Any, *, level: Level = "error") -> tuple[str, str]:
    """One best ``(pointer, message)`` for an invalid instance (``RecordSchema.explain``)."""
    try:
        found = rs.explain(instance, level=level)
    except RecursionError:
        found = ("", TOO_DEEP_TO_EXPLAIN)
    except Exception as exc:  # an explainer bug must not hide the verdict
        found = ("", f"does not match the {rs.name} schema ({type(exc).__name__} while "
                     "explaining)")
    if found is None:  # the two verdicts disagree: report the verdict anyway
        return "", f"does not match the {rs.name} schema"
    return found


def judge(sink: Sink, schema: str, instance: Any, line: int | None) -> bool:
    """Schema verdict for one record or document: one RL201 (best error) when it breaks an
    error-level rule, else one RL205 when it breaks a warning-level one (an expectation: the
    writer accepted it). Returns whether it passes the error-level rules."""
    rs = record_schema(schema)
    try:
        ok = verdict(rs.passes, instance)
        warn = ok and rs.has_warnings and not verdict(rs.clean, instance)
    except RecursionError:
        sink.add("RL106", "nested too deeply to validate", line=line)
        return False
    if not ok or warn:
        code = "RL205" if warn else "RL201"
        if sink.full(code):
            sink.add(code, "", line=line)
        else:
            pointer, message = explain_one(rs, instance, level="full" if warn else "error")
            if warn:
                message += " (an expectation, not a rule: readers take the value)"
            sink.add(code, message, line=line, pointer=pointer)
    return ok


class _Pending(NamedTuple):
    """A failed line held back until we know whether it is the file's last (torn) line;
    ``damage``: it looks like a cut append between JSON lines (RL117 if one follows)."""

    line: int
    code: str
    message: str
    damage: bool


def scan_jsonl(
    stream: BinaryIO, sink: Sink, *, schema: str, append_only: bool,
    on_record: RecordHook | None = None, limit: int | None = None, at_eof: bool = True,
    first_line: int = 1,
) -> tuple[int, int]:
    """Judge every line of a JSONL stream from its current position (a line boundary) against
    ``schema``; returns ``(lines, bytes)`` read.

    Each line is parsed by ``orjson.loads`` and judged by the schema's checker, then handed to
    ``on_record`` with its verdict; a line orjson refuses is classified (``rlio._codec.jsonl.
    decode``: NaN tokens are read, RL104) or held back until the next line shows whether it was
    a torn tail (RL103 when ``append_only``, else RL113) or crash damage. ``limit`` bytes end a
    range on a line boundary, ``at_eof`` says whether that is the file's end (only then is a line
    "last"), ``first_line`` numbers the first line (a log read on from an offset).
    """
    check = record_schema(schema).check("full")  # every rule: one it accepts gives no finding
    loads = orjson.loads
    reader = ForwardLines(stream, max_line=MAX_LINE, limit=limit, first=first_line)
    pending: _Pending | None = None
    lineno = first_line - 1
    for lineno, line, terminated in reader:
        # the line before this one was held back as unparseable (a blank line is no damage)
        after_bad = pending is not None and pending.code != "RL105"
        if pending is not None:
            _flush(sink, pending, append_only and pending.damage and _parses(line))
            pending = None
        if line is None:
            sink.add("RL114", f"line longer than {MAX_LINE >> 20} MiB; not parsed", line=lineno)
            continue
        if (not terminated or len(line) > LONG_LINE) and not _readable(
                sink, lineno, line, at_eof, append_only):
            continue
        try:
            record = loads(line)
        except orjson.JSONDecodeError:
            record, pending = _slow_decode(line, lineno, sink, after_bad)
            if pending is not None:
                continue
        try:
            ok = check(record)
        except RecursionError:
            ok = False
        if not ok:  # deep documents, explanation, capping
            ok = judge(sink, schema, record, lineno)
        if on_record is not None:
            on_record(record, lineno, ok)
    if pending is not None:
        if at_eof and pending.code != "RL105":
            _torn(sink, pending.line, append_only, pending.message)
        else:
            _flush(sink, pending, False)
    return lineno - first_line + 1, reader.offset


def _readable(sink: Sink, lineno: int, line: bytes, at_eof: bool, append_only: bool) -> bool:
    """Findings of a line very long or unterminated; whether it is parsed still."""
    if not line.endswith(b"\n"):  # only the very last line can lack its newline
        if at_eof:
            _torn(sink, lineno, append_only, "has no final newline")
            return False  # (the last line: the reader ends)
        return True
    sink.add("RL115", f"line is {len(line) / (1 << 20):.1f} MiB long", line=lineno)
    return True


def _torn(sink: Sink, line: int, append_only: bool, why: str) -> None:
    if append_only:
        sink.add("RL103", f"torn last line ({why}): readers ignore it; rlio's writer moves it "
                          "aside on reopen", line=line)
    else:
        sink.add("RL113", f"last line {why}: the file was cut while being written", line=line)


def _parses(line: bytes | None) -> bool:
    """Whether ``line`` is JSON (NaN tokens allowed): asked only after a line that was not."""
    if line is None:
        return False
    try:
        decode(line)
    except DecodeError:
        return False
    return True


def _flush(sink: Sink, p: _Pending, damage: bool) -> None:
    """Report a held-back line that is not the file's last.

    ``damage``: in an append-only file, an object cut short (alone, or with a whole line glued
    to it) between JSON lines, which is what a killed append followed by a restart leaves
    (docs/format.md §2): crash damage readers skip, RL117 (warning). Other bad lines, and runs of
    them, stay errors (RL102).
    """
    if damage and p.code == "RL102":
        sink.add("RL117", f"{p.message}: crash damage (a killed append, then more lines); "
                          "readers skip it", line=p.line)
    else:
        sink.add(p.code, p.message, line=p.line)


def _decode(data: bytes, sink: Sink, line: int | None) -> Any:
    """``data`` parsed with NaN tokens read as null (noted for RL104); raises DecodeError."""
    value, had_nonfinite = decode(data)
    if had_nonfinite:
        from rlio._codec.normalize import nonfinite_to_none

        sink.nonfinite(line)
        value = nonfinite_to_none(value)
    return value


def _slow_decode(line: bytes, lineno: int, sink: Sink,
                 after_bad: bool) -> tuple[Any, _Pending | None]:
    """Decode a line orjson refused: NaN tokens are accepted (RL104), anything else is held back."""
    try:
        return _decode(line, sink, lineno), None
    except DecodeError as exc:
        code, msg = {
            "empty": ("RL105", "blank line (readers skip it)"),
            "deep": ("RL106", f"line is {exc} (orjson stops at 1,024 levels)"),
            "utf8": ("RL101", f"line is not valid UTF-8 ({exc})"),
        }.get(exc.kind, ("RL102", f"line is not valid JSON ({exc})"))
        return None, _Pending(lineno, code, msg, not after_bad and is_cut_record(line))


def check_document(
    data: bytes, sink: Sink, *, schema: str, kind: str,
) -> tuple[bool, Any]:
    """Parse and judge one JSON document (config, logtree). Returns ``(parsed, value)``."""
    if not data.strip():
        sink.add("RL111", f"empty {kind} document ({len(data)} bytes of whitespace)"
                 if data else f"empty {kind} document (0 bytes)")
        return False, None
    try:
        value = _decode(data, sink, None)
    except DecodeError as exc:
        sink.add(*{
            "deep": ("RL106", f"document is {exc}: no reader can parse it (orjson stops at "
                              "1,024 levels, Python's json near its recursion limit)"),
            "utf8": ("RL101", f"document is not valid UTF-8 ({exc})"),
        }.get(exc.kind, ("RL102", f"document is not valid JSON ({exc})")))
        return False, None
    judge(sink, schema, value, None)
    return True, value


def check_html(head: bytes, tail: bytes, size: int, sink: Sink, *, chart: bool = False) -> None:
    """An HTML report must be a complete document: ``<!doctype html`` ... ``</html>`` (RL110).

    ``chart`` (the optional timing Gantt chart, written by plotting libraries) only needs to end
    with ``</html>``.
    """
    if size == 0:
        sink.add("RL110", "HTML report is empty (0 bytes)")
        return
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not chart and not start.startswith(b"<!doctype html"):
        sink.add("RL110", f"HTML report does not start with <!doctype html> (starts with "
                          f"{short(head[:20])})")
        return
    if not tail.rstrip().lower().endswith(b"</html>"):
        sink.add("RL110", f"HTML report is truncated: it does not end with </html> ({size} bytes)")


def check_utf8_text(stream: BinaryIO, sink: Sink) -> None:
    """Stream a text file through a UTF-8 decoder; report the first invalid byte."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    while True:
        chunk = stream.read(_CHUNK)
        final = not chunk
        held = len(decoder.getstate()[0])
        try:
            decoder.decode(chunk, final)
        except UnicodeDecodeError as exc:
            at = offset - held + exc.start
            sink.add("RL108", f"not valid UTF-8 (first bad byte near offset {max(0, at)})")
            return
        if final:
            return
        offset += len(chunk)


def call_deep(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a thread with a large stack and recursion limit, for documents
    nested deeper than Python's default limit allows (JSON up to orjson's 1,024 levels).
    Re-raises RecursionError if even that is not enough."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    old_limit = sys.getrecursionlimit()
    thread = threading.Thread(target=target, name="rlio-deep-validate", daemon=True)
    old_stack = threading.stack_size()
    sys.setrecursionlimit(max(old_limit, 200_000))
    try:
        # read when the thread starts; a platform refusing a large stack keeps the default
        with contextlib.suppress(ValueError, RuntimeError):
            threading.stack_size(512 << 20)
        try:
            thread.start()
        finally:
            threading.stack_size(old_stack)
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if "error" in box:
        raise box["error"]
    return box.get("value")
