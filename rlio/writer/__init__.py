"""The writer: ``RunWriter`` appends and replaces a run's files with the durability its verbs name.

Inside: ``run_writer`` (the ``RunWriter`` class: every verb), ``ownership`` (the run's lease:
joining a run as its lease holder or attached), ``summaries`` (rollout-summary key order and the
§9 checks across one file), ``timing`` (timing-span lines and the ``timer`` spans),
``logtree_files`` (an iteration's logtree block and its JSON and HTML files) and ``support``
(code.diff, symlink and fresh-start guards, checkpoint records).
"""

from __future__ import annotations

from rlio.writer.run_writer import RunWriter

__all__ = ["RunWriter"]
