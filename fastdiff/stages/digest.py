"""Stage 4's decision: what chunk digests decide about a pair.

Two buffers of equal size whose chunk digests all agree are equal; where
digests disagree, only the byte ranges of those chunks (and the chunk where
the shorter buffer ends) are handed to the kernel (``ScanJob``). Where a
side holds no data (a manifest, or a buffer a recorder wrote as digests
only), a differing pair is reported with its first differing chunk instead.

``pair_sizes`` says at which chunk size each side of a pair is hashed;
``decide`` is the whole rule for one pair once both digests are in (or the
problems hashing met), the comparison's tolerance made the buffer's own.
Pure functions over values: the scheduler (``engine.scheduler``) calls them.
"""

from __future__ import annotations

from ..dtypes import get_dtype
from ..model.results import COUNT_FIELDS, BufferResult, Problem
from ..model.value import Value
from ..options import tolerance_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..kernels import Tolerance
    from ..schema import Schema
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


def pair_sizes(p: Pair, cs_a: int, cs_b: int) -> tuple[int, int]:
    """The chunk sizes a pair's sides are compared at: each side's own
    (``cs_a``, ``cs_b``), but a side with data beside one without (a
    manifest's entry, a dump a recorder logged as digests only), whose
    digests cannot be made again, is hashed at the chunk size of those
    digests: so either order of two runs gives the same answer."""
    a, b = p.a, p.b
    assert a is not None and b is not None
    if not b.has_data and b.digest is not None and a.has_data:
        cs_a = b.digest.chunk_size
    if not a.has_data and a.digest is not None and b.has_data:
        cs_b = a.digest.chunk_size
    return cs_a, cs_b


def decide(
    p: Pair,
    da: BufferDigest | Problem,
    db: BufferDigest | Problem,
    tolerance: Tolerance,
    schema: Schema,
    manifests: tuple[bool, bool] = (False, False),
) -> tuple[BufferResult | ScanJob, tuple[Problem, ...]]:
    """What a pair's digests (``da``, ``db``; or the problem hashing met)
    decide, and the problems that go into the report beside it: a result, or
    a ``ScanJob`` (with the buffer's own tolerance, where it is not
    ``tolerance``) when only a scan can tell. ``manifests``: whether run A,
    run B is a manifest (a side without data that is not one is a buffer a
    recorder wrote as digests only). Integer buffers stay exact under a
    tolerance unless the schema asks (``Tolerance.for_buffer``); a pair that
    digests alone say differs, a side without data, is undecided under a
    tolerance: an error (``tolerance_undecided``)."""
    assert p.a is not None and p.b is not None
    if isinstance(da, Problem) or isinstance(db, Problem):
        bad = [d for d in (da, db) if isinstance(d, Problem)]
        status = "malformed" if bad[0].kind == "malformed" else "error"
        return p.result(status, message=bad[0].message), tuple(bad)
    data = p.a.has_data and p.b.has_data
    recorded = not data and not manifests[0 if not p.a.has_data else 1]
    if recorded:
        decided = by_digest(p, da, db, data, RECORDED_DIGESTS_ONLY)
    else:
        decided = by_digest(p, da, db, data)
    tol = tolerance
    if not tol.exact:  # integer buffers stay exact, unless asked
        tol = tol.for_buffer(get_dtype(p.dtype).kind, schema.int_tolerant(p.name))
    if not isinstance(decided, BufferResult):
        if tol is not tolerance:
            decided = decided.replace(tolerance=tol)
        return decided, ()
    if decided.status == "error" and decided.message:
        return decided, (Problem(p.a.path, decided.message, kind="mismatch"),)
    if decided.status == "diverged" and not data and not tol.exact:
        # Digests say only that bits differ, not whether within tolerance.
        decided = tolerance_undecided(p, decided, tol, recorded)
        local = p.a if p.a.has_data else p.b
        return decided, (Problem(local.path, decided.message or "", kind="undecided"),)
    return decided, ()
