"""The README keeps its two set-up commands runnable (twice in a row) and in step with CI."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from factories import run_cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def setup_commands() -> list[str]:
    """The shell lines of the README's "Set up" section, in order."""
    section = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", section, flags=re.S)]


def test_readme_has_install_demo_and_test_commands() -> None:
    """The set-up section holds a light line (the base package from the checkout, the demo,
    validate) and the test line (the test extras, the cookbook, pytest) that .ci/run runs as
    written."""
    install, tests = setup_commands()[:2]
    assert ".venv/bin/pip install -e . &&" in install and "[" not in install
    assert "rlio demo out/demo" in install and "rlio validate out/demo" in install
    assert "pip install -e '.[dev]'" in tests and "--no-deps 'tinker-cookbook==0.6.1'" in tests
    assert tests.endswith(".venv/bin/python -m pytest -m 'not slow'")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci.splitlines()


def test_readme_is_short_and_links_its_details() -> None:
    """The README stays a page for users (under about 150 lines) and links the documents its
    details moved to, all of which exist."""
    assert README.count("\n") <= 155
    for doc in ("docs/storage.md", "docs/benchmarks.md", "docs/cli.md", "docs/development.md"):
        assert f"]({doc})" in README and (ROOT / doc).is_file(), doc


def test_readme_rlio_commands_run_twice_in_a_row(tmp_path: Path) -> None:
    """Every rlio step of the install line (demo, validate) succeeds when the line runs twice."""
    install = setup_commands()[0]
    steps = [shlex.split(part) for part in install.split("&&")]
    rlio_steps = [argv[1:] for argv in steps if argv[0].endswith("bin/rlio")]
    assert [s[0] for s in rlio_steps] == ["demo", "validate"]
    for _ in range(2):
        for args in rlio_steps:
            done = run_cli(*args, cwd=tmp_path)
            assert done.returncode == 0, (args, done.stdout, done.stderr)
    assert (tmp_path / "out" / "demo" / "metrics.jsonl").exists()


def test_readme_cites_docs_not_a_missing_spec() -> None:
    """The README links docs/format.md, docs/findings.md and docs/api.md, all of which exist."""
    for doc in ("docs/format.md", "docs/findings.md", "docs/api.md"):
        assert doc in README and (ROOT / doc).is_file(), doc


def test_development_points_at_documents_in_the_repository() -> None:
    """The Development section links docs/architecture.md (which exists) and no document outside
    the repository."""
    section = README.split("## Development", 1)[1]
    assert "docs/architecture.md" in section and (ROOT / "docs" / "architecture.md").is_file()
    for target in re.findall(r"\]\(([^)#]+)", section):
        assert "://" in target or (ROOT / target).exists(), target
    assert "DESIGN" not in README


def test_cookbook_snippet_runs_against_the_real_cookbook(tmp_path: Path) -> None:
    """The README's cookbook block runs as written (its own imports and log_path) against the
    installed tinker-cookbook 0.6.1, and leaves a run rlio validates without an error."""
    from importlib import metadata

    from factories import run_python

    import rlio

    assert metadata.version("tinker-cookbook") == "0.6.1"
    section = README.split("## Cookbook training loops", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert "from tinker_cookbook.utils import ml_log" in block and "log_path = " in block
    done = run_python(f"import os\nos.chdir({str(tmp_path)!r})\n{block}")
    assert done.returncode == 0, done.stderr
    run = tmp_path / "runs" / "cookbook-exp"
    assert (run / "config.json").is_file() and (run / "metrics.jsonl").is_file()
    assert rlio.validate_run(run).ok
