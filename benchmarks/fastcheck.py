"""Time the engine (``rlio.schema.record_schema(name).clean``) against python-jsonschema and orjson.

Run: ``.venv/bin/python benchmarks/fastcheck.py``. Prints microseconds per record for a typical
rollout-summary line (12 keys, 4 steps) and metrics line (20 keys), and the validator-style ratio
``loads / (loads + check)``: the throughput of parse-and-check relative to parsing alone.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

import jsonschema
import orjson

from rlio.schema import load_schema, record_schema


def rollout_record(i: int = 0) -> dict[str, Any]:
    """A typical rollout-summary line: 12 keys, tags, 4 steps with small metrics/logs."""
    steps = [
        {
            "step_idx": s,
            "ob_len": 512 + s,
            "ac_len": 128,
            "reward": 0.25 if s < 3 else 1.0,
            "episode_done": s == 3,
            "metrics": {"format_ok": 1.0, "correct": s == 3, "num_tokens": 128},
            "logs": {"answer": "42", "parse": "ok"},
        }
        for s in range(4)
    ]
    return {
        "schema_version": 1,
        "split": "train",
        "iteration": 7,
        "group_idx": i % 32,
        "traj_idx": i % 8,
        "tags": ["math", "gsm8k"],
        "sampling_client_step": 7,
        "total_reward": 1.75,
        "final_reward": 0.0,
        "trajectory_metrics": {"turns": 4, "reward/format": 1.0, "stop": "eos"},
        "steps": steps,
        "final_ob_len": 0,
    }


def metrics_record(step: int = 12) -> dict[str, Any]:
    """A typical metrics line: 20 keys, properties and patternProperties both in play."""
    return {
        "step": step, "progress/batch": step, "progress/done_frac": 0.5, "optim/lr": 1e-5,
        "optim/entropy": 0.31, "optim/kl_sample_train_v1": 0.01, "optim/kl_sample_train_v2": 0.02,
        "training_client/step": step, "time/total": 12.5, "time/sample": 4.1, "time/train": 5.3,
        "time/sample:count": 4, "env/all/reward/total": 0.5, "env/all/reward/mean": 0.2,
        "env/all/ac_tokens_per_turn": 120.0, "env/all/ob_tokens_per_turn": 300.0,
        "env/all/turns_per_episode": 1.0, "env/all/total_episodes": 64,
        "env/all/frac_mixed": 0.5, "custom/note": "ok",
    }


def per_call_us(fn: Callable[[Any], Any], arg: Any, number: int) -> float:
    """Best-of-5 microseconds per call."""
    return min(timeit.repeat(lambda: fn(arg), number=number, repeat=5)) / number * 1e6


def main() -> None:
    """Print the table."""
    for name, record, number in (
        ("rollout-summary-line", rollout_record(), 20_000),
        ("metrics-line", metrics_record(), 50_000),
    ):
        schema = load_schema(name)
        fast = record_schema(name).clean
        slow = jsonschema.validators.validator_for(schema)(schema).is_valid
        line = orjson.dumps(record)
        assert fast(record) and slow(record), name
        parsed = orjson.loads(line)
        t_fast = per_call_us(fast, parsed, number)
        t_js = per_call_us(slow, parsed, max(number // 50, 200))
        t_loads = per_call_us(orjson.loads, line, number)
        print(f"{name} ({len(line)} bytes)")
        print(f"  rlio engine       {t_fast:8.2f} us/record")
        print(f"  jsonschema        {t_js:8.2f} us/record  ({t_js / t_fast:.0f}x slower)")
        print(f"  orjson.loads      {t_loads:8.2f} us/record")
        print(f"  loads+check vs loads throughput: {t_loads / (t_loads + t_fast):.2f}")


if __name__ == "__main__":
    main()
