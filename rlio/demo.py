"""``rlio demo``: a simulated RL training run written through the public API only.

No model and no network: a seeded ``random.Random`` plays a policy answering arithmetic problems in
multi-turn conversations (with a thinking part and a calculator tool call), in groups of
trajectories. The loop writes what a Tinker-cookbook RL loop writes — config, code diff, a logtree
and rollout summaries per iteration, a metrics line per iteration, an evaluator every few
iterations (whose name needs sanitizing), periodic, rolling and final checkpoints, and one NaN
metric — and the result validates with no error. Everything but timestamps is deterministic for a
seed. The module doubles as an example of how a training loop uses ``RunWriter``.
"""

from __future__ import annotations

import enum
import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlio.layout import CONFIG, Layout, is_run_root
from rlio.logtree import LogTree
from rlio.writer import RunWriter

__all__ = ["DemoConfig", "run_demo"]

_CODE_DIFF = """\
diff --git a/train.py b/train.py
index 3b18e51..a9c2f04 100644
--- a/train.py
+++ b/train.py
@@ -12,7 +12,7 @@ def main(config: Config) -> None:
-    learning_rate = 1e-5
+    learning_rate = 4e-5
     group_size = config.group_size
"""

_SYSTEM = "You are a careful assistant. Use the calculator tool for arithmetic, then answer."
_MARKUP = "Formatting note: the grader strips <b>bold</b> and <script>alert(1)</script> tags."


class LossFn(enum.Enum):
    """Which policy-gradient loss the simulated trainer uses (an enum, to show normalization)."""

    IMPORTANCE_SAMPLING = "importance_sampling"
    PPO = "ppo"


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling parameters (a nested dataclass in the config)."""

    temperature: float = 1.0
    max_tokens: int = 512
    stop: tuple[str, ...] = ("</answer>",)


@dataclass(frozen=True)
class DemoConfig:
    """The simulated run's configuration, written to ``config.json``."""

    log_path: Path
    layout: str = "flat"
    iterations: int = 12
    seed: int = 0
    model_name: str = "demo/policy-8b"
    learning_rate: float = 4e-5
    loss_fn: LossFn = LossFn.IMPORTANCE_SAMPLING
    groups_per_batch: int = 4
    group_size: int = 4
    num_groups_to_log: int = 2
    max_turns: int = 3
    eval_every: int = 3
    save_every: int = 4
    evaluator: str = "gsm8k/test (v2)"
    eval_groups: int = 2
    sampling: SamplingConfig = field(default_factory=SamplingConfig)


@dataclass
class _Trajectory:
    """One simulated episode: its conversation, per-turn numbers and summary record."""

    messages: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    final_reward: float
    correct: bool

    @property
    def total_reward(self) -> float:
        return float(sum(s["reward"] for s in self.steps) + self.final_reward)


def _episode(rng: random.Random, skill: float, max_turns: int) -> _Trajectory:
    """Play one episode: a problem, 1..max_turns tool-using turns, a graded final answer."""
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    truth = a * b
    turns = rng.randint(1, max_turns)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"What is {a} * {b}? {_MARKUP}"},
    ]
    steps: list[dict[str, Any]] = []
    correct = False
    for turn in range(turns):
        last = turn == turns - 1
        call_id = f"call_{turn}_{rng.randrange(16**6):06x}"
        messages.append({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"I should multiply {a} by {b} carefully."},
                {"type": "text", "text": "Let me check with the calculator."},
            ],
            "tool_calls": [{
                "type": "function", "id": call_id,
                "function": {"name": "calculator",
                             "arguments": json.dumps({"expression": f"{a} * {b}"})},
            }],
            "trainable": True,
        })
        messages.append({"role": "tool", "tool_call_id": call_id, "name": "calculator",
                         "content": str(truth)})
        if last:
            correct = rng.random() < skill
            answer = truth if correct else truth + rng.choice((-10, -1, 1, 10))
            messages.append({"role": "assistant", "trainable": True,
                             "content": f"The answer is <answer>{answer}</answer>."})
        steps.append({
            "step_idx": turn,
            "ob_len": 40 + 25 * turn + rng.randint(0, 20),
            "ac_len": rng.randint(8, 60),
            "reward": round(rng.uniform(-0.05, 0.05), 4),  # a small per-turn format reward
            "episode_done": last,
            "metrics": {"tool_calls": 1},
            "logs": {"tool": "calculator"},
        })
    final_reward = 1.0 if correct else 0.0
    return _Trajectory(messages, steps, final_reward, correct)


