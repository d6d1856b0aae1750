"""A run's lease holder for the fault harness, driven line by line over stdin.

Started as ``python fault_owner.py RUN NAME``; opens ``RunWriter(RUN, resume=True)`` and prints
``ready <next_batch> <epoch>``. Then each command gets one reply line: ``ok``, ``lost`` (the
verb raised LeaseLostError) or ``err <repr>``:

- ``m UID STEP``: log_metrics({"progress/batch": STEP, "uid": UID}, step=STEP)
- ``c BATCH``: record_checkpoint(BATCH, state_path="tinker://NAME/BATCH")
- ``fork``: a forked child tries log_metrics and record_checkpoint; the reply is its outcomes
- ``close``: close the writer, reply, exit
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from rlio import LeaseLostError, RunWriter


def outcome(verb: Callable[[], object]) -> str:
    """What one verb did: ok, lost or err."""
    try:
        verb()
    except LeaseLostError:
        return "lost"
    except Exception as exc:  # reported to the harness, which fails on it
        return f"err {exc!r}".replace("\n", " ")
    return "ok"


def forked(run: RunWriter) -> str:
    """The outcomes of a forked child's log_metrics and record_checkpoint."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        out = [outcome(lambda: run.log_metrics({"uid": "forked"}, step=0)),
               outcome(lambda: run.record_checkpoint("forked", batch=0,
                                                     state_path="tinker://forked/0"))]
        os.write(w, ",".join(out).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r) as f:
        return f.read()


def main() -> None:
    path, name = sys.argv[1], sys.argv[2]
    run = RunWriter(path, resume=True)
    state = run.resume_state
    epoch = run._lease.epoch if run._lease is not None else 0
    print("ready", state.next_batch if state else 0, epoch, flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "m":
            reply = outcome(lambda a=args: run.log_metrics(  # type: ignore[misc]
                {"progress/batch": int(a[1]), "uid": a[0]}, step=int(a[1])))
        elif cmd == "c":
            reply = outcome(lambda a=args: run.record_checkpoint(  # type: ignore[misc]
                f"{int(a[0]):06d}", batch=int(a[0]), state_path=f"tinker://{name}/{a[0]}"))
        elif cmd == "fork":
            reply = forked(run)
        elif cmd == "close":
            print(outcome(run.close), flush=True)
            return
        else:
            reply = f"err unknown command {cmd!r}"
        print(reply, flush=True)


if __name__ == "__main__":
    main()
