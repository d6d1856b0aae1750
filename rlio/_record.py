"""``FrozenRecord``: the base of rlio's small immutable value classes.

A ``@dataclass`` costs about a millisecond a class when its module is imported (it generates and
compiles its methods), and ``rlio resume`` is a whole process that imports a handful of them on
every start. These classes are written by hand instead: a subclass declares ``__slots__`` and
``_fields`` (the fields compared, hashed and shown, in order) and sets its attributes in
``__init__`` with ``object.__setattr__`` (or ``_set``), exactly what a frozen dataclass's generated
``__init__`` does. Assigning or deleting an attribute afterwards raises
``dataclasses.FrozenInstanceError``, as on a frozen dataclass.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["FrozenRecord", "Record"]


def _frozen(name: str) -> AttributeError:
    from dataclasses import FrozenInstanceError  # the error a frozen dataclass raises

    return FrozenInstanceError(f"cannot assign to field {name!r}")


class FrozenRecord:
    """Equality, hash and repr by ``_fields``; no attribute assignment after ``__init__``."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def _set(self, **values: Any) -> None:
        """Set attributes in ``__init__`` (by name: for classes built a few times a process)."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise _frozen(name)

    def __delattr__(self, name: str) -> None:
        raise _frozen(name)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, FrozenRecord)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __getstate__(self) -> dict[str, Any]:
        """Every slot that is set (and ``__dict__``'s entries): what pickle and copy keep."""
        state = dict(getattr(self, "__dict__", {}))
        for cls in type(self).__mro__:
            for name in cls.__dict__.get("__slots__", ()):
                if name != "__dict__" and hasattr(self, name):
                    state[name] = getattr(self, name)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._set(**state)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"


class Record:
    """A mutable value class: equality and repr by ``_fields``, unhashable (a plain
    ``@dataclass``'s behaviour, without its import-time cost). Subclasses set their attributes in
    ``__init__``; without ``__slots__`` they keep a ``__dict__`` (pickle, ``cached_property``)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        mine = tuple(getattr(self, name) for name in self._fields)
        return mine == tuple(getattr(other, name) for name in self._fields)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({shown})"
