"""Run the conformance corpus against any validator command and apply the matching rule.

Usage::

    python conformance/check.py [--case NAME ...] -- COMMAND ARG ... {run} ...

``{run}`` in the command is replaced by each case's ``run`` path. The command must print a JSON
document with a ``findings`` list (each finding with ``code``, ``severity``, ``file``, ``line``,
``pointer``) and exit 0 (no error), 1 (errors) or 2 (the run cannot be read). Example, for rlio::

    python conformance/check.py -- rlio validate {run} --format json

Standard library only, so it can check an implementation written in any language. Exits 0 when
every selected case passes, 1 otherwise, printing one line per case and the problems of failures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parent / "cases"
KEYS = ("code", "severity", "file", "line", "pointer")


def match_case(expected: dict[str, Any], actual: list[dict[str, Any]]) -> list[str]:
    """Apply the README's matching rule; returns the problems (empty when the case passes).

    Every expected finding must be matched by a distinct actual finding equal on code, severity,
    file, line and pointer. Extra actual findings are allowed, except any whose code is in
    ``forbidden_codes`` and, when ``no_errors`` is true, any of severity ``error``.
    """
    problems: list[str] = []
    pool = Counter(tuple(f.get(k) for k in KEYS) for f in actual)
    for e in expected["findings"]:
        key = tuple(e[k] for k in KEYS)
        if pool[key] > 0:
            pool[key] -= 1
        else:
            problems.append(f"missing expected finding {dict(zip(KEYS, key, strict=True))}")
    forbidden = set(expected.get("forbidden_codes", []))
    for f in actual:
        if f.get("code") in forbidden:
            problems.append(f"forbidden code {f.get('code')} reported: {f}")
        elif expected["no_errors"] and f.get("severity") == "error":
            problems.append(f"error reported in a case that allows none: {f}")
    return problems


def check_output(expected: dict[str, Any], exit_code: int, stdout: str) -> list[str]:
    """Problems of one command run: wrong exit code, unreadable output, or a failed match."""
    if exit_code != expected["exit_code"]:
        return [f"exit code {exit_code}, expected {expected['exit_code']}"]
    if exit_code == 2:
        return []
    try:
        findings = json.loads(stdout)["findings"]
    except (ValueError, KeyError, TypeError) as exc:
        return [f"output is not a JSON document with a findings list: {exc}"]
    return match_case(expected, findings)


def case_names(selected: list[str] | None = None) -> list[str]:
    """Names of the corpus cases (all, sorted, or the selected ones)."""
    names = sorted(p.name for p in CASES.iterdir() if p.is_dir())
    if selected:
        unknown = sorted(set(selected) - set(names))
        if unknown:
            raise SystemExit(f"unknown case(s): {', '.join(unknown)}")
        names = [n for n in names if n in selected]
    return names


def main(argv: list[str]) -> int:
    """Run ``COMMAND`` on every selected case and report; 0 when all pass."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", action="append", metavar="NAME", help="run only this case")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ... {run} ...")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or not any("{run}" in a for a in command):
        parser.error("give the validator command after --, with {run} where the run path goes")
    failed = 0
    for name in case_names(args.case):
        expected = json.loads((CASES / name / "expected.json").read_text(encoding="utf-8"))
        run = str(CASES / name / "run")
        proc = subprocess.run([a.replace("{run}", run) for a in command], capture_output=True,
                              text=True, check=False)
        problems = check_output(expected, proc.returncode, proc.stdout)
        print(f"{'ok  ' if not problems else 'FAIL'} {name}")
        for p in problems:
            print(f"     {p}")
        failed += bool(problems)
    print(f"{failed} case(s) failed" if failed else "all cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
