"""The logtree page in real headless Chromium: nothing runs, nothing loads, every message shows."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rlio.logtree import LogTree

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed"),
]


def _load(page: str, tmp_path: Path) -> tuple[str, list[str]]:
    """(DOM after load, console lines) of ``page`` opened from a file."""
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    assert CHROMIUM is not None
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


def test_page_with_hostile_model_text_loads_clean_with_every_message(tmp_path: Path) -> None:
    """Hostile model text runs nothing, logs no console message, and every message is in the DOM."""
    lt = LogTree("RL Iteration 1")
    hostile = ("</script><script>document.title='pwned'</script><img src=x onerror="
               "\"document.title='pwned'\"> <a href=\"javascript:alert(1)\">x</a>")
    roles = ["system", "user", "assistant", "tool", "assistant"]
    with lt.section("Group Rollout"):
        lt.conversation([
            {"role": role, "content": [{"type": "text", "text": f"msg{i} {hostile}"},
                                       {"type": "thinking", "thinking": hostile}],
             "tool_calls": [{"type": "function", "id": "c",
                             "function": {"name": hostile, "arguments": '{"a": "<b>"}'}}]}
            for i, role in enumerate(roles)
        ])
        lt.table({"reward": 1.0, hostile: hostile}, caption=hostile)
    dom, console = _load(lt.to_html(), tmp_path)
    assert console == []
    assert "<title>RL Iteration 1</title>" in dom
    found = re.findall(r'<div class="msg" data-role="([a-z]+)" data-index="(\d+)">', dom)
    assert found == [(role, str(i)) for i, role in enumerate(roles)]
    assert all(f"msg{i} " in dom for i in range(len(roles)))
    assert "<script" not in dom.split("</head>", 1)[1]


def test_raw_html_is_sanitized_before_the_csp_has_anything_to_block(tmp_path: Path) -> None:
    """Script and a remote image passed to html() are removed, so nothing even tries to run or
    load (no CSP violation in the console), and the CSP is still in the head."""
    lt = LogTree("csp")
    lt.html("<script>document.title='pwned'</script>"
            "<img src='https://example.invalid/pixel.png'><b>kept</b>")
    dom, console = _load(lt.to_html(), tmp_path)
    assert "<title>csp</title>" in dom
    assert console == []
    body = dom.split("</head>", 1)[1]
    assert "<script" not in body and "example.invalid" not in body
    assert "<b>kept</b>" in body
    assert 'http-equiv="Content-Security-Policy"' in dom
