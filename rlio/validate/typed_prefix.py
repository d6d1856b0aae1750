"""The typed prefix of a small JSONL file held in memory, judged without the line reader.

A warm process gives a small file's lines to the schema's fast decoder from the first line on;
while it accepts them (whole lines, newline-terminated, not long) there is nothing for
``rlio.validate.scan.scan_jsonl``'s per-line bookkeeping (held-back lines, torn tails, decoder
pauses) to do. This loop reads them with the buffer's own ``readline`` and hands each typed
record to the file's checks; the scan reads on from the first line it does not take, exactly
as it would have judged it.
"""

from __future__ import annotations

import functools

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a small run's start; annotations only
    import io
    from collections.abc import Callable
    from typing import Any


@functools.cache
def decoder_for(schema: str) -> Callable[[bytes], Any] | None:
    """The schema's fast decoder (``rlio._schema.decoders``), imported on first use: msgspec
    costs a small run's whole start, and only a file past its first lines uses it."""
    from rlio._schema.decoders import decoder_for as build

    return build(schema)


def typed_prefix(
    stream: io.BytesIO, decode: Callable[[bytes], Any],
    on_decoded: Callable[[Any, int, bytes], None] | None, first_line: int, long_line: int,
) -> tuple[int, int, bool]:
    """Judge lines from the stream's position while ``decode`` accepts them.

    Each taken line is newline-terminated, at most ``long_line`` bytes long and accepted by
    ``decode``; its typed record goes to ``on_decoded`` with its number and raw bytes. The
    stream is left at the start of the first line not taken.

    Returns:
        ``(lines taken, bytes taken, whether they were all the stream held)``.
    """
    readline = stream.readline
    start = stream.tell()
    lineno = first_line
    taken = 0
    while True:
        line = readline()
        if not line:
            return lineno - first_line, taken, True
        if line[-1] != 10 or len(line) > long_line:
            break
        try:
            typed = decode(line)
        except Exception:  # refused: the scan judges it (and what follows)
            break
        if on_decoded is not None:
            on_decoded(typed, lineno, line)
        lineno += 1
        taken += len(line)
    stream.seek(start + taken)
    return lineno - first_line, taken, False
