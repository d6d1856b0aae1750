"""The key order of lines a schema's msgspec decoder accepted, read without a parse into a dict.

The validator judges the key order (RL202) of a rollout file's first records; a typed record
(``rlio._schema.decoders``) has no key order of its own, so it is read from the raw line: a line
that is byte for byte its record's encoding holds the struct's keys in the struct's order, any
other is read once more as a frame of raw values.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import msgspec

from rlio._schema.decoders import decoder_for

#: ``keys(record, line)``: the top-level keys of a line the schema's decoder accepted, in the
#: order the line holds them (what ``tuple(orjson.loads(line))`` gives).
KeyOrder = Callable[[Any, bytes], tuple[str, ...]]


@functools.cache
def key_order_for(name: str) -> KeyOrder | None:
    """How to read the key order of a line the decoder of ``name`` accepted, without a parse into
    a dict (None when the schema has no decoder).

    A line that is byte for byte the encoding of its typed record (what a writer emitting the
    documented order writes) holds the struct's keys in the struct's order; any other line is
    read once more as a frame of raw values (``dict[str, Raw]``: keys decoded, values skipped),
    whose first-occurrence order is orjson's.
    """
    decode = decoder_for(name)
    if decode is None:
        return None
    frame = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
    encode = msgspec.json.Encoder().encode
    shapes: dict[type, tuple[str, ...] | None] = {}

    def keys(rec: Any, line: bytes) -> tuple[str, ...]:
        cls = type(rec)
        if cls not in shapes:
            # only a struct whose every field is required encodes every key, in field order
            shapes[cls] = (None if getattr(cls, "__struct_defaults__", (None,))
                           else tuple(cls.__struct_encode_fields__))
        names = shapes[cls]
        if names is not None:
            body = encode(rec)
            n = len(body)
            if line.startswith(body) and (len(line) == n or (len(line) == n + 1
                                                              and line[n] == 10)):
                return names
        return tuple(frame(line))

    return keys


#: ``keys(records, lines)``: the key order every line of a batch holds when each line is byte
#: for byte the encoding of its typed record (one struct, every field required), else None.
BatchKeyOrder = Callable[[list[Any], list[bytes]], "tuple[str, ...] | None"]


@functools.cache
def batch_key_order_for(name: str) -> BatchKeyOrder | None:
    """``key_order_for`` of a batch of accepted lines in one encode (None: no decoder).

    The batch's records encode as one JSON array; it equals the lines (newlines cut) joined
    by commas in brackets only when each line is its record's encoding: each line is one
    JSON object and nothing else, so the objects align one to one. None means "ask
    ``key_order_for`` line by line", never "out of order".
    """
    if decoder_for(name) is None:
        return None
    encode = msgspec.json.Encoder().encode

    def keys(recs: list[Any], lines: list[bytes]) -> tuple[str, ...] | None:
        cls = type(recs[0])
        if getattr(cls, "__struct_defaults__", (None,)):
            return None  # an optional field may be absent: the struct's order says nothing
        for rec in recs:
            if type(rec) is not cls:
                return None
        body = b",".join([line[:-1] if line[-1:] == b"\n" else line for line in lines])
        if encode(recs) != b"[" + body + b"]":
            return None
        return tuple(cls.__struct_encode_fields__)

    return keys
