"""Byte-range scans of large rollout-summary files, in this process or in a helper process.

``python -m rlio.validate.parallel TASK`` reads one pickled ``RangeTask`` (in hex) from its
argument, scans that byte range and writes the pickled ``RangeResult`` on stdout. The validator
starts such a process directly (not through ``multiprocessing``, which would re-import the
caller's ``__main__``) to use a second core on files of hundreds of megabytes.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import NamedTuple

from rlio.layout import KINDS
from rlio.storage.base import Storage
from rlio.storage.opener import open_storage
from rlio.validate.checks.rollout_lines import PairOrder, RolloutChecks
from rlio.validate.scan import Sink, scan_jsonl


class RangeTask(NamedTuple):
    """One byte range ``[start, end)`` of a rollout-summary file, starting on a line boundary."""

    location: str
    rel: str
    file: str
    iteration: int | None
    label: str | None
    start: int
    end: int
    at_eof: bool
    cap: int


class RangeResult(NamedTuple):
    """Findings (line numbers relative to the range), lines read and the pair order of a range."""

    sink: Sink
    lines: int
    order: PairOrder


def scan_range(task: RangeTask, storage: Storage | None = None,
               sink: Sink | None = None) -> RangeResult:
    """Scan one range of a rollout-summary file with every per-record check (``storage``: the
    run already opened in this process; a helper process opens it by its location; ``sink``:
    where the findings go, a new one by default)."""
    if storage is None:
        storage = open_storage(task.location)
    if sink is None:
        sink = Sink(task.file, task.cap)
    hook = RolloutChecks(sink, iteration=task.iteration, label=task.label)
    with storage.open_read(task.rel) as stream:
        if task.start:
            stream.seek(task.start)
        lines, _ = scan_jsonl(stream, sink, schema=KINDS["rollout_summaries"].schema or "",
                              append_only=False, on_record=hook, limit=task.end - task.start,
                              at_eof=task.at_eof)
    return RangeResult(sink, lines, hook.finish())


class RemoteScan:
    """A range scanned by a helper process; ``result()`` waits for it."""

    def __init__(self, task: RangeTask) -> None:
        self.task = task
        # the helper imports this process's rlio: the folder holding the package goes first
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                    else "")
        # the task (a few names and numbers) travels as a command-line argument
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "rlio.validate.parallel", pickle.dumps(task).hex()],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )

    def result(self) -> RangeResult:
        """The helper's result; raises RuntimeError when it failed (callers rescan locally)."""
        # generous: ~1 MB/s (real helpers run near 100 MB/s); a stuck helper must not hang us
        timeout = 60 + (self.task.end - self.task.start) / 1e6
        try:
            out, err = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"range scan helper gave no result in {timeout:.0f} s") from None
        finally:
            self.cancel()
        if self._proc.returncode != 0:
            raise RuntimeError(f"range scan helper exited {self._proc.returncode}: "
                               f"{err.decode(errors='replace')[-300:]}")
        result = pickle.loads(out)
        if not isinstance(result, RangeResult):
            raise RuntimeError("range scan helper returned no result")
        return result

    def cancel(self) -> None:
        """Stop the helper (on error or interrupt in the caller)."""
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()


def main() -> int:
    """Entry point of the helper process."""
    result = scan_range(pickle.loads(bytes.fromhex(sys.argv[1])))
    sys.stdout.buffer.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    # Run the importable module's main, not this __main__ copy: pickled classes must be
    # rlio.validate.parallel's so that the parent can load them.
    from rlio.validate.parallel import main as _main

    sys.exit(_main())
