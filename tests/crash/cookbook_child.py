"""A cookbook training loop the crash tests SIGKILL: the real ``JsonLogger`` and
``TrainingRunStore`` of tinker-cookbook, over its own backend or over ``RlioStorage``.

Usage: ``python cookbook_child.py RUN BACKEND ACKS``, BACKEND ``rlio`` (``RlioStorage(RUN)``) or
``cookbook`` (``storage_from_uri(RUN)``, what ``JsonLogger(RUN)`` builds by default). It loops
as rl/train.py does (no ``flush`` in the loop): a metrics line per step and a checkpoint record
every third step. After each call returns it writes ``m <step>`` or ``c <step>`` to ``ACKS``
(one unbuffered O_APPEND ``write``): the records the loop was told are stored.
"""

from __future__ import annotations

import os
import sys

from tinker_cookbook.stores import TrainingRunStore, storage_from_uri
from tinker_cookbook.utils.ml_log import JsonLogger


def main() -> None:
    run, backend, acks = sys.argv[1], sys.argv[2], sys.argv[3]
    if backend == "rlio":
        from rlio.cookbook import RlioStorage

        storage = RlioStorage(run)
    else:
        kwargs = {"token": "anon"} if "://" in run else {}  # the emulator takes no credentials
        storage = storage_from_uri(run, **kwargs)
    logger = JsonLogger(run, store=TrainingRunStore(storage))
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    step = 0
    while True:
        logger.log_metrics({"progress/batch": step, "env/all/reward/total": 0.5}, step=step)
        os.write(fd, b"m %d\n" % step)
        if step % 3 == 2:
            logger.store.write_checkpoint({"name": f"{step + 1:06d}", "batch": step + 1,
                                           "state_path": f"tinker://crash/{step + 1}"})
            os.write(fd, b"c %d\n" % step)
        step += 1


if __name__ == "__main__":
    main()
