"""Stage 4's decision: what chunk digests decide about a pair.

Two buffers of equal size whose chunk digests all agree are equal; where
digests disagree, only the byte ranges of those chunks (and the chunk where
the shorter buffer ends) are handed to the kernel (``ScanJob``). Where a
side holds no data (a manifest, or a buffer a recorder wrote as digests
only), a differing pair is reported with its first differing chunk instead.
"""

from __future__ import annotations

from ..dtypes import get_dtype
from ..model.results import COUNT_FIELDS, BufferResult
from ..model.value import Value
from ..options import tolerance_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..kernels import Tolerance
    from ..sources.buffers import BufferDigest
    from .pair import Pair


class ScanJob(Value):
    """One pair and the byte ranges of its common prefix to scan.

    ``must_differ``: some chunk's digests disagreed, so the scan must find a
    difference. ``tolerance``: the one this buffer is compared with, where
    it is not the comparison's (``Tolerance.for_buffer``: an integer buffer
    stays exact); None: the comparison's.
    """

    __slots__ = ("must_differ", "pair", "ranges", "tolerance")

    def __init__(
        self,
        pair: Pair,
        ranges: tuple[tuple[int, int], ...],
        must_differ: bool = True,
        tolerance: Tolerance | None = None,
    ) -> None:
        self.pair = pair
        self.ranges = ranges
        self.must_differ = must_differ
        self.tolerance = tolerance

    @property
    def n_bytes(self) -> int:
        return sum(e - s for s, e in self.ranges)


def add_range(ranges: list[list[int]], start: int, end: int) -> None:
    """Append the byte range [start, end) to ``ranges`` (ascending), merged
    with the last one when they touch."""
    if ranges and ranges[-1][1] == start:
        ranges[-1][1] = end
    else:
        ranges.append([start, end])


def differing_ranges(a: BufferDigest, b: BufferDigest) -> tuple[tuple[tuple[int, int], ...], bool]:
    """Byte ranges of the common prefix to scan, merged, and whether any
    chunk's digests disagreed.

    A chunk that is whole in both files is compared by digest; the chunk
    where the shorter file ends is always scanned (its digests cover
    different lengths), which alone does not mean anything differs.
    """
    common = min(a.size, b.size)
    cs = a.chunk_size
    ranges: list[list[int]] = []
    mismatched = False
    for k in range((common + cs - 1) // cs):
        start, end = k * cs, min((k + 1) * cs, common)
        whole = end - start == cs or a.size == b.size
        if whole:
            if a.chunks[k] == b.chunks[k]:
                continue
            mismatched = True
        add_range(ranges, start, end)
    return tuple((s, e) for s, e in ranges), mismatched


#: Every count of a buffer whose compared elements all agree.
_ZEROS = dict.fromkeys(COUNT_FIELDS, 0)
_DIGESTS_ONLY = "compared by digests only (a manifest holds no data)"
#: The message of a pair a side of which a recorder wrote as digests only.
RECORDED_DIGESTS_ONLY = "compared by digests only (recorded without data)"


def by_digest(
    p: Pair, da: BufferDigest, db: BufferDigest, data: bool, no_data: str = _DIGESTS_ONLY
) -> BufferResult | ScanJob:
    """Decide a pair from its chunk digests; a ScanJob when only a scan can tell.

    ``data``: both files can be read. Without data (a manifest on one side,
    or a buffer a recorder wrote as digests only) a differing pair is
    reported with its first differing chunk instead; ``no_data``: the
    message such a result carries.
    """
    assert p.a is not None and p.b is not None
    itemsize = get_dtype(p.dtype).itemsize
    n_a, n_b = p.a.size // itemsize, p.b.size // itemsize
    if da.chunk_size != db.chunk_size:
        return p.result(
            "error",
            n_elements_a=n_a,
            n_elements_b=n_b,
            message=f"digests of different chunk sizes ({da.chunk_size} and {db.chunk_size}) "
            "cannot be compared; hash both with the same --chunk-size",
        )
    if da.size == db.size and da.chunks == db.chunks:  # the usual case: equal
        if data:
            return p.result("equal", n_elements_a=n_a, n_elements_b=n_b, **_ZEROS)
        return p.result("equal", n_elements_a=n_a, n_elements_b=n_b, message=no_data, **_ZEROS)
    ranges, mismatched = differing_ranges(da, db)
    if ranges and data:
        return ScanJob(p, ranges, mismatched)
    status = "length_mismatch" if n_a != n_b else "diverged" if mismatched else "equal"
    fields: dict[str, object] = {"n_elements_a": n_a, "n_elements_b": n_b}
    if not ranges:
        # Digests decided the whole common prefix equal: every count is 0,
        # wherever the shorter file ends relative to the chunks.
        fields.update(_ZEROS)
    if mismatched:
        start = next(s for s, _ in ranges)
        k = start // da.chunk_size
        while da.chunks[k] == db.chunks[k]:
            k += 1
        lo = k * da.chunk_size
        fields["first_divergent_chunk"] = (lo, min(lo + da.chunk_size, min(da.size, db.size)))
    if not data:
        fields["message"] = no_data
    return p.result(status, **fields)  # type: ignore[arg-type]


def tolerance_undecided(
    p: Pair, b: BufferResult, tol: Tolerance, recorded: bool = False
) -> BufferResult:
    """A pair whose digests differ, one side without data (a manifest, or,
    ``recorded``, a buffer a recorder wrote as digests only), under a
    tolerance: an error that says its bits differ and why the tolerance is
    not judged (digests cannot tell within from beyond)."""
    assert p.a is not None and p.b is not None
    sides = [label for label, ref in (("A", p.a), ("B", p.b)) if not ref.has_data]
    chunk = b.first_divergent_chunk
    where = f" (first in bytes {chunk[0]}..{chunk[1]})" if chunk else ""
    if recorded:
        which = (
            "both runs recorded" if len(sides) == 2 else f"run {sides[0]} recorded"
        ) + f" digests only at step {p.step}"
        fix = f"record step {p.step} in full (Recorder(..., data={{{p.step}}})) to apply it"
    else:
        which = "both runs are manifests" if len(sides) == 2 else f"run {sides[0]} is a manifest"
        which += ", which holds digests, not values"
        fix = "compare the run folders themselves to apply the tolerance"
    message = (
        f"its bits differ{where}, but whether within the tolerance ({tolerance_options(tol)}) "
        f"is not known: {which}; {fix}"
    )
    return BufferResult(
        b.step, b.name, b.group, b.dtype, "error", b.n_elements_a, b.n_elements_b,
        b.path_a, b.path_b, message, b.facts,
    )  # fmt: skip
