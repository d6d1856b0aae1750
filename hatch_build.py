"""Build hook: compile the optional C accelerator ``rlio/_accel.c`` into ``rlio._accel``.

The extension is compiled with the compiler and flags this Python was built with (sysconfig), so
no build dependency beyond hatchling is needed. A wheel build compiles into a temporary directory
and adds the module to a platform-tagged wheel; an editable install compiles in place into
``rlio/``, which that install imports. The extension is optional: with no compiler, a failed
compile, or ``RLIO_BUILD_PURE=1`` the hook warns in one line and the wheel is pure Python (the
package imports ``rlio._accel`` only if it is there).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: The extension's source and its module name inside the package.
SOURCE = Path("rlio") / "_accel.c"
MODULE = "_accel"


class CompileError(Exception):
    """The extension could not be compiled; the message is one line for the build's warning."""


def compile_extension(source: Path, target: Path, workdir: Path) -> None:
    """Compile and link ``source`` into the extension module ``target`` (objects in ``workdir``).

    Raises CompileError when sysconfig names no compiler, it is not installed, or it fails.
    """
    cc = shlex.split(sysconfig.get_config_var("CC") or "")
    if not cc or shutil.which(cc[0]) is None:
        raise CompileError(f"C compiler {cc[0] if cc else '(none in sysconfig)'} not found")
    cflags = shlex.split(sysconfig.get_config_var("CFLAGS") or "")
    ccshared = shlex.split(sysconfig.get_config_var("CCSHARED") or "")
    ldshared = shlex.split(sysconfig.get_config_var("LDSHARED") or "") or [*cc, "-shared"]
    include = sysconfig.get_paths()["include"]
    obj = workdir / f"{MODULE}.o"
    for command in (  # -O2 after CFLAGS: the last -O wins
        [*cc, *cflags, *ccshared, "-O2", f"-I{include}", "-c", str(source), "-o", str(obj)],
        [*ldshared, str(obj), "-o", str(target)],
    ):
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise CompileError(f"{command[0]}: {exc.strerror}") from None
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
            detail = (errors or done.stderr.splitlines() or [f"exit {done.returncode}"])[0]
            raise CompileError(f"{command[0]} failed: {detail.strip()}")


class AccelBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Adds the compiled ``rlio._accel`` to wheels; compiles it in place for editable installs."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        self._tmp: str | None = None
        root = Path(self.root)
        name = f"{MODULE}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
        in_place = root / SOURCE.parent / name
        if version == "editable":
            # A module left by an earlier in-place build would shadow a pure or failed build.
            in_place.unlink(missing_ok=True)
        if os.environ.get("RLIO_BUILD_PURE") == "1":
            self.warn("RLIO_BUILD_PURE=1")
            return
        if not (root / SOURCE).is_file():
            self.warn(f"{SOURCE.as_posix()} is missing")
            return
        self._tmp = tempfile.mkdtemp(prefix="rlio-accel-")
        target = in_place if version == "editable" else Path(self._tmp) / name
        try:
            compile_extension(root / SOURCE, target, Path(self._tmp))
        except CompileError as exc:
            self.warn(str(exc))
            return
        if version != "editable":  # an editable wheel holds only a .pth file: it stays untagged
            build_data["force_include"][str(target)] = f"rlio/{name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp: str | None = getattr(self, "_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)

    def warn(self, reason: str) -> None:
        """One line: why the C accelerator is left out, and that the build is pure Python."""
        self.app.display_warning(f"rlio: building without the C accelerator rlio._accel ({reason});"
                                 " rlio works without it, only slower")
