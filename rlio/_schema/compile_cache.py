"""A disk cache of the shipped schemas' compiled predicates: a command's start skips the compile.

``rlio._schema.compiler`` generates Python source per schema and compiles it; on every process
start that is a few milliseconds per schema, as much as a small run's whole validation. This
module keeps the compiled code object (``marshal``) and a recipe for each object the code binds,
in one file per schema, so a later process only ``exec``s it.

Where: ``$RLIO_CACHE_DIR``, else ``$XDG_CACHE_HOME/rlio``, else ``~/.cache/rlio`` (``schemas/``
below it). An entry is named by a checksum of the schema and a tag of the rlio version, the
interpreter's bytecode tag and the generator's own source files (size and modification time),
so a new rlio, Python or compiler never reads an old entry. It is trusted only when whole: it
stores the exact schema it was built from (compared byte for byte) and a CRC-32 of its content;
a corrupt, truncated, foreign or stale entry is rebuilt. Entries are written atomically (a
temporary file, then ``os.replace``). Any I/O error (a read-only or missing home, a full disk)
just means no cache: the schema is compiled as before.

The objects the code binds are rebuilt from the recipe: plain values (frozensets of keys, enum
members, constants) and the regex matchers at once; the rest (the interpreter of non-JSON values
and deep documents, per-key-layout compilers of ``patternProperties``) are placeholders that,
on first use, compile the schema the ordinary way and swap every binding for the real one (the
generator is deterministic: the same schema gives the same names).
"""

from __future__ import annotations

import _thread  # its lock, without the threading module a small run never needs
import contextlib
import marshal
import os
import sys
import zlib
from collections.abc import Callable

from rlio._version import __version__

_MAGIC: Final = b"RLIO-SCHEMA-CACHE 1\n"
_HEAD: Final = len(_MAGIC) + 12  # magic, CRC-32 (4 bytes), payload length (8 bytes)
_TYPES: Final = {t.__name__: t for t in (dict, list, str, int, float, bool, type(None))}
_SCALARS: Final = frozenset((str, int, float, bool, type(None)))
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final, TypeAlias

    from rlio._schema.compiler import Generated

#: ``rlio._schema.compiler.generate``.
Generate: TypeAlias = "Callable[[dict[str, Any]], Generated]"


def cache_dir() -> str:
    """The user cache folder of rlio (``$RLIO_CACHE_DIR``, ``$XDG_CACHE_HOME/rlio``,
    ``~/.cache/rlio``); "" when there is none (no home directory)."""
    explicit = os.environ.get("RLIO_CACHE_DIR")
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "rlio")
    home = os.path.expanduser("~")
    if not os.path.isabs(home):  # no home to resolve: no cache (never one under the cwd)
        return ""
    return os.path.join(home, ".cache", "rlio")


def _tag() -> str:
    """What an entry must have been built by: rlio, the interpreter, the generator's sources."""
    parts = [__version__, sys.implementation.cache_tag or "none"]
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("compiler.py", "model.py", "compile_cache.py"):
        try:
            st = os.stat(os.path.join(here, name))
        except OSError:
            return ""  # cannot tell which generator built an entry: never reuse one
        parts.append(f"{st.st_size}:{st.st_mtime_ns}")
    return " ".join(parts)


def _schema_key(schema: Any) -> bytes | None:
    """``schema`` as bytes that tell it from any other JSON value (key order kept: it decides
    the generated names), or None when it holds anything but JSON values.

    ``marshal`` format 2 (it never shares references, so equal values give equal bytes):
    building the key must not import a JSON library a small run's start does not need.
    """
    if not _plain(schema, 0):
        return None
    return marshal.dumps(schema, 2)


def _plain(value: Any, depth: int) -> bool:
    if depth > 100:
        return False
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    if kind is list:
        return all(_plain(v, depth + 1) for v in value)
    return kind in _SCALARS


def _path(folder: str, schema_bytes: bytes, tag: str) -> str:
    key = zlib.crc32(tag.encode(), zlib.crc32(schema_bytes))
    return os.path.join(folder, "schemas", f"{key:08x}-{len(schema_bytes)}.bin")


def compile_cached(schema: dict[str, Any]) -> Callable[[Any], bool]:
    """``compile_schema(schema)`` through the cache: for the shipped schemas, compiled once per
    rlio version rather than once per process."""
    from rlio._schema.compiler import generate

    return compiled(schema, generate)


def compiled(schema: dict[str, Any], generate: Generate) -> Callable[[Any], bool]:
    """The predicate of ``schema``: from the cache when a whole, current entry is there, else
    ``generate(schema)``, stored for the next process."""
    schema_bytes = _schema_key(schema)
    if schema_bytes is None:
        return generate(schema).check
    tag = _tag()
    folder = cache_dir()
    if not tag or not folder:
        return generate(schema).check
    path = _path(folder, schema_bytes, tag)
    check = _load(path, schema, schema_bytes, tag, generate)
    if check is not None:
        return check
    made = generate(schema)
    _store(path, schema_bytes, tag, made)
    return made.check


