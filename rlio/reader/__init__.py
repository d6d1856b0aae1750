"""The reader: ``open_run`` gives a typed, lazy, read-only view of a run directory.

Inside: ``run`` (``Run``, ``open_run``, ``IterationInfo``), ``records`` (the ``TypedDict`` of each
record kind), ``source`` (streamed JSONL and JSON documents through ``rlio.storage``),
``conversations`` (the walk of a logtree's conversation nodes), ``table`` and ``frames`` (pandas
and polars frames holding every key), ``follow`` (tailing a live run), ``export`` (Parquet
datasets of many runs), ``dataset`` (training datasets of rollouts) and ``summary`` (the text
of ``rlio show`` and ``rlio diff``).
"""

from __future__ import annotations

from rlio.reader.conversations import Conversation
from rlio.reader.extras import MissingExtraError
from rlio.reader.records import (
    CaptureRecord,
    CheckpointRecord,
    ConversationMessage,
    LogtreeDocument,
    LogtreeNode,
    MetricsRecord,
    RolloutStep,
    RolloutSummary,
    TimingSpansRecord,
)
from rlio.reader.run import IterationInfo, Run, open_run

__all__ = [
    "CaptureRecord",
    "CheckpointRecord",
    "Conversation",
    "ConversationMessage",
    "IterationInfo",
    "LogtreeDocument",
    "LogtreeNode",
    "MetricsRecord",
    "MissingExtraError",
    "RolloutStep",
    "RolloutSummary",
    "Run",
    "TimingSpansRecord",
    "open_run",
]
