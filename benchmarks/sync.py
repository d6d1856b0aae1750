"""Bytes sent per sync of a growing run to gs://: ``rlio sync`` against re-uploading changed files.

Starts the gs:// tests' emulator (``tests/storage/gcs_emulator.py``) on a free loopback port,
writes a local run whose ``metrics.jsonl`` grows by ``--lines-per-pass`` lines between passes
(plus a per-iteration page each pass and a checkpoint every tenth), and after each growth mirrors
it two ways to two prefixes:

- ``rlio.sync``: the logs' new whole lines appended through the store's append; other files
  replaced when changed;
- baseline: every file whose size or modification time changed uploaded whole (what
  ``gsutil rsync`` / ``aws s3 sync`` do), through the same storage's ``replace``.

Bytes are counted by the emulator: ``sent`` is what the client sent (request line, headers,
body) summed over every request of the pass; ``rlio data`` is the file bytes rlio sent
(``SyncStats.bytes_sent``). Each pass here is a one-shot ``sync`` call, as a cron job would
make; its advisory cache (in the temporary folder) spares reading unchanged files back.
The goal is a flat ``rlio data`` column while the baseline grows with the log. Shared, noisy
machine: byte counts are exact, times indicative.

Run: ``.venv/bin/python benchmarks/sync.py [--passes 40] [--lines-per-pass 50]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LINE = (b'{"step": %06d, "progress/batch": %06d, "env/all/reward/total": 0.4375, '
        b'"optim/lr": 0.0001, "time/total": 12.5, "pad": "xxxxxxxxxxxxxxxx"}\n')


def _emulator_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gcs_emulator", ROOT / "tests" / "storage" / "gcs_emulator.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gcs_emulator"] = module
    spec.loader.exec_module(module)
    return module


def _grow(run: Path, step: int, lines: int) -> int:
    """Append ``lines`` metrics lines, a page and (every tenth pass) a checkpoint; next step."""
    with (run / "metrics.jsonl").open("ab") as f:
        for s in range(step, step + lines):
            f.write(LINE % (s, s))
    (run / f"train_iteration_{step:06d}.html").write_text("<!doctype html><p>page</p>\n" * 20)
    if (step // lines) % 10 == 9:
        with (run / "checkpoints.jsonl").open("a") as f:
            f.write(f'{{"name": "{step:06d}", "batch": {step}, '
                    f'"state_path": "tinker://r/{step}"}}\n')
    return step + lines


def _rsync_like(run: Path, uri: str, seen: dict[str, tuple[int, int]]) -> None:
    """Upload every file whose (size, mtime) changed, whole (the baseline)."""
    from rlio.storage import open_storage

    remote = open_storage(uri, create=True)
    for path in sorted(run.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(run).as_posix()
        st = path.stat()
        if seen.get(rel) != (st.st_size, st.st_mtime_ns):
            seen[rel] = (st.st_size, st.st_mtime_ns)
            if rel.endswith(".jsonl"):
                remote.remove(rel)  # an object store replaces a log only once it is gone
            remote.replace(rel, path.read_bytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--passes", type=int, default=40)
    ap.add_argument("--lines-per-pass", type=int, default=50)
    args = ap.parse_args()
    os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    emu_mod = _emulator_module()
    from rlio.storage.sync import sync

    with emu_mod.serving("rlio-bench") as emu, tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # sync's advisory cache
        run = Path(tmp) / "run"
        run.mkdir()
        (run / "config.json").write_text('{"lr": 0.0001}')
        base = f"gs://rlio-bench/b-{uuid.uuid4().hex[:8]}"
        step, seen = 0, {}  # type: ignore[var-annotated]
        print(f"{'pass':>4} {'metrics.jsonl':>13} {'rlio data':>10} {'rlio sent':>10} "
              f"{'rsync-like sent':>16} {'ratio':>6}")
        for p in range(args.passes):
            step = _grow(run, step, args.lines_per_pass)
            emu.stats(reset=True)
            payload = sync(run, f"{base}/rlio").bytes_sent
            ours = sum(v["bytes"] for v in emu.stats().values())
            emu.stats(reset=True)
            _rsync_like(run, f"{base}/rsync", seen)
            theirs = sum(v["bytes"] for v in emu.stats().values())
            if p % max(1, args.passes // 10) == 0 or p == args.passes - 1:
                size = (run / "metrics.jsonl").stat().st_size
                print(f"{p:>4} {size:>13} {payload:>10} {ours:>10} {theirs:>16} "
                      f"{theirs / ours:>6.1f}")


if __name__ == "__main__":
    main()
