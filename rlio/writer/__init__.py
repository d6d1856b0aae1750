"""The writer: ``RunWriter`` appends and replaces a run's files with the durability its verbs name.

Inside: ``run_writer`` (the facade), ``rollouts`` (rollout-summary ordering, checks and the
streamed encode), ``logtree_files`` (an iteration's logtree block and its JSON and HTML files) and
``support`` (code.diff, layout detection, iteration and symlink guards).
"""

from __future__ import annotations

from rlio.writer.run_writer import RunWriter

__all__ = ["RunWriter"]
