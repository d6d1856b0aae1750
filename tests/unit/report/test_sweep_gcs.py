"""``rlio compare`` and ``rlio query`` on a gs:// prefix (the enforcing emulator) equal the local
sweep's answers."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import factories
import pytest

import rlio
from rlio.report.sweep import render_comparison

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "storage"))
from gcs_emulator import Emulator, serving

pytestmark = pytest.mark.gcs
BUCKET = "rlio-sweep"


@pytest.fixture(scope="module")
def gs_env() -> Iterator[Emulator]:
    """The storage tests' enforcing emulator on a free loopback port, for this module."""
    with serving(BUCKET) as emu:
        yield emu


def _no_links(html: str) -> str:
    """The page without links into runs (a remote run is not linked)."""
    html = re.sub(r'<td(?: class="note")?>(<a href="[^"#]*#traj-[^"]*">transcript</a>|'
                  r"remote run: not linked)</td>", "<td>transcript</td>", html)
    return re.sub(r'<a href="[^"#][^"]*">([^<]*)</a>', r"\1", html)


def test_a_gs_sweep_compares_and_queries_like_its_local_copy(gs_env: Emulator,
                                                             tmp_path: Path) -> None:
    """The same runs (same names), tables, charts and prompt counts, and the same SQL answers
    but for the location column; remote runs are not linked."""
    local = factories.seeded_sweep(tmp_path)
    uri = factories.upload_folder(local, f"gs://{BUCKET}")
    out = str(tmp_path / "c.html")
    remote_page = render_comparison([uri], output=out, jobs=1, baseline="lr-1e-5/base")
    local_page = render_comparison([local], output=out, jobs=1, baseline="lr-1e-5/base")
    assert "href=\"" not in remote_page.split("<main>")[1].replace('href="#', "")
    assert "remote run: not linked" in remote_page
    assert _no_links(remote_page) == _no_links(local_page)
    q = "SELECT * EXCLUDE (location) FROM runs ORDER BY run"
    assert rlio.query(q, [uri], jobs=1).equals(rlio.query(q, [local], jobs=1))
    q = "SELECT * FROM metrics ORDER BY run, step"
    assert rlio.query(q, [uri], jobs=1).equals(rlio.query(q, [local], jobs=1))
