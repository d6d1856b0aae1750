"""A run's status: running (a writer holds its lease), finished, or stopped (and what it last
wrote), read from the lease and the ends of ``metrics.jsonl`` and ``checkpoints.jsonl``.

Finished: the last checkpoint is the final one (named ``final`` or ``final: true``), or the last
training metrics line reached ``progress/done_frac`` 1, which is how an RL loop ends: it never
writes a ``final`` checkpoint. Otherwise a run without a live lease stopped: it crashed, was
preempted or killed, or was written by a loop that takes no lease (the cookbook's own backend),
so what it last wrote is part of the answer. Reading costs the lease plus a few lines from the
end of two files, whatever their length.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from rlio import layout as L
from rlio._codec.jsonl import DecodeError, decode
from rlio._codec.lines import MAX_TAIL_LINE, backward_lines
from rlio._codec.numtext import number_text
from rlio.rules import TRAINING_KEYS
from rlio.storage.base import Storage
from rlio.storage.opener import open_storage

State = Literal["running", "finished", "stopped"]

#: How many lines from the end of ``metrics.jsonl`` are read to find the last training line
#: (after it come eval and summary lines only).
_TAIL_LINES = 256
#: ``changed`` of ``records_from_end`` when the caller did not ask ``mtime`` (never a real one).
_UNKNOWN = -1.0


@dataclass(frozen=True, slots=True)
class RunStatus:
    """What a run is doing.

    Attributes:
        state: ``running``, ``finished`` or ``stopped``.
        holder: the lease holder (``host``, ``pid``, ``since``) when running.
        last_step: ``step`` of the last training metrics line, if any.
        done_frac: its ``progress/done_frac``, if a number.
        last_checkpoint: ``name`` of the last checkpoint record, if any.
        last_write: when ``metrics.jsonl`` last changed (seconds since the epoch), if known.
        finished_by: what made it finished: ``"final checkpoint"`` or ``"done_frac 1"``.
    """

    state: State
    holder: dict[str, Any] | None = None
    last_step: int | None = None
    done_frac: float | None = None
    last_checkpoint: str | None = None
    last_write: float | None = None
    finished_by: str | None = None

    def text(self) -> str:
        """One line for a terminal: the state and what backs it."""
        wrote = self._wrote()
        if self.state == "running":
            h = self.holder or {}
            who = (f"process {h.get('pid')} on {h.get('host')!s} since {h.get('since')}"
                   if h else "a writer")
            return f"running: {who} holds the lease" + (f"; {wrote}" if wrote else "")
        if self.state == "finished":
            return f"finished ({self.finished_by})" + (f"; {wrote}" if wrote else "")
        return "stopped: no writer holds the lease; " + (wrote or "nothing written yet")

    def _wrote(self) -> str:
        """What it last wrote: ``last wrote step 4 (done_frac 0.5) at T; last checkpoint 'x'``."""
        parts = []
        if self.last_step is not None:
            frac = (f" (done_frac {number_text(self.done_frac)})" if self.done_frac is not None
                    else "")
            when = (time.strftime(" at %Y-%m-%dT%H:%M:%SZ", time.gmtime(self.last_write))
                    if self.last_write is not None else "")
            parts.append(f"last wrote step {self.last_step}{frac}{when}")
        if self.last_checkpoint is not None:
            parts.append(f"last checkpoint {self.last_checkpoint!r}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """The status as JSON: every attribute, by name."""
        return {"state": self.state, "holder": self.holder, "last_step": self.last_step,
                "done_frac": self.done_frac, "last_checkpoint": self.last_checkpoint,
                "last_write": self.last_write, "finished_by": self.finished_by}


def records_from_end(storage: Storage, rel: str, limit: int,
                     changed: float | None = _UNKNOWN, *,
                     chunk: int | None = None) -> list[dict[str, Any]]:
    """Up to ``limit`` whole JSON-object lines of ``rel``, last first (a torn tail skipped).

    ``changed``: ``storage.mtime(rel)`` when the caller has it. On an object store a missing file
    is found by that (one metadata request), not by ``stat``, which would also list the store to
    tell a folder from nothing (a list request per run of a fleet)."""
    if not storage.is_local:
        if changed == _UNKNOWN:
            changed = storage.mtime(rel)
        if changed is None:
            return []
    entry = storage.stat(rel)
    if entry is None or entry.kind != "file" or entry.size == 0:
        return []
    out: list[dict[str, Any]] = []
    for n, line in enumerate(backward_lines(storage, rel, entry.size, max_line=MAX_TAIL_LINE,
                                            chunk=chunk)):
        if n >= limit:
            break
        if line.data is None or not line.terminated or not line.data.strip():
            continue
        try:
            value = decode(line.data)[0]
        except DecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def run_status(storage: Storage) -> RunStatus:
    """The status of the run in ``storage`` (see the module docstring). Never raises for what
    the files hold; an unreadable file raises OSError."""
    holder = storage.lease_holder()
    last_write = storage.mtime(L.METRICS)
    train = next((r for r in records_from_end(storage, L.METRICS, _TAIL_LINES, last_write)
                  if not r.keys().isdisjoint(TRAINING_KEYS)), None)
    ckpts = records_from_end(storage, L.CHECKPOINTS, 1)
    last_ckpt = ckpts[0] if ckpts else None
    step = train.get("step") if train is not None else None
    frac = train.get("progress/done_frac") if train is not None else None
    name = last_ckpt.get("name") if last_ckpt is not None else None
    fields: dict[str, Any] = {
        "last_step": step if type(step) is int else None,
        "done_frac": float(frac) if isinstance(frac, (int, float)) and type(frac) is not bool
        else None,
        "last_checkpoint": name if isinstance(name, str) else None,
        "last_write": last_write,
    }
    if holder is not None:
        return RunStatus("running", holder=holder, **fields)
    if last_ckpt is not None and (name == "final" or last_ckpt.get("final") is True):
        return RunStatus("finished", finished_by="final checkpoint", **fields)
    if fields["done_frac"] is not None and fields["done_frac"] >= 1.0 - 1e-9:
        return RunStatus("finished", finished_by="done_frac 1", **fields)
    return RunStatus("stopped", **fields)


def run_statuses(locations: list[str]) -> dict[str, RunStatus]:
    """``run_status`` of each run location (as a fleet report names them); a run whose status
    cannot be read (gone since it was validated, unreadable) is left out."""
    out: dict[str, RunStatus] = {}
    for loc in locations:
        try:
            # a bucket's runs were found by the fleet's one listing: not looked up again
            remote = "://" in loc and not loc.startswith("file://")
            out[loc] = run_status(open_storage(loc, listed=remote))
        except OSError:
            continue
    return out
