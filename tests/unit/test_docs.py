"""docs/ stays true: findings.md is current, api.md covers and runs, nothing cites a SPEC."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from factories import run_python

import rlio
from rlio.findings import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_findings_doc_is_generated_from_the_catalogue() -> None:
    """docs/findings.md equals what tools/gen_findings_doc.py renders (regenerate it if not)."""
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_findings_doc.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr + " (run: python tools/gen_findings_doc.py)"
    text = (DOCS / "findings.md").read_text(encoding="utf-8")
    assert all(f"| {code} |" in text for code in CATALOGUE)


def test_api_doc_names_every_public_name() -> None:
    """Every name of rlio.__all__ appears in docs/api.md as code."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    missing = [n for n in rlio.__all__ if f"`{n}" not in text and f"import {n}" not in text
               and f" {n}," not in text]
    assert missing == [], f"document these public names in docs/api.md: {missing}"


DOCUMENTS = ["README.md", *sorted(f"docs/{p.name}" for p in DOCS.glob("*.md"))]


def python_blocks(doc: str) -> list[str]:
    """The ```python blocks of a document, in order."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.parametrize("doc", [d for d in DOCUMENTS if python_blocks(d)])
def test_every_python_block_runs_as_written(tmp_path: Path, doc: str) -> None:
    """The python blocks of README.md and of each docs/*.md page run as they stand, in order,
    in an empty folder (no name a block leaves undefined, no file it does not make)."""
    blocks = python_blocks(doc)
    program = "import os\nos.chdir(os.environ['DOCS_TMP'])\n" + "\n".join(blocks)
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**os.environ, "DOCS_TMP": str(tmp_path)},
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_the_documents_hold_their_examples() -> None:
    """api.md keeps its runnable examples (5 or more), and README.md and format.md theirs."""
    assert len(python_blocks("docs/api.md")) >= 5
    assert python_blocks("README.md") and python_blocks("docs/format.md")


def test_api_doc_documents_the_reader_options() -> None:
    """docs/api.md documents rollouts_frame(backend=) and open_run(wait=) (a follower started
    before the trainer)."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    assert 'backend="pandas")' in text and "open_run(path, wait=600)" in text


def test_format_doc_keeps_the_section_numbers() -> None:
    """docs/format.md has sections 1 to 10 in order, so "docs/format.md §N" citations resolve."""
    text = (DOCS / "format.md").read_text(encoding="utf-8")
    numbers = [int(n) for n in re.findall(r"^## (\d+)\. ", text, flags=re.M)]
    assert numbers[:10] == list(range(1, 11))


@pytest.mark.parametrize("where", ["README.md", "schemas", "rlio", "docs", "conformance",
                                   "benchmarks", "tools"])
def test_no_citation_of_a_spec_outside_the_repository(where: str) -> None:
    """README, schemas, the package, docs, corpus and scripts cite docs/format.md, never a SPEC."""
    path = ROOT / where
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()
                                                  and p.suffix in (".md", ".json", ".py"))
    cited = [f"{p.relative_to(ROOT)}" for p in files
             if re.search(r"\bSPEC\b", p.read_text(encoding="utf-8", errors="replace"))]
    assert cited == []


def test_cli_help_cites_only_docs_format() -> None:
    """`rlio validate --help` (and every other command's) names docs/format.md, not a SPEC."""
    proc = run_python("""
        from rlio.cli.main import build_parser
        parser = build_parser()
        sub = next(a for a in parser._actions if a.__class__.__name__ == '_SubParsersAction')
        print('\\n'.join(p.format_help() for p in sub.choices.values()))
    """)
    assert proc.returncode == 0, proc.stderr
    assert "SPEC" not in proc.stdout
