"""The validator: ``validate_run`` checks a run against the schemas and the cross-file rules.

Inside: ``engine`` (classification of a run's files and the run order), ``scan`` (streaming JSONL
and document passes), ``parallel`` (the within-file split of large files) and ``checks/`` (one
module per file kind, plus the cross-file rules).
"""

from __future__ import annotations

from rlio.validate.engine import validate_run

__all__ = ["validate_run"]
