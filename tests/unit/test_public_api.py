"""The public API: `rlio.__all__` is pinned, sorted, and every name resolves lazily."""

from __future__ import annotations

import rlio

PUBLIC = [
    "CheckpointRecord",
    "Conversation",
    "ConversationMessage",
    "Finding",
    "FleetReport",
    "IterationInfo",
    "LabelCollisionError",
    "LeaseLostError",
    "LogTree",
    "LogtreeDocument",
    "LogtreeNode",
    "MetricsRecord",
    "MissingExtraError",
    "NotARunError",
    "RecordError",
    "Report",
    "ResumeError",
    "ResumeState",
    "RlioError",
    "RlioWarning",
    "RolloutStep",
    "RolloutSummary",
    "Run",
    "RunExistsError",
    "RunInUseError",
    "RunNotFoundError",
    "RunWriter",
    "Severity",
    "UnsafeStorageError",
    "open_run",
    "query",
    "read_resume_state",
    "sync",
    "validate_run",
    "validate_runs",
]


def test_all_is_pinned_and_sorted() -> None:
    """`__all__` lists exactly the documented public names, in sorted order."""
    assert rlio.__all__ == PUBLIC == sorted(PUBLIC)


def test_every_public_name_resolves_and_unknown_names_raise() -> None:
    """Each public name is importable from `rlio`; an unknown attribute is an AttributeError."""
    for name in PUBLIC:
        assert getattr(rlio, name) is not None
    try:
        rlio.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("unknown attribute did not raise")
