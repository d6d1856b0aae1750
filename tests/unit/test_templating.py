"""Pages come from the Jinja2 templates only: autoescaping on, no markup built in Python."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from rlio.templating import TEMPLATES, environment

ROOT = Path(__file__).resolve().parents[2] / "rlio"
#: A string that starts like an HTML or SVG tag (an opening or closing one).
_TAG = re.compile(r"\s*</?[a-zA-Z][a-zA-Z0-9-]*[\s>/]")
#: Strings that look like tags but are data: a stop sequence and a placeholder text.
_DATA = frozenset({"</answer>", "<unprintable>"})


def _markup_strings(path: Path) -> list[str]:
    """Python string literals (or f-string heads) of ``path`` that begin with a tag."""
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in parts:  # a piece of an f-string: judged by the f-string's head
            continue
        if isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            text = first.value if isinstance(first, ast.Constant) else ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if isinstance(text, str) and _TAG.match(text) and text not in _DATA:
            out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text[:40]!r}")
    return out


def test_no_module_of_rlio_assembles_markup() -> None:
    """No Python string in rlio/ starts with an HTML or SVG tag: markup lives in templates."""
    found = [s for p in sorted(ROOT.rglob("*.py")) for s in _markup_strings(p)]
    assert found == []


def test_templates_escape_every_value() -> None:
    """The environment autoescapes: a value with markup comes out as text."""
    env = environment()
    assert env.autoescape is True or env.autoescape(None)  # type: ignore[operator]
    out = env.from_string("<p>{{ v }}</p>").render(v="<script>x</script>")
    assert out == "<p>&lt;script&gt;x&lt;/script&gt;</p>"
    assert sorted(p.name for p in Path(TEMPLATES).glob("*.j2"))
