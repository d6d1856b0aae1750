"""Rendering rlio's pages from the Jinja2 templates in ``rlio/templates`` (autoescaping on).

Every page rlio writes (a logtree's HTML, an iteration page, the run report, a prompt page, the
comparison) is one template over a small view model built in Python; no page markup is
assembled in Python strings. Jinja2 is imported on the first render, so ``import rlio`` stays
light. Values reach the markup escaped; only two kinds pass as they are, each marked in the
template with ``|safe``: markup the allow-list sanitizer (nh3) returned, and rlio's own CSS.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from rlio._codec.numtext import number_text

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


def fmt(v: float | None) -> str:
    """A number as the pages show it: as every text output writes it (``number_text``), empty
    as —."""
    if v is None:
        return "—"
    return number_text(v)


@functools.cache
def environment() -> Environment:
    """The one template environment (built on first use)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True, auto_reload=False)
    env.filters["num"] = fmt
    env.filters["count"] = lambda n: f"{n:,}"
    env.filters["pct"] = lambda v: "—" if v is None else f"{v:.0%}"
    return env


def render(name: str, /, **context: Any) -> str:
    """The template ``name`` rendered over ``context``."""
    return environment().get_template(name).render(**context)
