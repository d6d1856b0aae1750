"""One iteration's logtree files: the block ``RunWriter.logtree`` runs, and writing its two files.

The JSON is written before its HTML twin, so a crash in between leaves JSON without HTML (an
info finding), never HTML without its JSON (a warning). Both are written also when the block
raises, with the exception recorded into the tree first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rlio.storage.base import Storage

if TYPE_CHECKING:
    from rlio.logtree.builder import LogTree


@contextlib.contextmanager
def logtree_block(storage: Storage, title: str, *, html_rel: str,
                  json_rel: str) -> Iterator[LogTree]:
    """A ``LogTree`` whose JSON and HTML replace ``json_rel`` and ``html_rel`` when the block exits.

    When the block raises, the exception is recorded into the tree, both files are written and
    the exception is re-raised (with a note when the files could not be written). A generator
    closed inside the block (``GeneratorExit``) writes nothing.
    """
    from rlio.logtree.builder import LogTree  # the logtree builder is imported on first use

    tree = LogTree(title)
    try:
        yield tree
    except BaseException as exc:
        if not isinstance(exc, GeneratorExit):
            with contextlib.suppress(Exception):
                tree.exception(exc)
            try:
                _write_logtree(storage, tree, html_rel=html_rel, json_rel=json_rel)
            except Exception as write_exc:
                exc.add_note(f"rlio: the logtree {json_rel!r} could not be written: "
                             f"{write_exc!r}")
        raise
    _write_logtree(storage, tree, html_rel=html_rel, json_rel=json_rel)


def _write_logtree(storage: Storage, tree: LogTree, *, html_rel: str, json_rel: str) -> None:
    """Replace the tree's JSON (its ``path``: the HTML twin's full path or URI), then its HTML.

    The JSON is compact (whitespace is not part of the format, SPEC §7); both files go through
    one ``replace_all``: on a local disk two file syncs and one directory sync.
    """
    storage.replace_all([
        (json_rel, tree.to_json_bytes(path=storage.display(html_rel), compact=True)),
        (html_rel, tree.to_html().encode("utf-8")),
    ])
