"""Per-iteration traces: the ``LogTree`` builder, its JSON document, its self-contained HTML.

Inside: ``builder`` (the verbs and the document), ``html`` (the page), ``conversation``
(message checking and rendering).
"""

from __future__ import annotations

from rlio.logtree.builder import MAX_SECTION_DEPTH, LogTree, dumps_compact, dumps_indented

__all__ = ["MAX_SECTION_DEPTH", "LogTree", "dumps_compact", "dumps_indented"]
