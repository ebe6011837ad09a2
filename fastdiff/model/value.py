"""``Value``: the base of fastdiff's immutable value classes.

A value is a ``__slots__`` class whose attributes its ``__init__`` sets once
and nothing sets again (the result types, ``results``; named so that no
reader mistakes it for the recorder, ``recorder.Recorder``, which writes
runs). ``Value`` gives it equality, a hash and a repr over
its fields (``_fields``: by default the parameters of its ``__init__``, in
order, each stored as the attribute of that name) and ``replace``, a copy
with some fields changed, as ``dataclasses.replace`` would make. It costs
nothing at import (no ``dataclasses``, no ``typing``), and a value takes less
memory than an object with a ``__dict__``.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Self


class Value:
    __slots__ = ()
    #: The fields that make the value, in constructor order (keyword names).
    _fields: tuple[str, ...] = ()

    def __init_subclass__(cls) -> None:
        if "_fields" not in cls.__dict__:
            code = cls.__init__.__code__
            cls._fields = code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, k) for k in self._fields])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({inner})"

    def as_dict(self) -> dict[str, Any]:
        """The fields as plain data: a dict, nested records as dicts too (in
        tuples and dicts as well), so ``json.dumps`` takes it."""
        return {k: plain(getattr(self, k)) for k in self._fields}

    def replace(self, **changes: Any) -> Self:
        """A copy with the given fields changed."""
        return type(self)(**{**{k: getattr(self, k) for k in self._fields}, **changes})


def plain(value: Any) -> Any:
    """``value`` with every record in it as a dict (``Value.as_dict``)."""
    if isinstance(value, Value):
        return value.as_dict()
    if isinstance(value, tuple | list):
        if any(isinstance(v, Value | tuple | list | dict) for v in value):
            return type(value)(map(plain, value))
        return value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value
