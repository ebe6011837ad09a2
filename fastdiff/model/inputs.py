"""How a declared input is written: ``name`` (at the same step) or
``name@prev`` (at the step before). Roles hold inputs as written
(``results.Role.inputs``); ``split_input`` reads one back, for the schema
parser, the roles stage and a renderer alike."""

from __future__ import annotations

__all__ = ["PREV", "split_input"]

#: The suffix of an input read at the previous step.
PREV = "@prev"


def split_input(name: str) -> tuple[str, bool]:
    """(buffer name, at the previous step?) of an input as written."""
    if name.endswith(PREV) and len(name) > len(PREV):
        return name[: -len(PREV)], True
    return name, False
