"""Runs and expectations shared by the browser tests: what each page must show."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rlio import layout
from rlio._codec.jsonl import decode


def html_pages(run: Path) -> list[Path]:
    """Every per-iteration HTML page of a run (both layouts), sorted."""
    out = []
    for path in sorted(run.rglob("*.html")):
        rp = layout.parse_path(path.relative_to(run).as_posix())
        if rp.kind == "html":
            out.append(path)
    return out


def linked_pages(run: Path) -> list[Path]:
    """What the report must link: each timing chart, and rlio's page of every iteration that has
    any per-iteration file. rlio's page is the run's own page when rlio wrote it (generator meta)
    and it has its JSON twin; otherwise it is ``report/<run-relative page path>``."""
    out: list[Path] = []
    groups: dict[tuple[str, int], dict[str, str]] = {}
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        rel = path.relative_to(run).as_posix()
        rp = layout.parse_path(rel)
        if rp.kind == "timing_gantt":
            out.append(path)
        elif rp.kind in ("html", "logtree", "rollout_summaries"):
            assert rp.iteration is not None
            groups.setdefault((rp.split, rp.iteration), {})[rp.kind] = rel
    for files in groups.values():
        html = files.get("html")
        if html is not None and "logtree" in files and is_rlio_page(run / html):
            out.append(run / html)
            continue
        any_rel = html or next(iter(files.values()))
        canon = html or layout.twin_path(layout.parse_path(any_rel), "html")
        out.append(run / "report" / canon)
    return sorted(out)


def is_rlio_page(path: Path) -> bool:
    """Whether an HTML page names rlio as its generator."""
    return b'<meta name="generator" content="rlio' in path.read_bytes()[:2048]


def html_twin(logtree: Path) -> Path:
    """The HTML page of a logtree JSON file."""
    return logtree.with_name(logtree.name.removesuffix("_logtree.json") + ".html")


def logtree_twin(html: Path) -> Path:
    """The logtree JSON written next to an HTML page (same stem, ``_logtree.json``)."""
    return html.with_name(html.name.removesuffix(".html") + "_logtree.json")


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            yield n
            stack.extend(reversed(n.get("children", [])))


def conversation_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message of every conversation in a logtree document, in document order."""
    out: list[dict[str, Any]] = []
    for node in _walk(doc["root"]):
        data = node.get("data")
        if isinstance(data, dict) and data.get("type") == "conversation":
            out.extend(data["messages"])
    return out


def squash(text: str) -> str:
    """Text with all whitespace removed, to compare rendered text with its source."""
    return "".join(text.split())


def message_texts(msg: dict[str, Any]) -> list[str]:
    """The pieces of a message that must be visible as text on its page."""
    content = msg.get("content")
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content:
            if part.get("type") == "text":
                texts.append(part["text"])
            elif part.get("type") == "thinking":
                texts.append(part["thinking"])
    for call in msg.get("tool_calls") or []:
        texts.append(call["function"]["name"])
        texts.append(call["function"]["arguments"])
    return [t for t in texts if t]


def expected_points(run: Path, key: str) -> int:
    """How many points the report must draw for ``key``: finite values, one per step."""
    steps: dict[float, float] = {}
    for i, raw in enumerate((run / layout.METRICS).read_bytes().splitlines(keepends=True)):
        if not raw.endswith(b"\n") or not raw.strip():
            continue
        rec, _ = decode(raw)
        x = rec.get("step", rec.get("progress/batch", i))
        v = rec.get(key)
        if type(v) in (int, float) and math.isfinite(v):
            steps[x] = v
    return len(steps)


def file_url(path: str | os.PathLike[str]) -> str:
    """The ``file://`` URL of a local path (percent-encoded the way Chromium reports it)."""
    return Path(os.path.abspath(path)).as_uri()


def read_json(path: Path) -> Any:
    """A JSON document (NaN tokens allowed)."""
    return json.loads(path.read_text())
