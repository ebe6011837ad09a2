"""Stage 4's decision (``stages.digest.decide``) against a naive twin.

The twin looks at the bytes themselves, one byte at a time: a byte of the
common prefix is scanned unless its chunk is whole in both buffers (or the
buffers are of one size) and the chunk's bytes agree; a pair is equal when
its bytes are, and without data on a side it is told apart by size, then by
whether some whole chunk differs. Digests are the real ones
(``stages.hash.chunk_digests``), so the rule is checked with the hashing it
is used with.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fastdiff.model.results import BufferResult, Problem
from fastdiff.model.tolerance import Tolerance
from fastdiff.presets import RL_STATE
from fastdiff.sources.buffers import BufferDigest, BufferRef
from fastdiff.stages.digest import ScanJob, decide, pair_sizes
from fastdiff.stages.hash import chunk_digests
from fastdiff.stages.pair import Pair

EXACT = Tolerance()


def _digest(path: str, data: bytes, cs: int) -> BufferDigest:
    return BufferDigest(path, len(data), cs, chunk_digests((memoryview(data),), cs))


def _pair(
    a: bytes, b: bytes, has_a: bool = True, has_b: bool = True, digest_b: BufferDigest | None = None
) -> Pair:
    ref_a = BufferRef("a/x.bin", 0, "x", len(a), 1, 1, 0, 0, has_data=has_a)
    ref_b = BufferRef("b/x.bin", 0, "x", len(b), 1, 2, 0, 0, has_data=has_b, digest=digest_b)
    return Pair(0, "x", "other", "u8", ref_a, ref_b)


def _runs(positions: list[int]) -> tuple[tuple[int, int], ...]:
    """Consecutive positions as [start, end) ranges."""
    out: list[list[int]] = []
    for i in positions:
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return tuple((s, e) for s, e in out)


def naive(a: bytes, b: bytes, cs: int) -> tuple[tuple[tuple[int, int], ...], bool, int | None]:
    """(the ranges to scan, whether a whole chunk differs, the first such chunk)."""
    common = min(len(a), len(b))
    scanned: list[int] = []
    first: int | None = None
    for i in range(common):
        k = i // cs
        lo, hi = k * cs, (k + 1) * cs
        whole = (hi <= len(a) and hi <= len(b)) or len(a) == len(b)
        if whole and a[lo:hi] == b[lo:hi]:
            continue
        if whole and first is None:
            first = k
        scanned.append(i)
    return _runs(scanned), first is not None, first


#: Two buffers: one of random bytes, the other a copy with some bytes
#: flipped, then cut short or grown.
buffers = st.binary(max_size=40).flatmap(
    lambda a: st.tuples(
        st.just(a),
        st.lists(st.integers(0, max(len(a) - 1, 0)), max_size=3),
        st.integers(0, len(a)),
        st.binary(max_size=6),
        st.booleans(),
    )
)


def _other(a: bytes, flips: list[int], keep: int, extra: bytes, grow: bool) -> bytes:
    b = bytearray(a)
    for i in flips:
        if i < len(b):
            b[i] ^= 0x5A
    return bytes(b) + extra if grow else bytes(b[:keep])


@settings(max_examples=400, deadline=None)
@given(buffers, st.integers(1, 9))
def test_decide_with_data_matches_the_naive_twin(case, cs: int) -> None:
    a, flips, keep, extra, grow = case
    b = _other(a, flips, keep, extra, grow)
    p = _pair(a, b)
    decided, problems = decide(p, _digest("a", a, cs), _digest("b", b, cs), EXACT, RL_STATE)
    ranges, mismatched, _ = naive(a, b, cs)
    assert problems == ()
    if a == b:
        assert isinstance(decided, BufferResult) and decided.status == "equal"
        return
    if ranges:
        assert isinstance(decided, ScanJob)
        assert decided.ranges == ranges
        assert decided.must_differ == mismatched
        # Sound: every byte of the common prefix that differs is scanned.
        differ = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
        assert all(any(s <= i < e for s, e in decided.ranges) for i in differ)
        return
    assert isinstance(decided, BufferResult)
    assert decided.status == "length_mismatch"  # one-byte elements: sizes differ
    assert (decided.n_elements_a, decided.n_elements_b) == (len(a), len(b))


@settings(max_examples=400, deadline=None)
@given(buffers, st.integers(1, 9), st.booleans())
def test_decide_without_data_on_a_side_matches_the_naive_twin(
    case, cs: int, manifest: bool
) -> None:
    a, flips, keep, extra, grow = case
    b = _other(a, flips, keep, extra, grow)
    db = _digest("b", b, cs)
    p = _pair(a, b, has_b=False, digest_b=db)
    decided, problems = decide(p, _digest("a", a, cs), db, EXACT, RL_STATE, (False, manifest))
    _, mismatched, first = naive(a, b, cs)
    assert problems == ()
    assert isinstance(decided, BufferResult)
    expected = (
        "equal"
        if a == b
        else "length_mismatch"
        if len(a) != len(b)
        else "diverged"
        if mismatched
        else "equal"
    )
    assert decided.status == expected
    if mismatched and a != b:
        assert first is not None
        lo = first * cs
        assert decided.first_divergent_chunk == (lo, min(lo + cs, len(a), len(b)))
    assert decided.message is not None and "digests only" in decided.message
    assert ("recorded" in decided.message) == (not manifest)


def test_decide_under_a_tolerance_without_data_is_undecided_for_floats_only() -> None:
    a, b = bytes(8), bytes([0, 0, 0, 0, 1, 0, 0, 0])
    tol = Tolerance(atol=1.0)
    for dtype, status, kinds in (("f4", "error", ["undecided"]), ("u4", "diverged", [])):
        db = _digest("b", b, 4)
        p = _pair(a, b, has_b=False, digest_b=db)
        p = Pair(0, "x", "other", dtype, p.a, p.b)
        decided, problems = decide(p, _digest("a", a, 4), db, tol, RL_STATE, (False, True))
        assert isinstance(decided, BufferResult)
        assert decided.status == status
        assert [e.kind for e in problems] == kinds


def test_decide_reports_hashing_problems_and_chunk_size_mismatches() -> None:
    a = bytes(8)
    p = _pair(a, a)
    bad = Problem("b/x.bin", "truncated", kind="malformed")
    decided, problems = decide(p, _digest("a", a, 4), bad, EXACT, RL_STATE)
    assert isinstance(decided, BufferResult) and decided.status == "malformed"
    assert problems == (bad,)
    decided, problems = decide(p, _digest("a", a, 4), _digest("b", a, 2), EXACT, RL_STATE)
    assert isinstance(decided, BufferResult) and decided.status == "error"
    assert [e.kind for e in problems] == ["mismatch"]


def test_a_side_known_only_by_digests_sets_the_other_sides_chunk_size() -> None:
    a = bytes(8)
    p = _pair(a, a, has_b=False, digest_b=_digest("b", a, 2))
    assert pair_sizes(p, 4, 4) == (2, 4)
    assert pair_sizes(_pair(a, a), 4, 8) == (4, 8)
