"""How an element's value is shown: with as many significant digits as its
type holds, so two values that differ in their type never print the same.

``VALUE_DIGITS`` is the one home of those digits (``dtypes.DTYPES`` takes
each type's ``digits`` from it); a type not in it, and f64, shows as
Python's ``repr`` (the shortest text that reads back the same double). A
big-endian twin (``f32be``) shows as its little-endian type.
"""

from __future__ import annotations

__all__ = ["VALUE_DIGITS", "format_value", "value_digits"]

#: The ``format`` spec of a float type's values, by canonical dtype name.
VALUE_DIGITS: dict[str, str] = {
    "f16": ".5g",
    "bf16": ".4g",
    "f32": ".9g",
    "f8_e4m3fn": ".4g",
    "f8_e5m2": ".4g",
    "f8_e4m3fnuz": ".4g",
    "f8_e5m2fnuz": ".4g",
}


def value_digits(dtype: str) -> str:
    """The ``format`` spec of a value of ``dtype`` (``""``: ``repr``)."""
    spec = VALUE_DIGITS.get(dtype)
    if spec is None and dtype.endswith("be"):
        spec = VALUE_DIGITS.get(dtype[:-2])
    return spec or ""


def format_value(value: int | float | None, dtype: str) -> str:
    """An element's value as a report shows it (``-``: none; ``nan``)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:
            return "nan"
        spec = value_digits(dtype)
        return format(value, spec) if spec else repr(value)
    return str(value)
