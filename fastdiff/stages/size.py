"""Stage 3: decide what the file sizes alone decide.

A buffer present in one run only, a size that is not a whole number of
elements or does not fit the shape the schema declares, or two empty files
need no reading. Everything else goes on to hashing: equal sizes, and
unequal sizes, whose common prefix is still compared (a length mismatch is
reported with both lengths).
"""

from __future__ import annotations

from ..dtypes import get_dtype
from ..model.results import COUNT_FIELDS, BufferResult, Problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..schema import Layout
    from .pair import Pair


#: What a malformed buffer's message says in a comparison (``stats`` and
#: ``hash`` compare nothing, and leave it out).
NOT_COMPARED = "; nothing was compared for this buffer"


def malformed_message(size: int, itemsize: int, dtype: str, compared: bool = True) -> str:
    return (
        f"size {size} {'byte' if size == 1 else 'bytes'} is not a whole number of "
        f"{itemsize}-byte {dtype} elements"
        f"{NOT_COMPARED if compared else ''} (truncated dump, or wrong dtype in the schema?)"
    )


def size_problem(
    size: int, dtype: str, layout: Layout | None = None, compared: bool = True
) -> str | None:
    """Why a file of ``size`` bytes is malformed as ``dtype`` (and the
    schema's ``layout``), as the size stage says it; None if it is not.
    ``compared``: the message says that nothing was compared for it."""
    itemsize = get_dtype(dtype).itemsize
    if size % itemsize:
        return malformed_message(size, itemsize, dtype, compared)
    if layout is None:
        return None
    return layout.misfit_message(size, itemsize, dtype, compared)


def size_stage(
    pairs: tuple[Pair, ...],
) -> tuple[list[BufferResult], list[Problem], list[Pair]]:
    """(results decided by size, their errors, pairs that need hashing)."""
    decided: list[BufferResult] = []
    problems: list[Problem] = []
    to_hash: list[Pair] = []
    itemsizes: dict[str, int] = {}
    for p in pairs:
        if p.problem is not None:  # reported by discovery already
            decided.append(p.result("error", message=p.problem))
            continue
        if p.differs is not None:  # the headers disagree: they differ, whatever the bytes
            decided.append(p.result("diverged", change=p.differs))
            continue
        itemsize = itemsizes.get(p.dtype)
        if itemsize is None:
            itemsize = itemsizes[p.dtype] = get_dtype(p.dtype).itemsize
        a, b, layout = p.a, p.b, p.layout
        if (
            layout is None
            and a is not None
            and b is not None
            and a.size == b.size
            and a.size % itemsize == 0
        ):
            if a.size:
                to_hash.append(p)  # the usual case
            else:
                zeros = dict.fromkeys(COUNT_FIELDS, 0)
                decided.append(p.result("equal", n_elements_a=0, n_elements_b=0, **zeros))
            continue
        bad = [f for f in (a, b) if f is not None and f.size % itemsize]
        messages = [malformed_message(f.size, itemsize, p.dtype) for f in bad]
        if not bad and layout is not None:  # a size that does not fit the schema's shape
            found = [layout.misfit_message(f.size, itemsize, p.dtype) if f else None
                     for f in (a, b)]  # fmt: skip
            bad = [f for f, m in zip((a, b), found, strict=True) if f is not None and m]
            messages = [m for m in found if m]
        if bad:
            problems += [
                Problem(f.path, m, kind="malformed") for f, m in zip(bad, messages, strict=True)
            ]
            size_a, size_b = (None if f is None else f.size for f in (a, b))
            decided.append(p.result("malformed", message=messages[0], size_a=size_a, size_b=size_b))
            continue
        if a is None:
            assert b is not None
            decided.append(p.result("only_in_b", n_elements_b=b.size // itemsize))
        elif b is None:
            decided.append(p.result("only_in_a", n_elements_a=a.size // itemsize))
        elif a.size == 0 and b.size == 0:  # shaped buffers that are empty in both runs
            zeros = dict.fromkeys(COUNT_FIELDS, 0)
            decided.append(p.result("equal", n_elements_a=0, n_elements_b=0, **zeros))
        else:
            to_hash.append(p)  # unequal sizes: the common prefix is compared
    return decided, problems, to_hash
