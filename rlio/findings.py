"""Findings: what the validator reports. Severity, Finding, Report and the code catalogue.

Codes are grouped by hundreds and never reused: 1xx parse and I/O, 2xx schema, 3xx layout and
naming, 4xx cross-file, 5xx resume. The catalogue below is the one place a code is defined; the
README's table is generated from it (``python -m rlio.findings``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from rlio._version import __version__


class Severity(enum.IntEnum):
    """How bad a finding is; ordered so that ``ERROR > WARNING > INFO``."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """``"error"`` -> ``Severity.ERROR``; raises ValueError naming the accepted words."""
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"severity must be error, warning or info, got {text!r}") from None


class CodeInfo(NamedTuple):
    """A catalogue entry: the default severity and a short title of one finding code."""

    severity: Severity
    title: str


E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO  # noqa: E741 - catalogue shorthand

CATALOGUE: dict[str, CodeInfo] = {
    # 1xx: parse and I/O
    "RL101": CodeInfo(E, "file is not valid UTF-8"),
    "RL102": CodeInfo(E, "line or document is not valid JSON"),
    "RL103": CodeInfo(W, "torn last line in an append-only file (what a crash leaves)"),
    "RL104": CodeInfo(W, "non-finite number token (NaN, Infinity) is not strict JSON "
                         "(once per file, at its first line)"),
    "RL105": CodeInfo(W, "blank line in a JSONL file"),
    "RL106": CodeInfo(E, "JSON nested deeper than parsers accept"),
    "RL107": CodeInfo(E, "file cannot be read (I/O error; a directory or fifo where a file "
                         "belongs)"),
    "RL108": CodeInfo(W, "code.diff is not valid UTF-8"),
    "RL109": CodeInfo(E, "required file is missing"),
    "RL110": CodeInfo(W, "HTML report is empty or truncated"),
    "RL111": CodeInfo(E, "JSON document file is empty"),
    "RL112": CodeInfo(W, "too many findings of one code in one file; the rest are not listed "
                         "(info when the capped code is info)"),
    "RL113": CodeInfo(E, "last line of a replaced-whole file is not terminated or not JSON"),
    "RL114": CodeInfo(E, "line or document too large for the validator to parse (not checked)"),
    "RL115": CodeInfo(I, "very long line (over 1 MiB): valid, but heavy for line-based readers"),
    "RL116": CodeInfo(I, "the run holds no record yet (a required file may be absent)"),
    "RL117": CodeInfo(W, "damaged line in the middle of an append-only file (a killed append "
                         "followed by a restart; readers skip it)"),
    # 2xx: schema
    "RL118": CodeInfo(W, "config.json is missing from a run that holds records (it still reads "
                         "and resumes)"),
    "RL201": CodeInfo(E, "record does not match its schema"),
    "RL202": CodeInfo(W, "keys are not in the documented order"),
    "RL203": CodeInfo(I, "logtree data node of an unknown type (consumers ignore it)"),
    "RL204": CodeInfo(I, "logtree started_at has no UTC offset (naive local time)"),
    "RL205": CodeInfo(W, "value outside its expected range (a warning-level schema rule; the "
                         "writer accepts it)"),
    # 3xx: layout and naming
    "RL301": CodeInfo(I, "entry matches no known pattern (not validated)"),
    "RL302": CodeInfo(W, "name looks like a run file but breaks the naming rules"),
    "RL303": CodeInfo(W, "symbolic link (never followed)"),
    "RL304": CodeInfo(W, "run mixes the flat and nested layouts"),
    "RL305": CodeInfo(I, "sidecar file: a torn tail or superseded lines kept by rlio, or the "
                         "cookbook's pre-resume copy of metrics.jsonl"),
    "RL306": CodeInfo(I, "temporary file left by an interrupted atomic write"),
    "RL307": CodeInfo(I, "token-capture file of a kind rlio has no schema of (only the fields "
                         "every capture record carries are checked)"),
    "RL308": CodeInfo(E, "capture record's kind differs from the kind its file is named for"),
    # 4xx: cross-file
    "RL401": CodeInfo(E, "record iteration differs from the iteration in the file name"),
    "RL402": CodeInfo(E, "record split differs from the file's split"),
    "RL403": CodeInfo(E, "duplicate (group_idx, traj_idx) in one file"),
    "RL404": CodeInfo(E, "step_idx does not run 0..n-1"),
    "RL405": CodeInfo(E, "total_reward differs from the sum of step rewards plus final_reward"),
    "RL406": CodeInfo(W, "steps after episode_done: true"),
    "RL407": CodeInfo(I, "metrics step drop explained by a resume, an async eval line or a final "
                         "summary row"),
    "RL408": CodeInfo(W, "metrics step order has an unexplained gap, repeat or drop"),
    "RL409": CodeInfo(W, "checkpoint batch is beyond the last metrics step + 1"),
    "RL410": CodeInfo(I, "logtree path does not name its HTML twin"),
    "RL411": CodeInfo(W, "HTML report without its JSON twin"),
    "RL412": CodeInfo(I, "per-iteration files missing for iterations that metrics record"),
    "RL413": CodeInfo(I, "HTML reports and no logtree JSON at all (an HTML-only release, or "
                         "stopped before its first JSON)"),
    "RL414": CodeInfo(W, "logtree JSON and HTML twins come from different writes (write ids "
                         "differ)"),
    "RL415": CodeInfo(W, "timing_spans.jsonl repeats a step (spans a resume did not supersede)"),
    # 5xx: resume
    "RL501": CodeInfo(E, "resumable checkpoint record has no batch"),
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in a run (frozen; equality, hash and repr by the fields, in order).

    Not orderable with ``<``: the fields mix ``None`` and ``int`` lines and an enum, so the one
    report order is the explicit ``sort_key`` (``sorted(findings, key=Finding.sort_key)``).

    Attributes:
        code: stable code from ``CATALOGUE`` (e.g. ``"RL201"``).
        severity: how bad it is.
        file: run-relative POSIX path ("" for the run as a whole).
        line: 1-based line for JSONL files, else None.
        pointer: RFC 6901 pointer inside the record ("" for the whole record).
        message: one line naming the value and what was expected.
    """

    code: str
    severity: Severity
    file: str
    line: int | None
    pointer: str
    message: str

    def sort_key(self) -> tuple[str, int, str, str]:
        """Report order (file, line, pointer, code); a None line sorts first; never raises."""
        return (self.file, -1 if self.line is None else self.line, self.pointer, self.code)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of docs/format.md §10, keys in documented order."""
        return {
            "code": self.code,
            "severity": str(self.severity),
            "file": self.file,
            "line": self.line,
            "pointer": self.pointer,
            "message": self.message,
        }


def finding(
    code: str, message: str, *, file: str = "", line: int | None = None, pointer: str = "",
    severity: Severity | None = None,
) -> Finding:
    """Build a finding with its catalogue severity unless ``severity`` overrides it."""
    info = CATALOGUE[code]
    return Finding(code, info.severity if severity is None else severity, file, line, pointer,
                   message)


def pointer_of(path: Iterable[str | int]) -> str:
    """RFC 6901 pointer of a path of keys and indexes (``["a/b", 0]`` -> ``"/a~1b/0"``: each
    ``~`` becomes ``~0``, then each ``/`` ``~1``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


#: How a count of findings of each severity is labelled in text ("2 warning(s)"), everywhere.
COUNT_LABELS = (("error", "error(s)"), ("warning", "warning(s)"), ("info", "info(s)"))


def counts_text(counts: dict[str, int]) -> str:
    """``"0 error(s), 2 warning(s), 1 info(s)"``: a report's counts as every text output says."""
    return ", ".join(f"{counts[sev]:,} {label}" for sev, label in COUNT_LABELS)


@dataclass(frozen=True, slots=True)
class Report:
    """The outcome of validating one run: sorted findings and counts per severity (frozen;
    equality, hash and repr by the fields)."""

    run: str
    findings: tuple[Finding, ...] = ()
    layout: str | None = None

    @classmethod
    def build(cls, run: str, findings: Iterable[Finding], *, layout: str | None = None) -> Report:
        """Sort findings in report order and freeze them."""
        return cls(run, tuple(sorted(findings, key=Finding.sort_key)), layout)

    @property
    def counts(self) -> dict[str, int]:
        """``{"error": n, "warning": n, "info": n}``."""
        c = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            c[str(f.severity)] += 1
        return c

    @property
    def ok(self) -> bool:
        """True when no finding is an error."""
        return not self.at_or_above(Severity.ERROR)

    def at_or_above(self, severity: Severity) -> list[Finding]:
        """Findings whose severity is ``severity`` or worse."""
        return [f for f in self.findings if f.severity >= severity]

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` document: ``{"version", "run", "ok", "counts", "findings"}``.

        ``version`` is the rlio version that validated, ``run`` the location as given, so a
        stored report says what it judged and with which rules.
        """
        return {
            "version": __version__,
            "run": self.run,
            "ok": self.ok,
            "counts": self.counts,
            "findings": [f.to_dict() for f in self.findings],
        }


def catalogue_markdown() -> str:
    """The catalogue as a Markdown table (for the README)."""
    rows = ["| code | default severity | meaning |", "| --- | --- | --- |"]
    rows += [f"| {c} | {i.severity} | {i.title} |" for c, i in CATALOGUE.items()]
    return "\n".join(rows)


if __name__ == "__main__":  # pragma: no cover - documentation helper
    import sys

    sys.stdout.write(catalogue_markdown() + "\n")
