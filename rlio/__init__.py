"""rlio: write, validate and resume the output directory of an RL training run.

The names below are the public API. They are loaded on first use so that ``import rlio`` stays
light (no jsonschema-rs, fsspec or gcsfs) inside a training loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlio._lazy import lazy_attributes
from rlio._version import __version__

_EXPORTS: dict[str, str] = {
    "CheckpointRecord": "rlio.reader",
    "Conversation": "rlio.reader",
    "ConversationMessage": "rlio.reader",
    "FleetReport": "rlio.validate.fleet",
    "Finding": "rlio.findings",
    "IterationInfo": "rlio.reader",
    "LabelCollisionError": "rlio.errors",
    "LeaseLostError": "rlio.errors",
    "LogTree": "rlio.logtree",
    "LogtreeDocument": "rlio.reader",
    "LogtreeNode": "rlio.reader",
    "MetricsRecord": "rlio.reader",
    "MissingExtraError": "rlio.errors",
    "NotARunError": "rlio.errors",
    "RecordError": "rlio.errors",
    "Report": "rlio.findings",
    "ResumeError": "rlio.errors",
    "ResumeState": "rlio.resume",
    "RlioError": "rlio.errors",
    "RlioWarning": "rlio.errors",
    "RolloutStep": "rlio.reader",
    "RolloutSummary": "rlio.reader",
    "Run": "rlio.reader",
    "RunExistsError": "rlio.errors",
    "RunInUseError": "rlio.errors",
    "RunNotFoundError": "rlio.errors",
    "RunWriter": "rlio.writer",
    "Severity": "rlio.findings",
    "UnsafeStorageError": "rlio.errors",
    "open_run": "rlio.reader",
    "query": "rlio.reader.sql",
    "read_resume_state": "rlio.resume",
    "sync": "rlio.storage.sync",
    "validate_run": "rlio.validate",
    "validate_runs": "rlio.validate.fleet",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from rlio.errors import (
        LabelCollisionError,
        LeaseLostError,
        MissingExtraError,
        NotARunError,
        RecordError,
        ResumeError,
        RlioError,
        RlioWarning,
        RunExistsError,
        RunInUseError,
        RunNotFoundError,
        UnsafeStorageError,
    )
    from rlio.findings import Finding, Report, Severity
    from rlio.logtree.builder import LogTree
    from rlio.reader import (
        CheckpointRecord,
        Conversation,
        ConversationMessage,
        IterationInfo,
        LogtreeDocument,
        LogtreeNode,
        MetricsRecord,
        RolloutStep,
        RolloutSummary,
        Run,
        open_run,
    )
    from rlio.reader.sql import query
    from rlio.resume import ResumeState, read_resume_state
    from rlio.storage.sync import sync
    from rlio.validate.engine import validate_run
    from rlio.validate.fleet import FleetReport, validate_runs
    from rlio.writer.run_writer import RunWriter


__getattr__, __dir__ = lazy_attributes("rlio", _EXPORTS, globals(), __all__)
