"""A training loop the crash tests SIGKILL: writes a run through rlio's public API, in a loop.

Usage: ``python crash_child.py RUN ACKS GEN LAYOUT SEED [ITERATIONS]``. Opens
``RunWriter(RUN, resume=True)``, restarts at the resume state's ``next_batch`` (0 without one)
and loops: a logtree, train and (every third iteration) eval rollout summaries, a metrics line,
and every second iteration a checkpoint, until killed or for ITERATIONS iterations. Every file it
writes names its generation ``GEN`` (one per process), so the parent can tell an old version
from a new one. Progress goes to ``ACKS`` with one unbuffered O_APPEND ``write`` per line, each
written only after the call it reports has returned:

* ``start <gen> <next_batch>`` once the writer is open and the restart point is known;
* ``intent <json>`` just before ``record_checkpoint(**json)``, ``ack <json>`` right after it.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import Any

from rlio import RunWriter


def rollouts(iteration: int, gen: int, rng: random.Random) -> list[dict[str, Any]]:
    """Three trajectories whose metrics carry the generation; a padded log to vary the size."""
    out = []
    for traj in range(3):
        rewards = [round(rng.random(), 3) for _ in range(2)]
        out.append({
            "group_idx": 0, "traj_idx": traj, "tags": ["crash"], "sampling_client_step": iteration,
            "total_reward": sum(rewards) + 1.0, "final_reward": 1.0,
            "trajectory_metrics": {"gen": gen, "iteration": iteration},
            "steps": [{"step_idx": k, "ob_len": 3, "ac_len": 2, "reward": r,
                       "episode_done": k == 1, "metrics": {},
                       "logs": {"pad": "z" * rng.randrange(0, 40_000)}}
                      for k, r in enumerate(rewards)],
            "final_ob_len": 0,
        })
    return out


def main() -> None:
    run, acks, gen, layout, seed = (sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4],
                                    int(sys.argv[5]))
    iterations = int(sys.argv[6]) if len(sys.argv) > 6 else 1_000_000
    rng = random.Random(seed)
    fd = os.open(acks, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(text: str) -> None:
        os.write(fd, (text + "\n").encode())

    writer = RunWriter(run, layout=layout, resume=True)  # type: ignore[arg-type]
    state = writer.resume_state
    start = state.next_batch if state is not None else 0
    note(f"start {gen} {start}")
    writer.write_config({"gen": gen, "seed": seed, "start": start})
    for i in range(start, start + iterations):
        with writer.logtree(i, title=f"iteration {i} gen {gen}") as lt, lt.section("Group Rollout"):
            lt.text("t" * rng.randrange(0, 30_000))
            lt.table({"gen": gen, "iteration": i}, caption="Reward")
        writer.write_rollout_summaries(i, rollouts(i, gen, rng))
        if i % 3 == 0:
            writer.write_rollout_summaries(i, rollouts(i, gen, rng), evaluator="test")
        writer.log_metrics({"progress/batch": i, "env/all/reward/total": rng.random(),
                            "gen": gen}, step=i)
        if i % 2 == 1:
            rec = {"name": f"{i + 1:06d}", "batch": i + 1,
                   "state_path": f"tinker://crash/weights/{gen}-{i + 1:06d}",
                   "sampler_path": f"tinker://crash/sampler_weights/{gen}-{i + 1:06d}",
                   "gen": gen}
            note("intent " + json.dumps(rec))
            writer.record_checkpoint(**rec)
            note("ack " + json.dumps(rec))
    writer.close()
    note("done")


if __name__ == "__main__":
    main()