def _summary(traj: _Trajectory, group: int, index: int, sampling_step: int) -> dict[str, Any]:
    return {
        "group_idx": group,
        "traj_idx": index,
        "tags": ["arithmetic"],
        "sampling_client_step": sampling_step,
        "total_reward": traj.total_reward,
        "final_reward": traj.final_reward,
        "trajectory_metrics": {"correct": float(traj.correct), "turns": len(traj.steps)},
        "steps": traj.steps,
        "final_ob_len": traj.steps[-1]["ob_len"] + traj.steps[-1]["ac_len"] + 12,
    }


def _log_group(lt: LogTree, group: int, trajs: list[_Trajectory]) -> None:
    """The cookbook's section structure: Group Rollout > Trajectory Details > ... > Turn n."""
    with lt.section("Group Rollout"):
        lt.text(f"Group {group}: {len(trajs)} trajectories, "
                f"{sum(t.correct for t in trajs)} correct.")
        with lt.section("Trajectory Details"):
            for i, traj in enumerate(trajs):
                with lt.section(f"Trajectory {i} Episode"), lt.section("Episode Details"):
                    with lt.section("Prompt"):
                        lt.conversation(traj.messages[:2])
                    for n, step in enumerate(traj.steps):
                        with lt.section(f"Turn {n}"):
                            with lt.section("Policy Response"):
                                lt.conversation(traj.messages[2 + 2 * n:4 + 2 * n + int(
                                    step["episode_done"])])
                            lt.table({k: step[k] for k in ("ob_len", "ac_len", "reward")},
                                     caption="Step stats")
                            lt.table(step["metrics"], caption="Step Metrics")
                    with lt.section("Reward"):
                        lt.table({"final_reward": traj.final_reward,
                                  "total_reward": traj.total_reward}, caption="Episode totals")


def _rollouts(
    run: RunWriter, rng: random.Random, cfg: DemoConfig, iteration: int, *, groups: int,
    skill: float, evaluator: str | None, title: str,
) -> list[_Trajectory]:
    """One iteration's groups of trajectories: logtree plus rollout summaries."""
    batch: list[list[_Trajectory]] = []
    with run.logtree(iteration, title=title, evaluator=evaluator) as lt:
        for g in range(groups):
            size = cfg.group_size - (1 if g == groups - 1 and iteration % 5 == 4 else 0)
            trajs = [_episode(rng, skill, cfg.max_turns) for _ in range(size)]
            batch.append(trajs)
            if g < cfg.num_groups_to_log:
                _log_group(lt, g, trajs)
    records = [_summary(t, g, i, iteration) for g, trajs in enumerate(batch)
               for i, t in enumerate(trajs)]
    run.write_rollout_summaries(iteration, records, evaluator=evaluator)
    return [t for trajs in batch for t in trajs]


def _env_metrics(prefix: str, trajs: list[_Trajectory]) -> dict[str, float]:
    n = len(trajs)
    turns = sum(len(t.steps) for t in trajs)
    return {
        f"{prefix}env/all/reward/total": sum(t.total_reward for t in trajs) / n,
        f"{prefix}env/all/reward/final": sum(t.final_reward for t in trajs) / n,
        f"{prefix}env/all/correct": sum(t.correct for t in trajs) / n,
        f"{prefix}env/all/turns_per_episode": turns / n,
        f"{prefix}env/all/ac_tokens_per_turn": sum(s["ac_len"] for t in trajs
                                                   for s in t.steps) / turns,
        f"{prefix}env/all/ob_tokens_per_turn": sum(s["ob_len"] for t in trajs
                                                   for s in t.steps) / turns,
    }


