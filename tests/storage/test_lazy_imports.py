"""Cloud clients are imported only when a cloud URI is opened."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_import_and_local_writes_never_import_gcsfs(tmp_path: Path) -> None:
    """`import rlio`, a local RunWriter and memory:// runs leave gcsfs (and locally fsspec) out."""
    code = r"""
import sys
import rlio
from rlio import RunWriter
with RunWriter(sys.argv[1]) as run:
    run.write_config({"a": 1})
    run.log_metrics({"progress/batch": 0}, step=0)
    run.record_checkpoint("000001", batch=1, state_path="tinker://x/1")
local = sorted(m for m in ("fsspec", "gcsfs") if m in sys.modules)
from rlio.storage import open_storage
open_storage("memory://probe", create=True).replace("config.json", b"{}")
print(local, "gcsfs" in sys.modules)
"""
    env = {k: v for k, v in os.environ.items() if k != "STORAGE_EMULATOR_HOST"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["[]", "False"]
