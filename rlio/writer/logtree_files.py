"""One iteration's logtree files: the block ``RunWriter.logtree`` runs, and writing its two files.

The JSON is written before its HTML twin, so a crash in between leaves JSON without HTML (an
info finding), never HTML without its JSON (a warning). Both are written also when the block
raises, with the exception recorded into the tree first. Both twins of one write carry the same
random write id (the JSON's first key ``write_id``, the HTML's ``<meta name="rlio-write-id">``),
so twins from different writes (a kill between the two replaces) are detectable (RL414).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rlio import layout as L
from rlio.storage.base import Storage

if TYPE_CHECKING:
    from rlio.logtree.builder import LogTree


@contextlib.contextmanager
def logtree_block(storage: Storage, title: str, *, html_rel: str, json_rel: str,
                  before_write: Callable[[], None] = lambda: None) -> Iterator[LogTree]:
    """A ``LogTree`` whose JSON and HTML replace ``json_rel`` and ``html_rel`` when the block exits.

    When the block raises, the exception is recorded into the tree, both files are written and
    the exception is re-raised (with a note when the files could not be written). A generator
    closed inside the block (``GeneratorExit``) writes nothing. ``before_write`` runs first and
    may refuse the write by raising (the writer's lease check).
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
                before_write()
                _write_logtree(storage, tree, html_rel=html_rel, json_rel=json_rel)
            except Exception as write_exc:
                exc.add_note(f"rlio: the logtree {json_rel!r} could not be written: "
                             f"{write_exc!r}")
        raise
    before_write()
    _write_logtree(storage, tree, html_rel=html_rel, json_rel=json_rel)


def _write_logtree(storage: Storage, tree: LogTree, *, html_rel: str, json_rel: str) -> None:
    """Replace the tree's JSON (its ``path``: the HTML twin's full path or URI), then its HTML.

    The JSON is compact (whitespace is not part of the format, docs/format.md §7). Both carry
    one new write id, first in the JSON object and in the HTML's head; both files go through one
    ``replace_all``: on a local disk two file syncs and one directory sync.
    """
    wid = secrets.token_hex(8)
    body = tree.to_json_bytes(path=storage.display(html_rel), compact=True)
    head = b'{"%s":"%s"' % (L.WRITE_ID_KEY.encode(), wid.encode())
    body = head + (b"," + body[1:] if body[1:2] != b"}" else body[1:])
    page = tree.to_html(page=html_rel, write_id=wid)
    storage.replace_all([(json_rel, body), (html_rel, page.encode("utf-8"))])