def _is_demo_run(location: str) -> bool:
    """Whether the local folder ``location`` is a run whose config.json the demo wrote."""
    if not is_run_root(os.listdir(location)):
        return False
    try:
        with open(os.path.join(location, CONFIG), "rb") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("model_name") in (DemoConfig.model_name,
                                                                     "sim/policy-8b")


def run_demo(
    out: str | os.PathLike[str], *, layout: Layout = "flat", iterations: int = 12, seed: int = 0,
    replace: bool = False, env: str | None = None,
) -> None:
    """Write a simulated RL run of ``iterations`` iterations to ``out`` (a fresh directory).

    Args:
        env: write a run shaped like one of the cookbook's environments instead
            (``rlio.demo_envs.ENVS``: math, multiturn, tools, preference, evalonly, async); its
            ``layout`` is flat.
        replace: delete a previous demo run at ``out`` first (a local folder whose
            ``config.json`` the demo wrote), so the same command can run again. Any other
            non-empty folder is still refused: a real run is never deleted.

    Raises:
        FileExistsError: ``out`` is a local directory that already holds files (with
            ``replace``: files that are not a demo run).
        ValueError: ``iterations`` is below 1.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    location = os.fspath(out)
    if "://" not in location and os.path.isdir(location) and os.listdir(location):
        if not replace:
            raise FileExistsError(f"{location!r} already holds files; the demo writes a fresh "
                                  "run")
        if not _is_demo_run(location):
            raise FileExistsError(f"{location!r} holds files that are not a demo run; refusing "
                                  "to replace them")
        shutil.rmtree(location)
    if env is not None:
        from rlio.demo_envs import write_env_run

        write_env_run(location, env, iterations=iterations, seed=seed)
        return
    cfg = DemoConfig(log_path=Path(location), layout=layout, iterations=iterations, seed=seed)
    rng = random.Random(seed)
    nan_at = iterations // 2
    with RunWriter(location, layout=layout) as run:
        run.write_config(cfg)
        run.write_code_diff(_CODE_DIFF)
        for i in range(iterations):
            skill = 0.3 + 0.5 * i / max(1, iterations - 1)
            metrics: dict[str, Any] = {"progress/batch": i,
                                       "progress/done_frac": (i + 1) / iterations,
                                       "optim/lr": cfg.learning_rate}
            if i % cfg.eval_every == 0:
                evals = _rollouts(run, rng, cfg, i, groups=cfg.eval_groups, skill=skill,
                                  evaluator=cfg.evaluator,
                                  title=f"Evaluation {cfg.evaluator} iteration {i}")
                metrics.update(_env_metrics(f"{cfg.evaluator}/", evals))
            trajs = _rollouts(run, rng, cfg, i, groups=cfg.groups_per_batch, skill=skill,
                              evaluator=None, title=f"RL Iteration {i}")
            metrics.update(_env_metrics("", trajs))
            metrics.update({
                "env/arithmetic/frac_correct": sum(t.correct for t in trajs) / len(trajs),
                "optim/entropy": round(1.2 - 0.04 * i + rng.uniform(-0.02, 0.02), 6),
                "optim/kl_sample_train_v1": round(rng.uniform(0.0005, 0.004), 6),
                "optim/kl_sample_train_v2": (float("nan") if i == nan_at
                                             else round(rng.uniform(0.0005, 0.004), 6)),
                "time/sample": round(rng.uniform(8.0, 12.0), 3),
                "time/train": round(rng.uniform(2.0, 3.0), 3),
                "time/train:count": 1,
                "time/total": round(rng.uniform(11.0, 16.0), 3),
            })
            run.log_metrics(metrics, step=i)
            done = i + 1
            state = f"tinker://demo-{seed}/weights/{done:06d}"
            if done == iterations:
                break
            if done % cfg.save_every == 0:
                run.record_checkpoint(f"{done:06d}", batch=done, state_path=state,
                                      sampler_path=f"tinker://demo-{seed}/sampler_weights/"
                                                   f"{done:06d}")
            else:
                run.record_checkpoint(f"{done:06d}", batch=done, state_path=state, rolling=True)
        run.record_checkpoint(
            "final", batch=iterations, state_path=f"tinker://demo-{seed}/weights/final",
            sampler_path=f"tinker://demo-{seed}/sampler_weights/final",
        )
