"""Stage 3: decide what the file sizes alone decide.

A buffer present in one run only, a size that is not a whole number of
elements or does not fit the shape the schema declares, or two empty files
need no reading. Everything else goes on to hashing: equal sizes, and
unequal sizes, whose common prefix is still compared (a length mismatch is
reported with both lengths).
"""

from __future__ import annotations

from ..dtypes import get_dtype
from ..results import COUNT_FIELDS, BufferResult, Problem
from .pair import Pair


def malformed_message(size: int, itemsize: int, dtype: str) -> str:
    return (
        f"size {size} bytes is not a whole number of {itemsize}-byte {dtype} elements; "
        "nothing was compared for this buffer (truncated dump, or wrong dtype in the schema?)"
    )


def size_stage(
    pairs: tuple[Pair, ...],
) -> tuple[list[BufferResult], list[Problem], list[Pair]]:
    """(results decided by size, their errors, pairs that need hashing)."""
    decided: list[BufferResult] = []
    problems: list[Problem] = []
    to_hash: list[Pair] = []
    for p in pairs:
        if p.problem is not None:  # reported by discovery already
            decided.append(p.result("error", message=p.problem))
            continue
        itemsize = get_dtype(p.dtype).itemsize
        bad = [f for f in (p.a, p.b) if f is not None and f.size % itemsize]
        messages = [malformed_message(f.size, itemsize, p.dtype) for f in bad]
        if not bad and p.layout is not None:  # a size that does not fit the schema's shape
            found = [p.layout.misfit_message(f.size, itemsize, p.dtype) if f else None
                     for f in (p.a, p.b)]  # fmt: skip
            bad = [f for f, m in zip((p.a, p.b), found, strict=True) if f is not None and m]
            messages = [m for m in found if m]
        if bad:
            problems += [Problem(f.path, m) for f, m in zip(bad, messages, strict=True)]
            decided.append(p.result("malformed", message=messages[0]))
            continue
        n_a = p.a.size // itemsize if p.a else None
        n_b = p.b.size // itemsize if p.b else None
        if p.a is None:
            decided.append(p.result("only_in_b", n_elements_b=n_b))
        elif p.b is None:
            decided.append(p.result("only_in_a", n_elements_a=n_a))
        elif p.a.size == 0 and p.b.size == 0:
            zeros = dict.fromkeys(COUNT_FIELDS, 0)
            decided.append(p.result("equal", n_elements_a=0, n_elements_b=0, **zeros))
        else:
            to_hash.append(p)
    return decided, problems, to_hash
