"""Whether bytes are a strict prefix of a JSON object: what a killed append leaves of a record.

The validator calls a damaged line in the middle of an append-only file crash damage (RL117)
exactly when it is such a prefix, or such a prefix followed by a whole record (the restart's
first line, glued to it); anything else that does not parse is an error (RL102). orjson has no
incremental parser, so this is a small pushdown scanner over the JSON grammar (with rlio's
``NaN``/``Infinity`` tokens), asked only about lines that did not parse.
"""

from __future__ import annotations

__all__ = ["is_cut_record"]

_WORDS = (b"true", b"false", b"null", b"NaN", b"Infinity", b"-Infinity")
_LONGEST_WORD = max(map(len, _WORDS))
_TOKEN = frozenset(b"0123456789+-.eEtrufalsnNIiy")
_SPACE = frozenset(b" \t\r\n")
_ESCAPES = frozenset(b'"\\/bfnrtu')
_HEX = frozenset(b"0123456789abcdefABCDEF")
# what the scanner expects next
_VALUE, _KEY_OR_END, _KEY, _COLON, _NEXT, _VALUE_OR_END, _DONE = range(7)


def _number_moves() -> dict[tuple[int, int], int]:
    """The JSON number grammar as a table ``(state, byte) -> state``: 0 nothing yet, 1 after
    ``-``, 2 a leading ``0``, 3 integer digits, 4 after ``.``, 5 fraction digits, 6 after ``e``,
    7 after the exponent's sign, 8 exponent digits. One step per byte: a token of any length is
    judged in time linear in its length."""
    digits, moves = b"0123456789", {}
    for d in digits:
        for state, to in ((0, 3), (1, 3), (3, 3), (4, 5), (5, 5), (6, 8), (7, 8), (8, 8)):
            moves[state, d] = to
    moves[0, ord("0")] = moves[1, ord("0")] = 2
    moves[0, ord("-")] = 1
    for state in (2, 3):
        moves[state, ord(".")] = 4
    for state in (2, 3, 5):
        moves[state, ord("e")] = moves[state, ord("E")] = 6
    moves[6, ord("+")] = moves[6, ord("-")] = 7
    return moves


_NUMBER_MOVES = _number_moves()
_NUMBER_DONE = frozenset({2, 3, 5, 8})
_DEAD = -1


class _Token:
    """A number or word token read so far, one byte at a time: its number state and, while it
    is short enough to be one, the word it spells."""

    __slots__ = ("length", "number", "word")

    def __init__(self) -> None:
        self.length = 0
        self.number = 0
        self.word: bytes | None = b""

    def add(self, c: int) -> None:
        self.length += 1
        self.number = _NUMBER_MOVES.get((self.number, c), _DEAD)
        if self.word is not None:
            self.word = self.word + bytes((c,)) if self.length <= _LONGEST_WORD else None

    def ok(self, *, complete: bool) -> bool:
        """A whole number or word (``complete``), or a prefix of one (the input ended)."""
        if complete:
            return self.number in _NUMBER_DONE or self.word in _WORDS
        word = self.word
        return self.number != _DEAD or (word is not None and any(
            w.startswith(word) for w in _WORDS))


class _Scanner:
    """Feeds bytes through the JSON grammar; ``alive`` turns False at the first one no JSON
    object can continue with, ``state`` is ``_DONE`` once a whole top-level object was read."""

    def __init__(self) -> None:
        self.stack: list[int] = []  # ord("{") or ord("[")
        self.state = _VALUE
        self.alive = True
        self.in_string = False
        self.escape = 0  # 1 after a backslash; 2..5 inside \\uXXXX
        self.token: _Token | None = None

    def _value_done(self) -> None:
        self.state = _NEXT if self.stack else _DONE

    def _end_token(self) -> bool:
        if self.token is None:
            return True
        ok = self.token.ok(complete=True)
        self.token = None
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
            if not self.stack and self.token is None and self.state == _VALUE:
                self.alive = False  # a record is an object, not a bare number or word
                return
            if self.token is None:
                self.token = _Token()
            self.token.add(c)
            self.alive = self.token.ok(complete=False)
            return
        if self.token is not None and not self._end_token():
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
        return self.token is None or self.token.ok(complete=False)


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