# ------------------------------------------------------------------------------------ reading


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None  # another user's file: code we would run, never trusted
        with os.fdopen(fd, "rb") as f:
            fd = -1
            return f.read()
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def _load(path: str, schema: dict[str, Any], schema_bytes: bytes, tag: str,
          generate: Generate) -> Callable[[Any], bool] | None:
    data = _read(path)
    if data is None or len(data) < _HEAD or not data.startswith(_MAGIC):
        return None
    crc = int.from_bytes(data[len(_MAGIC):len(_MAGIC) + 4], "big")
    size = int.from_bytes(data[len(_MAGIC) + 4:_HEAD], "big")
    payload = data[_HEAD:]
    if len(payload) != size or zlib.crc32(payload) != crc:
        return None  # truncated or corrupt: rebuilt
    try:
        entry = marshal.loads(payload)
        got_tag, got_schema, code, recipe = entry
        if got_tag != tag or got_schema != schema_bytes or type(recipe) is not dict:
            return None  # stale (a checksum collision, a different build): rebuilt
        ns = _namespace(recipe, schema, generate)
        exec(code, ns)
        check = ns["_check"]
    except Exception:  # anything odd in an entry means: compile afresh
        return None
    return check if callable(check) else None


def _namespace(recipe: dict[str, Any], schema: dict[str, Any],
               generate: Generate) -> dict[str, Any]:
    """The bindings of the cached code, rebuilt from the recipe (see the module docstring)."""
    from rlio._schema import compiler
    from rlio._schema.bound import CachedKeyed

    ns = compiler.base_namespace()
    lock = _thread.allocate_lock()
    state = {"real": False}

    def materialize() -> None:
        with lock:
            if not state["real"]:
                real = generate(schema).ns
                ns.update((k, v) for k, v in real.items() if k != "__builtins__")
                state["real"] = True

    for name, (kind, value) in recipe.items():
        if kind == "value":
            ns[name] = value
        elif kind == "types":
            ns[name] = frozenset(_TYPES[t] for t in value)
        elif kind == "regex":
            ns[name] = compiler.matcher(value)
        elif kind == "lazy":
            ns[name] = _Placeholder(ns, name, materialize)
        elif kind == "keyed":
            keyed_recipe, layouts = value
            keyed = CachedKeyed(ns, keyed_recipe, name, materialize)
            ns[name], ns[layouts] = keyed.miss, keyed.layouts
        else:
            raise ValueError(f"unknown recipe kind {kind!r}")
    return ns


class _Placeholder:
    """Stands for a binding rebuilt only by compiling the schema: the first use does that."""

    __slots__ = ("_materialize", "_name", "_ns")

    def __init__(self, ns: dict[str, Any], name: str, materialize: Callable[[], None]) -> None:
        self._ns = ns
        self._name = name
        self._materialize = materialize

    def _real(self) -> Any:
        self._materialize()
        real = self._ns[self._name]
        if real is self:
            raise RuntimeError(f"cached schema binding {self._name} was not rebuilt")
        return real

    def __call__(self, *args: Any) -> Any:
        return self._real()(*args)


# ------------------------------------------------------------------------------------ writing


def _recipe(ns: dict[str, Any], kinds: dict[str, str]) -> dict[str, Any] | None:
    """How to rebuild each binding of the generated code; None when one cannot be kept."""
    out: dict[str, Any] = {}
    for name, kind in kinds.items():
        value = ns[name]
        if kind == "regex":
            out[name] = ("regex", value.pattern)
        elif kind == "types":
            out[name] = ("types", sorted(t.__name__ for t in value))
        elif kind == "lazy":
            out[name] = ("lazy", None)
        elif kind == "keyed":
            keyed = value.__self__
            layouts = [n for n, k in kinds.items() if k == "layouts" and ns[n] is keyed.layouts]
            if len(layouts) != 1:
                return None
            out[name] = ("keyed", (keyed.recipe, layouts[0]))
        elif kind == "layouts":
            continue  # rebuilt with its "keyed" entry
        else:
            try:
                same = marshal.loads(marshal.dumps(value))
            except ValueError:
                return None
            if same != value or type(same) is not type(value):
                return None
            out[name] = ("value", value)
    return out


def _store(path: str, schema_bytes: bytes, tag: str, made: Generated) -> None:
    recipe = _recipe(made.ns, made.kinds)
    if recipe is None:
        return
    try:
        payload = marshal.dumps((tag, schema_bytes, made.code, recipe))
    except ValueError:
        return
    data = (_MAGIC + zlib.crc32(payload).to_bytes(4, "big") + len(payload).to_bytes(8, "big")
            + payload)
    folder = os.path.dirname(path)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.{id(data):x}.tmp")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                fd = -1
                f.write(data)
        finally:
            if fd >= 0:
                os.close(fd)
        os.replace(tmp, path)
    except OSError:  # unwritable or full: this process simply keeps no cache
        with contextlib.suppress(OSError):
            os.unlink(tmp)
