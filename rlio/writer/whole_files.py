"""``RunWriter``'s whole-file verbs: ``config.json`` and ``code.diff``, each replaced atomically.

Only the lease holder writes them: an attached writer (``attach=True``) is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlio import layout as L
from rlio._codec.normalize import OnUnserializable, config_bytes
from rlio.writer import lease as run_lease
from rlio.writer.support import git_diff

if TYPE_CHECKING:
    from rlio._codec.jsonl import NonFinite
    from rlio.storage.base import Storage


class WholeFileVerbs:
    """``write_config`` and ``write_code_diff`` (a mixin over the writer's storage and state)."""

    log_path: str
    _attach: bool
    _nonfinite: NonFinite
    _storage: Storage

    if TYPE_CHECKING:
        def _require_open(self) -> None: ...

    def write_config(self, obj: Any, *, on_unserializable: OnUnserializable = "error") -> None:
        """Replace ``config.json`` atomically with ``obj`` serialized (indent 2).

        Accepts dataclasses, pydantic models, enums, paths, mappings and sequences.

        Raises:
            RecordError: a value has no faithful JSON form (a function, a class, bytes, a
                non-string key, a reference cycle); names its key path. With
                ``on_unserializable="repr"`` such values are written as their ``repr()``.
        """
        self._require_open()
        run_lease.refuse_attached(self._attach, f"write_config: {L.CONFIG}", self.log_path)
        data = config_bytes(obj, on_unserializable=on_unserializable, nonfinite=self._nonfinite)
        self._storage.replace(L.CONFIG, data)

    def write_code_diff(self, text: str | bytes | None = None) -> None:
        """Replace ``code.diff`` atomically.

        Args:
            text: the diff to write; by default ``git diff HEAD`` of the current working
                directory plus the names of untracked files (see ``git_diff``); empty outside
                a git repository.
        """
        self._require_open()
        run_lease.refuse_attached(self._attach, f"write_code_diff: {L.CODE_DIFF}", self.log_path)
        if text is None:
            data = git_diff()
        elif isinstance(text, bytes):
            data = text
        else:
            data = text.encode("utf-8", "surrogateescape")
        self._storage.replace(L.CODE_DIFF, data)
