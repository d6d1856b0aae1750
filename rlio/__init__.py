"""rlio: write, validate and resume the output directory of an RL training run.

The names below are the public API. They are loaded on first use so that ``import rlio`` stays
light (no jsonschema, fsspec or gcsfs) inside a training loop.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rlio._version import __version__

_EXPORTS: dict[str, str] = {
    "FleetReport": "rlio.validate.fleet",
    "Finding": "rlio.findings",
    "LabelCollisionError": "rlio.errors",
    "LogTree": "rlio.logtree",
    "NotARunError": "rlio.errors",
    "RecordError": "rlio.errors",
    "Report": "rlio.findings",
    "ResumeError": "rlio.errors",
    "ResumeState": "rlio.resume",
    "RlioError": "rlio.errors",
    "RunNotFoundError": "rlio.errors",
    "RunWriter": "rlio.writer",
    "Severity": "rlio.findings",
    "UnsafeStorageError": "rlio.errors",
    "read_resume_state": "rlio.resume",
    "validate_run": "rlio.validate",
    "validate_runs": "rlio.validate.fleet",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from rlio.errors import (
        LabelCollisionError,
        NotARunError,
        RecordError,
        ResumeError,
        RlioError,
        RunNotFoundError,
        UnsafeStorageError,
    )
    from rlio.findings import Finding, Report, Severity
    from rlio.logtree.builder import LogTree
    from rlio.resume import ResumeState, read_resume_state
    from rlio.validate.engine import validate_run
    from rlio.validate.fleet import FleetReport, validate_runs
    from rlio.writer.run_writer import RunWriter


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rlio' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
