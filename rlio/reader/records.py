"""Typed shapes of the records a run holds (docs/format.md §3-§7), for users' type checkers.

At run time every record is a plain ``dict`` exactly as decoded from its file (``NaN`` tokens
become ``float("nan")``); these ``TypedDict``s only tell a type checker which keys to expect.
Keys a producer adds beyond the contract stay in the dict (a metrics line holds any number of
metric keys: ``MetricsRecord`` lists the well-known ones). The schemas own the keys:
``tests/unit/reader/test_reader_records.py`` fails when a schema's property or required key is
missing here.
"""

from __future__ import annotations

from typing import Any, NotRequired, Required, TypedDict

__all__ = [
    "CaptureRecord",
    "CheckpointRecord",
    "ConversationMessage",
    "LogtreeDocument",
    "LogtreeNode",
    "MetricsRecord",
    "RolloutStep",
    "RolloutSummary",
    "TimingSpansRecord",
    "TokenCounts",
]

Scalar = float | int | str | bool | None

#: One line of ``metrics.jsonl`` (§3): ``step`` first when present, then scalar metrics.
MetricsRecord = TypedDict(
    "MetricsRecord",
    {
        "step": int,
        "progress/batch": int,
        "progress/done_frac": float,
        "training_client/step": int,
        "optim/lr": float,
        "optim/entropy": float,
        "optim/kl_sample_train_v1": float,
        "optim/kl_sample_train_v2": float,
        "env/all/reward/total": float,
    },
    total=False,
)


class TokenCounts(TypedDict, total=False):
    """Billed token counts by kind (§5: a checkpoint's ``cumulative_tokens`` and
    ``discarded_tokens``)."""

    sampled: int
    prefill_cached: int
    prefill_uncached: int
    trained: int


class CheckpointRecord(TypedDict, total=False):
    """One line of ``checkpoints.jsonl`` (§5); absent keys are omitted, extra keys kept."""

    name: Required[str]
    batch: int
    epoch: int
    final: bool
    state_path: str
    sampler_path: str
    rolling: bool
    cumulative_tokens: TokenCounts
    discarded_tokens: TokenCounts


class RolloutStep(TypedDict):
    """One step of a trajectory (§6)."""

    step_idx: int
    ob_len: int
    ac_len: int
    reward: float | None
    episode_done: bool
    stop_reason: NotRequired[str | None]
    metrics: dict[str, Scalar]
    logs: dict[str, Scalar]
    trace: NotRequired[Any]


class RolloutSummary(TypedDict):
    """One line of a ``*_rollout_summaries.jsonl`` file: one trajectory (§6)."""

    schema_version: int
    split: str
    iteration: int
    group_idx: int
    traj_idx: int
    tags: list[str]
    sampling_client_step: int | None
    total_reward: float | None
    final_reward: float | None
    trajectory_metrics: dict[str, Scalar]
    steps: list[RolloutStep]
    final_ob_len: int


class LogtreeNode(TypedDict):
    """A node of a logtree document (§7): children are strings (HTML text) or nodes."""

    tag: str
    attrs: dict[str, str]
    children: list[str | LogtreeNode]
    data: NotRequired[dict[str, Any]]


class LogtreeDocument(TypedDict):
    """A ``*_logtree.json`` document (§7)."""

    title: str
    started_at: str
    path: NotRequired[str | None]
    root: LogtreeNode


class ConversationMessage(TypedDict, total=False):
    """A message of a ``conversation`` data node (§7); ``content`` is a string or parts."""

    role: Required[str]
    content: Required[str | list[dict[str, Any]]]
    tool_calls: list[dict[str, Any]]
    unparsed_tool_calls: list[dict[str, Any]]
    trainable: bool
    tool_call_id: str
    name: str


class TimingSpansRecord(TypedDict):
    """One line of ``timing_spans.jsonl`` (§8)."""

    step: int
    spans: list[dict[str, Any]]



class CaptureRecord(TypedDict, total=False):
    """One line of ``capture/<kind>.jsonl`` (§8), the cookbook 0.6.1's token capture: the
    fields every kind carries, and those of the ``sample`` and ``train_op`` kinds (a record of
    another kind holds its own keys)."""

    kind: Required[str]
    scope: Required[dict[str, Scalar]]
    created_at: Required[float]
    status: str
    latency_sec: float
    error: str
    # sample
    num_samples: int
    sampling_session_id: str | int | None
    seq_id: int
    model_path: str
    base_model: str
    prompt_tokens: list[int]
    prompt_length: int | None
    sampling_params: dict[str, Any]
    samples: list[dict[str, Any]]
    # train_op
    op: str
    model_id: str
    num_data: int
    name: str
    hyperparams: dict[str, Any]
    metrics: dict[str, float]
