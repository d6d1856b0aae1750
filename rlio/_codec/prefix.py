"""Whether bytes are a strict prefix of a JSON object: what a killed append leaves of a record.

The validator calls a damaged line in the middle of an append-only file crash damage (RL117)
exactly when it is such a prefix, or such a prefix followed by a whole record (the restart's
first line, glued to it); anything else that does not parse is an error (RL102). orjson has no
incremental parser, so this is a small pushdown scanner over the JSON grammar (with rlio's
``NaN``/``Infinity`` tokens), asked only about lines that did not parse.
"""

from __future__ import annotations

import re

__all__ = ["is_cut_record"]

_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_WORDS = (b"true", b"false", b"null", b"NaN", b"Infinity", b"-Infinity")
_TOKEN = frozenset(b"0123456789+-.eEtrufalsnNIiy")
_SPACE = frozenset(b" \t\r\n")
_ESCAPES = frozenset(b'"\\/bfnrtu')
_HEX = frozenset(b"0123456789abcdefABCDEF")
# what the scanner expects next
_VALUE, _KEY_OR_END, _KEY, _COLON, _NEXT, _VALUE_OR_END, _DONE = range(7)


def _token_ok(token: bytes, *, complete: bool) -> bool:
    """A number or word token: whole (``complete``), or a prefix of one (the input ended)."""
    if complete:
        return token in _WORDS or _NUMBER.fullmatch(token) is not None
    return (any(w.startswith(token) for w in _WORDS) or _NUMBER.fullmatch(token) is not None
            or _NUMBER.fullmatch(token + b"0") is not None)


class _Scanner:
    """Feeds bytes through the JSON grammar; ``alive`` turns False at the first one no JSON
    object can continue with, ``state`` is ``_DONE`` once a whole top-level object was read."""

    def __init__(self) -> None:
        self.stack: list[int] = []  # ord("{") or ord("[")
        self.state = _VALUE
        self.alive = True
        self.in_string = False
        self.escape = 0  # 1 after a backslash; 2..5 inside \\uXXXX
        self.token = b""

    def _value_done(self) -> None:
        self.state = _NEXT if self.stack else _DONE

    def _end_token(self) -> bool:
        if not self.token:
            return True
        ok = _token_ok(self.token, complete=True)
        self.token = b""
        if ok:
            self._value_done()
        return ok

    def _string_byte(self, c: int) -> None:
        if self.escape == 1:
            self.alive = c in _ESCAPES
            self.escape = 2 if c == ord("u") else 0
        elif self.escape:
            self.alive = c in _HEX
            self.escape = 0 if self.escape == 5 else self.escape + 1
        elif c == ord("\\"):
            self.escape = 1
        elif c == ord('"'):
            self.in_string = False
            if self.state == _COLON:
                return  # a key: its colon comes next
            self._value_done()
        elif c < 0x20:
            self.alive = False

    def feed(self, c: int) -> None:
        """One byte (only while ``alive``)."""
        if self.in_string:
            self._string_byte(c)
            return
        if c in _TOKEN and self.state in (_VALUE, _VALUE_OR_END):
            if not self.stack and not self.token and self.state == _VALUE:
                self.alive = False  # a record is an object, not a bare number or word
                return
            self.token += bytes((c,))
            self.alive = _token_ok(self.token, complete=False)
            return
        if self.token and not self._end_token():
            self.alive = False
            return
        self.alive = self._structural(c)

    def _structural(self, c: int) -> bool:
        s = self.state
        if c in _SPACE:
            return True
        if s == _DONE:
            return False
        if s in (_VALUE, _VALUE_OR_END):
            if c == ord("]") and s == _VALUE_OR_END:
                self.stack.pop()
                self._value_done()
                return True
            if c == ord('"') and self.stack:
                self.in_string = True
                return True
            if c == ord("{"):
                self.stack.append(c)
                self.state = _KEY_OR_END
                return True
            if c == ord("[") and self.stack:
                self.stack.append(c)
                self.state = _VALUE_OR_END
                return True
            return False
        if s in (_KEY_OR_END, _KEY):
            if c == ord('"'):
                self.in_string, self.state = True, _COLON
                return True
            if c == ord("}") and s == _KEY_OR_END:
                self.stack.pop()
                self._value_done()
                return True
            return False
        if s == _COLON:
            self.state = _VALUE
            return c == ord(":")
        # _NEXT: after a value inside an object or array
        top = self.stack[-1]
        if c == ord(","):
            self.state = _KEY if top == ord("{") else _VALUE
            return True
        if c == (ord("}") if top == ord("{") else ord("]")):
            self.stack.pop()
            self._value_done()
            return True
        return False

    def open_prefix(self) -> bool:
        """True when what was fed is a strict prefix of an object (more could complete it)."""
        if not self.alive or self.state == _DONE:
            return False
        return not self.token or _token_ok(self.token, complete=False)


def _parses_as_object(data: bytes) -> bool:
    from rlio._codec.jsonl import DecodeError, decode

    try:
        value, _ = decode(data)
    except DecodeError:
        return False
    return isinstance(value, dict)


def is_cut_record(line: bytes, *, max_glued_tries: int = 64) -> bool:
    """True when ``line`` (surrounding whitespace aside) is a strict prefix of a JSON object, or
    such a prefix followed by a whole JSON object (tried at the ``max_glued_tries`` last places
    a ``{`` could start one, so a hostile line costs a bounded number of parses)."""
    text = line.strip()
    if not text.startswith(b"{"):
        return False
    scanner = _Scanner()
    starts: list[int] = []  # where a glued whole record could begin
    for i, c in enumerate(text):
        if c == ord("{") and i and scanner.open_prefix():
            starts.append(i)
        scanner.feed(c)
        if not scanner.alive:
            break
    else:
        if scanner.open_prefix():
            return True
    return any(_parses_as_object(text[i:]) for i in reversed(starts[-max_glued_tries:]))
