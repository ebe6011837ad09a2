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
    from ..sources.buffers import BufferRef
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
    if dtype in VALUE_KINDS:  # a value beside the tensors: its bytes are its own
        return None
    itemsize = get_dtype(dtype).itemsize
    if size % itemsize:
        return malformed_message(size, itemsize, dtype, compared)
    if layout is None:
        return None
    return layout.misfit_message(size, itemsize, dtype, compared)


#: The dtypes of values beside the tensors (``sources.buffers.Value``):
#: their own values decide them here, nothing is hashed.
VALUE_KINDS = frozenset({"value", "label"})


def _held(ref: BufferRef | None) -> tuple[bytes | None, object]:
    """(bytes, plain value) a value's buffer holds; (None, None) for none
    (a manifest's entry: its digest alone)."""
    codec = None if ref is None else ref.codec
    if codec is None or not hasattr(codec, "value"):
        return None, None
    return codec.data, codec.value  # type: ignore[attr-defined]


def _same_value(a: BufferRef, b: BufferRef, da: bytes | None, db: bytes | None) -> bool:
    """Whether two values are the same: their bytes, or, where a side holds
    a digest alone (a manifest's), the other's bytes hashed alike."""
    if da is not None and db is not None:
        return da == db
    if a.digest is not None and b.digest is not None:
        return a.digest.size == b.digest.size and a.digest.chunks == b.digest.chunks
    known, data = (a, db) if da is None else (b, da)
    if known.digest is None or data is None:
        return False
    from .hash import chunk_digests

    chunks = chunk_digests([memoryview(data)], known.digest.chunk_size)
    return known.digest.size == len(data) and known.digest.chunks == chunks


def value_result(p: Pair) -> BufferResult:
    """A value's result from the two values: ``equal`` when their types and
    values are; else ``diverged`` for a value (a number, a boolean, None:
    state), ``label_differs`` for a label (a string, bytes: never a
    divergence); in one run only, as for any buffer. Both values are the
    result's facts ``a`` and ``b`` (None for a run without it)."""
    (da, va), (db, vb) = _held(p.a), _held(p.b)
    values = {"a": va, "b": vb}
    if p.a is None:
        return p.result("only_in_b", n_elements_b=1, **values)
    if p.b is None:
        return p.result("only_in_a", n_elements_a=1, **values)
    if _same_value(p.a, p.b, da, db):
        zeros = dict.fromkeys(COUNT_FIELDS, 0)
        return p.result("equal", n_elements_a=1, n_elements_b=1, **values, **zeros)
    status = "diverged" if p.dtype == "value" else "label_differs"
    counts = dict.fromkeys(COUNT_FIELDS, 0)
    counts["n_diff"] = 1
    return p.result(status, n_elements_a=1, n_elements_b=1, first_index=0, **values, **counts)


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
        if p.dtype in VALUE_KINDS:
            decided.append(value_result(p))
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
