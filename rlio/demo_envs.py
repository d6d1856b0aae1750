"""Simulated runs shaped like the Tinker cookbook's environments (``rlio demo --env NAME``).

Each writes, through ``RunWriter`` only, what the cookbook's RL loop writes for that kind of
environment, with the reward where that environment puts it:

- ``math``: single-turn problems (``ProblemEnv``): the reward is the step's (1 correct, minus 0.1
  for a bad format) and ``final_reward`` is 0.0.
- ``multiturn``: twenty-questions style: many turns, the reward on the turn that guesses right;
  some episodes run out of turns (reward 0) and a few are cut off unfinished.
- ``tools``: tool calls each turn; a graded reward in [0, 1] at the end, -0.2 per bad call.
- ``preference``: pairwise preference: completions judged against each other; the group reward
  (``final_reward``) is the centred win rate in [-1, 1], the step rewards are 0.
- ``evalonly``: evaluators only (no training files): conversations logged per sample, not in
  group sections; one evaluator logs a NaN reward.
- ``async``: math with off-policy sampling: ``sampling_client_step`` lags the iteration by up
  to 3, with the cookbook's ``async/staleness_*`` metrics.

Training runs log the cookbook's usual metric keys (reward, ``by_group/frac_*``, KL estimators,
entropy, learning rate, tokens, cost, time). Deterministic for a seed, but for timestamps.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rlio.logtree import LogTree
from rlio.writer import RunWriter

__all__ = ["ENVS", "write_env_run"]

ENVS: Final = ("math", "multiturn", "tools", "preference", "evalonly", "async")
_ANIMALS: Final = ("otter", "heron", "lynx", "badger", "gecko", "walrus", "ibis", "marmot")


@dataclass
class Episode:
    """One simulated trajectory: its conversation, steps and group reward."""

    messages: list[dict[str, Any]]
    steps: list[dict[str, Any]] = field(default_factory=list)
    final_reward: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    prompt: int = 2  # how many leading messages are the prompt

    @property
    def total(self) -> float:
        return float(sum(s["reward"] for s in self.steps) + self.final_reward)


def _step(i: int, ob: int, ac: int, reward: float, done: bool, **metrics: float) -> dict[str, Any]:
    return {"step_idx": i, "ob_len": ob, "ac_len": ac, "reward": reward, "episode_done": done,
            "metrics": dict(metrics), "logs": {}}


def _math(rng: random.Random, skill: float, problem: int, size: int) -> list[Episode]:
    a, b = 3 + problem % 40, 7 + (problem * 7) % 50
    prompt = [{"role": "system", "content": "Solve the problem; put the answer in \\boxed{}."},
              {"role": "user", "content": f"Problem {problem}: what is {a} + {b}?"}]
    hard = rng.random() < 0.25  # a hard problem: the whole group fails alike
    out = []
    for _ in range(size):
        correct = not hard and rng.random() < skill
        well_formed = rng.random() < 0.85
        answer = a + b if correct else a + b + rng.choice((-2, -1, 1, 3))
        text = f"\\boxed{{{answer}}}" if well_formed else f"The answer is {answer}"
        reward = (1.0 if correct else 0.0) - (0.0 if well_formed else 0.1)
        out.append(Episode([*prompt, {"role": "assistant", "content": text}],
                           [_step(0, 60 + problem % 9, rng.randint(20, 200), reward, True,
                                  correct=float(correct), format=float(well_formed))]))
    return out


def _multiturn(rng: random.Random, skill: float, problem: int, size: int) -> list[Episode]:
    secret = _ANIMALS[problem % len(_ANIMALS)]
    prompt = [{"role": "system", "content": "Play twenty questions: ask yes/no questions, then "
               "guess the animal."},
              {"role": "user", "content": f"I am thinking of an animal (game {problem})."}]
    out = []
    for _ in range(size):
        msgs: list[dict[str, Any]] = list(prompt)
        steps: list[dict[str, Any]] = []
        turns = rng.randint(2, 6)
        solved = rng.random() < skill
        cut = rng.random() < 0.05  # the sampler's token limit ends the episode unfinished
        for t in range(turns):
            last = t == turns - 1
            guess = secret if (last and solved) else rng.choice(_ANIMALS)
            ask = f"Is it a {guess}?" if last else f"Question {t + 1}: does it live in water?"
            msgs += [{"role": "assistant", "content": ask},
                     {"role": "user", "content": "Yes!" if last and solved else "No."}]
            steps.append(_step(t, 50 + 30 * t, rng.randint(5, 40),
                               1.0 if last and solved else 0.0, last and not cut))
        out.append(Episode(msgs, steps, metrics={"turns": float(turns)}))
    return out


def _tools(rng: random.Random, skill: float, problem: int, size: int) -> list[Episode]:
    prompt = [{"role": "system", "content": "Use the search tool, then answer."},
              {"role": "user", "content": f"Question {problem}: who wrote report #{problem}?"}]
    out = []
    for _ in range(size):
        msgs: list[dict[str, Any]] = list(prompt)
        steps: list[dict[str, Any]] = []
        calls = rng.randint(1, 3)
        for c in range(calls):
            bad = rng.random() < 0.15
            call_id = f"call_{problem}_{c}_{rng.randrange(1 << 20):05x}"
            args = "{not json" if bad else json.dumps({"query": f"report {problem}"})
            msgs += [{"role": "assistant", "content": "Searching.", "tool_calls": [{
                "type": "function", "id": call_id,
                "function": {"name": "search", "arguments": args}}]},
                {"role": "tool", "tool_call_id": call_id, "name": "search",
                 "content": "error: bad arguments" if bad else f"report {problem}: A. Author"}]
            steps.append(_step(c, 80 + 60 * c, rng.randint(10, 50), -0.2 if bad else 0.0,
                               False, tool_calls=1.0))
        graded = round(min(1.0, max(0.0, rng.gauss(skill, 0.3))), 2)
        msgs.append({"role": "assistant", "content": f"The author is A. Author ({graded})."})
        steps.append(_step(calls, 80 + 60 * calls, rng.randint(10, 80), graded, True))
        out.append(Episode(msgs, steps))
    return out


def _preference(rng: random.Random, skill: float, problem: int, size: int) -> list[Episode]:
    prompt = [{"role": "user", "content": f"Write a haiku about topic {problem}."}]
    quality = [rng.random() * skill for _ in range(size)]
    out = []
    for i in range(size):
        wins = sum((quality[i] > quality[j]) - (quality[i] < quality[j])
                   for j in range(size) if j != i)
        out.append(Episode([*prompt, {"role": "assistant", "content": f"haiku {i} ({problem})"}],
                           [_step(0, 30, rng.randint(15, 40), 0.0, True)],
                           final_reward=wins / max(1, size - 1), prompt=1))
    return out


_PLAY: Final[dict[str, Callable[[random.Random, float, int, int], list[Episode]]]] = {
    "math": _math, "multiturn": _multiturn, "tools": _tools, "preference": _preference,
    "evalonly": _math, "async": _math,
}


def _record(ep: Episode, group: int, traj: int, scs: int | None) -> dict[str, Any]:
    return {"group_idx": group, "traj_idx": traj, "tags": [], "sampling_client_step": scs,
            "total_reward": ep.total, "final_reward": ep.final_reward,
            "trajectory_metrics": ep.metrics, "steps": ep.steps, "final_ob_len": 0}


def _log_group(lt: LogTree, env: str, eps: Sequence[Episode]) -> None:
    """The cookbook's sections: Group Rollout > (the env's own) > Trajectory Details > ..."""
    with lt.section("Group Rollout"):
        if env == "preference":  # the preference env logs its completions itself
            with lt.section("Prompt"):
                lt.conversation(eps[0].messages[:eps[0].prompt])
            for i, ep in enumerate(eps):
                with lt.section(f"Completion {i}"):
                    lt.conversation(ep.messages[ep.prompt:])
            with lt.section("Pairwise Comparisons"):
                lt.text(", ".join(f"{i}: {ep.final_reward:.2f}" for i, ep in enumerate(eps)))
        with lt.section("Trajectory Details"):
            for i, ep in enumerate(eps):
                with lt.section(f"Trajectory {i} Episode"), lt.section("Episode Details"):
                    if env != "preference":
                        lt.conversation(ep.messages)
                    lt.table({"total_reward": ep.total, "final_reward": ep.final_reward},
                             caption="Episode totals")


def _by_group(groups: Sequence[Sequence[Episode]]) -> dict[str, float]:
    equal = [len({e.total for e in g}) == 1 for g in groups]
    good = sum(q and g[0].total >= 0.5 for q, g in zip(equal, groups, strict=True))
    n = len(groups)
    return {"env/all/by_group/frac_mixed": (n - sum(equal)) / n,
            "env/all/by_group/frac_all_good": good / n,
            "env/all/by_group/frac_all_bad": (sum(equal) - good) / n}


@dataclass(frozen=True)
class _Spec:
    env: str
    iterations: int
    groups: int
    group_size: int
    logged_groups: int


def _train_iteration(run: RunWriter, rng: random.Random, s: _Spec, i: int,
                     totals: dict[str, float]) -> None:
    play = _PLAY[s.env]
    skill = 0.25 + 0.6 * i / max(1, s.iterations - 1)
    groups = [play(rng, skill, i * s.groups + g, s.group_size) for g in range(s.groups)]
    stale = [min(i, rng.randint(0, 3)) if s.env == "async" else 0 for _ in groups]
    with run.logtree(i, title=f"RL Iteration {i}") as lt:
        for eps in groups[:s.logged_groups]:
            _log_group(lt, s.env, eps)
    run.write_rollout_summaries(i, [_record(ep, g, t, i - stale[g])
                                    for g, eps in enumerate(groups) for t, ep in enumerate(eps)])
    eps = [ep for g in groups for ep in g]
    sampled = sum(st["ac_len"] for ep in eps for st in ep.steps)
    prefill = sum(st["ob_len"] for ep in eps for st in ep.steps)
    totals["sampled"] += sampled
    totals["prefill"] += prefill
    totals["cost"] += round(1e-6 * (0.4 * prefill + 1.2 * sampled), 6)
    totals["time"] += (dt := round(rng.uniform(20.0, 40.0), 3))
    metrics: dict[str, Any] = {
        "progress/batch": i, "progress/done_frac": (i + 1) / s.iterations, "optim/lr": 4e-5,
        "env/all/reward/total": sum(ep.total for ep in eps) / len(eps),
        **_by_group(groups),
        "env/all/ac_tokens_per_turn": sampled / sum(len(ep.steps) for ep in eps),
        "optim/kl_sample_train_v1": round(rng.uniform(0.0005, 0.004), 6),
        "optim/kl_sample_train_v2": round(rng.uniform(0.0001, 0.002), 6),
        "optim/entropy": round(1.1 - 0.03 * i + rng.uniform(-0.02, 0.02), 6),
        "tokens/cumulative/sampled": totals["sampled"],
        "tokens/cumulative/prefill_uncached": totals["prefill"],
        "cost/step_usd": round(1e-6 * (0.4 * prefill + 1.2 * sampled), 6),
        "cost/cumulative_usd": round(totals["cost"], 6),
        "time/sample": round(dt * 0.7, 3), "time/train": round(dt * 0.2, 3), "time/total": dt,
    }
    if s.env == "async":
        metrics["async/staleness_mean"] = sum(stale) / len(stale)
        metrics["async/staleness_max"] = max(stale)
    run.log_metrics(metrics, step=i)
    run.record_checkpoint(f"{i + 1:06d}", batch=i + 1, state_path=f"tinker://sim/w/{i + 1:06d}",
                          rolling=True)


def _eval_iteration(run: RunWriter, rng: random.Random, s: _Spec, i: int) -> None:
    """Two evaluators: samples logged outside group sections (group size 1); ``hard`` logs a
    NaN reward for a sample its grader could not score."""
    metrics: dict[str, Any] = {"progress/batch": i}
    for name, skill in (("gsm8k", 0.3 + 0.05 * i), ("hard", 0.1)):
        eps = [_math(rng, skill, 1000 + k, 1)[0] for k in range(s.groups)]
        if name == "hard":
            eps[0].steps[0]["reward"] = math.nan
        with run.logtree(i, title=f"Evaluation {name} iteration {i}", evaluator=name) as lt:
            for k, ep in enumerate(eps[:s.logged_groups]):
                with lt.section(f"Sample {k}"):
                    lt.conversation(ep.messages)
        run.write_rollout_summaries(i, [_record(ep, k, 0, i) for k, ep in enumerate(eps)],
                                    evaluator=name)
        fin = [ep.total for ep in eps if math.isfinite(ep.total)]
        metrics[f"{name}/env/all/reward/total"] = sum(fin) / len(fin)
    run.log_metrics(metrics, step=i)


def write_env_run(location: str, env: str, *, iterations: int = 6, groups: int = 4,
                  group_size: int = 4, logged_groups: int = 2, seed: int = 0) -> None:
    """Write a fresh simulated run of ``env`` (one of ``ENVS``) at ``location``.

    Raises:
        ValueError: an unknown ``env``, or sizes below 1.
    """
    if env not in ENVS:
        raise ValueError(f"unknown environment {env!r}; expected one of {', '.join(ENVS)}")
    if min(iterations, groups, group_size, logged_groups) < 1:
        raise ValueError("iterations, groups, group_size and logged_groups must be >= 1")
    s = _Spec(env, iterations, groups, group_size, logged_groups)
    rng = random.Random(f"{env}:{seed}")
    totals = {"sampled": 0.0, "prefill": 0.0, "cost": 0.0, "time": 0.0}
    with RunWriter(location) as run:
        run.write_config({"env": env, "model_name": "sim/policy-8b", "groups_per_batch": groups,
                          "group_size": group_size, "num_groups_to_log": logged_groups,
                          "learning_rate": 4e-5, "seed": seed})
        for i in range(iterations):
            if env == "evalonly":
                _eval_iteration(run, rng, s, i)
            else:
                _train_iteration(run, rng, s, i, totals)
        run.record_checkpoint("final", batch=iterations, state_path="tinker://sim/w/final")
