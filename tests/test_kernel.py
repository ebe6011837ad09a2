"""scan_bytes (every engine) against the naive twin in tests/naive.py.

Property tests draw arrays of every dtype with special values and random
differences, plus tolerance variants, and compare the whole ScanStats with
the naive twin; anchor tests pin the tricky cases by hand; integer tolerance
tests check the exact atol/rtol decision at the 64-bit extremes; chunk tests
check that scanning in pieces and combining with ``shifted``/``merged``
equals one whole scan.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import (
    BIG_ENDIAN,
    DTYPES,
    FLOATS,
    FP8_SPEC,
    INTS,
    fp8_finite_values,
    fp8_value,
    itemsize,
    kind,
    little_endian,
    naive_scan,
)

from fastdiff.kernels import ENGINES, EXACT, ScanStats, Tolerance, scan_bytes

ALL_DTYPES = list(DTYPES)
#: The property tests' dtypes: each big-endian type is checked against its
#: little-endian twin, and against the naive twin with fewer examples
#: (``test_big_endian_matches_naive``), to keep the suite's time.
LITTLE_DTYPES = [d for d in DTYPES if d not in BIG_ENDIAN]
FNUZ = ("f8_e4m3fnuz", "f8_e5m2fnuz")

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --------------------------------------------------------------------------
# Bit patterns
# --------------------------------------------------------------------------

# (exponent bits, mantissa bits) of each float format
FLOAT_LAYOUT = {
    "f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52),
    **{name: (spec["e"], spec["m"]) for name, spec in FP8_SPEC.items()},
}  # fmt: skip

#: The float formats with infinities, with NaN payloads (more than one NaN of
#: a sign), and with -0.0; the others follow their own definitions (naive.FP8_SPEC).
WITH_INF = tuple(d for d in FLOATS if little_endian(d) not in ("f8_e4m3fn", *FNUZ))
WITH_PAYLOADS = WITH_INF
WITH_NEG_ZERO = tuple(d for d in FLOATS if d not in FNUZ)


def nbits(dtype: str) -> int:
    return 8 * itemsize(dtype)


def float_bits(dtype: str) -> dict[str, int]:
    """Named special bit patterns of a float format (positive sign, but for
    the one NaN of the FNUZ formats, 0x80): those the format has."""
    base = little_endian(dtype)
    e, m = FLOAT_LAYOUT[base]
    exp_mask = ((1 << e) - 1) << m
    mant_mask = (1 << m) - 1
    bias = FP8_SPEC[base]["bias"] if base in FP8_SPEC else (1 << (e - 1)) - 1
    finite = {
        "zero": 0,
        "min_denormal": 1,
        "max_denormal": mant_mask,
        "min_normal": 1 << m,
        "max_finite": (exp_mask - (1 << m)) | mant_mask,
        "one": bias << m,
        "two": (bias + 1) << m,
    }
    if base == "f8_e4m3fn":  # no infinity: the all-ones exponent holds numbers but one
        return {**finite, "qnan": 0x7F, "nan_all_ones": 0x7F, "max_finite": 0x7E}
    if base in FNUZ:  # no infinity, no -0.0, one NaN
        return {**finite, "qnan": 0x80, "max_finite": 0x7F}
    return {
        **finite,
        "inf": exp_mask,
        "qnan": exp_mask | (1 << (m - 1)),
        "qnan_payload": exp_mask | (1 << (m - 1)) | 1,
        "nan_all_ones": exp_mask | mant_mask,
        "snan": exp_mask | 1,
        "snan_payload": exp_mask | (1 << (m - 2)),
    }


def specials(dtype: str) -> list[int]:
    """Special element bit patterns of a dtype, both signs for floats."""
    w = nbits(dtype)
    if kind(dtype) == "float":
        sign = 1 << (w - 1)
        pos = list(float_bits(dtype).values())
        return pos + [p | sign for p in pos]
    top = (1 << w) - 1
    half = 1 << (w - 1)
    return [0, 1, 2, top, top - 1, half, half - 1, half + 1, half - 2, 0x7F, 0x80]


@functools.cache
def fp8_patterns(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The finite values of an 8-bit float format in increasing order, and
    the bit pattern of each (+0.0 for zero)."""
    finite = np.array(fp8_finite_values(dtype))
    pattern = {fp8_value(dtype, u): u for u in range(256) if u != 0x80}  # 0x80: -0.0 or NaN
    return finite, np.array([pattern[float(v)] for v in finite], dtype=np.uint8)


def fp8_bits(dtype: str, values: np.ndarray) -> np.ndarray:
    """The bit patterns of the 8-bit floats nearest to ``values`` (finite:
    beyond the largest, the largest), found in the format's table of values."""
    finite, patterns = fp8_patterns(dtype)
    pos = np.searchsorted(finite, values).clip(1, finite.size - 1)
    lower = np.abs(values - finite[pos - 1]) <= np.abs(finite[pos] - values)
    return np.where(lower, patterns[pos - 1], patterns[pos])


def to_bits(dtype: str, values) -> np.ndarray:
    """Float values (or ints) -> unsigned bit patterns of the dtype."""
    values = np.asarray(values, dtype=np.float64)
    dtype = little_endian(dtype)  # the same patterns, whatever the byte order
    if dtype in FP8_SPEC:
        return fp8_bits(dtype, values)
    if dtype == "f16":
        return values.astype(np.float16).view(np.uint16)
    if dtype == "bf16":
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if dtype == "f32":
        return values.astype(np.float32).view(np.uint32)
    if dtype == "f64":
        return values.view(np.uint64)
    mask = (1 << nbits(dtype)) - 1
    return np.array([int(v) & mask for v in values], dtype=f"<u{itemsize(dtype)}")


def order(dtype: str) -> str:
    return ">" if dtype in BIG_ENDIAN else "<"


def pack(dtype: str, bits) -> bytes:
    """Unsigned bit patterns -> raw bytes in the dtype's byte order."""
    return np.array([int(x) for x in bits], dtype=f"{order(dtype)}u{itemsize(dtype)}").tobytes()


def enc(dtype: str, *values) -> bytes:
    """Raw bytes of the given values (floats or ints) in ``dtype``."""
    if kind(dtype) == "float":
        return pack(dtype, to_bits(dtype, list(values)))
    return pack(dtype, [v & ((1 << nbits(dtype)) - 1) for v in values])


def sp(dtype: str, name: str, negative: bool = False) -> int:
    """One named float special as a bit pattern."""
    bits = float_bits(dtype)[name]
    return bits | (1 << (nbits(dtype) - 1)) if negative else bits


# --------------------------------------------------------------------------
# Comparing results
# --------------------------------------------------------------------------


def naive(a, b, dtype: str, tol: Tolerance = EXACT) -> dict:
    return naive_scan(a, b, dtype, tol.atol, tol.rtol, tol.ulp, tol.nan_equal)


def check_types(got: ScanStats, dtype: str) -> None:
    for field in (
        "n_diff",
        "n_within_tolerance",
        "first_diff",
        "first_any",
        "max_abs_delta_index",
        "n_nan_mismatch",
        "n_inf_mismatch",
    ):
        value = getattr(got, field)
        assert isinstance(value, int) and not isinstance(value, bool), (field, type(value))
    if got.max_abs_delta is not None:
        if kind(dtype) == "float":
            assert isinstance(got.max_abs_delta, float), type(got.max_abs_delta)
        else:
            assert isinstance(got.max_abs_delta, int), type(got.max_abs_delta)
            assert not isinstance(got.max_abs_delta, bool)


def assert_matches(got: ScanStats, want: dict, dtype: str) -> None:
    """Whole-ScanStats equality (floats by exact value, inf == inf)."""
    assert isinstance(got, ScanStats)
    got_d = got.as_dict()
    assert got_d == want, f"\n engine: {got_d}\n  naive: {want}"
    check_types(got, dtype)


#: The facts the anchor tests below state by hand; every other fact of a scan
#: is checked against the naive twin (``scan_and_check``) and by the anatomy
#: anchors further down.
CORE = (
    "n_diff", "n_within_tolerance", "first_diff", "first_any", "max_abs_delta",
    "max_abs_delta_index", "n_nan_mismatch", "n_inf_mismatch",
)  # fmt: skip


def core(stats: ScanStats) -> dict:
    return {k: getattr(stats, k) for k in CORE}


def core_of(**facts) -> dict:
    return core(ScanStats(**facts))


def scan_and_check(a, b, dtype: str, tol: Tolerance, engine: str) -> ScanStats:
    got = scan_bytes(a, b, dtype, tol, engine=engine)
    assert_matches(got, naive(a, b, dtype, tol), dtype)
    return got


# --------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------

MUTATIONS = ("flip", "special", "random", "nudge", "ordinary")


def base_array(dtype: str, n: int, mode: str, rng: np.random.Generator) -> np.ndarray:
    """An array of n unsigned bit patterns."""
    u = np.dtype(f"<u{itemsize(dtype)}")
    if mode == "bits":
        return rng.integers(0, np.iinfo(u).max, size=n, endpoint=True, dtype=u)
    if mode == "zeros":
        return np.zeros(n, dtype=u)
    # "ordinary": modest values around zero
    if kind(dtype) == "float":
        scale = float(rng.choice([1.0, 10.0, 1000.0]))
        return to_bits(dtype, rng.normal(0.0, scale, size=n)).astype(u)
    return to_bits(dtype, rng.integers(-60, 60, size=n)).astype(u)


def ordinary_value(dtype: str, param: int) -> int:
    """A modest value chosen by param, as bits."""
    value = (param % 4001 - 2000) / 8 if kind(dtype) == "float" else param % 241 - 120
    return int(to_bits(dtype, [value])[0])


def mutate(dtype: str, old: int, op: str, param: int) -> int:
    w = nbits(dtype)
    mask = (1 << w) - 1
    if op == "flip":
        return old ^ (1 << (param % w))
    if op == "special":
        table = specials(dtype)
        return table[param % len(table)]
    if op == "random":
        return param & mask
    if op == "nudge":  # a few ulp (or units) away, wrapping
        return (old + param % 9 - 4) & mask
    return ordinary_value(dtype, param)


@st.composite
def buffer_pairs(draw, dtype: str, max_len: int = 300):
    """Two raw buffers of the same length: a, and a mutated copy b."""
    n = draw(st.integers(0, max_len))
    seed = draw(st.integers(0, 2**32 - 1))
    mode = draw(st.sampled_from(["bits", "ordinary", "zeros"]))
    rng = np.random.default_rng(seed)
    a = [int(x) for x in base_array(dtype, n, mode, rng)]
    if n:
        table = specials(dtype)
        for pos, which in draw(
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, len(table) - 1)), max_size=12)
        ):
            a[pos] = table[which]
    b = list(a)
    if n:
        # many differences at once (exercises the vectorised paths) ...
        density = draw(st.sampled_from([0.0, 0.05, 0.5, 1.0]))
        if density:
            ops = rng.choice(MUTATIONS, size=n)
            params = rng.integers(0, 2**63, size=n)
            hits = rng.random(n) < density
            for i in np.flatnonzero(hits):
                b[i] = mutate(dtype, a[i], str(ops[i]), int(params[i]))
        # ... and a few chosen ones that shrink well
        for pos, op, param in draw(
            st.lists(
                st.tuples(
                    st.integers(0, n - 1), st.sampled_from(MUTATIONS), st.integers(0, 2**64 - 1)
                ),
                max_size=12,
            )
        ):
            b[pos] = mutate(dtype, b[pos], op, param)
    if draw(st.booleans()):
        a, b = b, a
    return pack(dtype, a), pack(dtype, b)


tolerances = st.builds(
    Tolerance,
    atol=st.sampled_from([None, 0.0, 1e-6, 0.125, 0.5, 1.0, 3.0, 1e3, 1e300]),
    rtol=st.sampled_from([None, 0.0, 1e-6, 1e-3, 0.25, 1.0, 2.0]),
    ulp=st.sampled_from([None, 0, 1, 2, 3, 16, 1000, 2**20, 2**40]),
    nan_equal=st.booleans(),
)


# --------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", LITTLE_DTYPES)
@PROPERTY
@given(data=st.data())
def test_exact_matches_naive(dtype: str, engine: str, data) -> None:
    a, b = data.draw(buffer_pairs(dtype), label="buffers")
    scan_and_check(a, b, dtype, EXACT, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", LITTLE_DTYPES)
@PROPERTY
@given(data=st.data())
def test_tolerance_matches_naive(dtype: str, engine: str, data) -> None:
    a, b = data.draw(buffer_pairs(dtype), label="buffers")
    tol = data.draw(tolerances, label="tol")
    scan_and_check(a, b, dtype, tol, engine)


# --------------------------------------------------------------------------
# Anchor tests
# --------------------------------------------------------------------------

engines = pytest.mark.parametrize("engine", ENGINES)
floats = pytest.mark.parametrize("dtype", FLOATS)
with_inf = pytest.mark.parametrize("dtype", WITH_INF)


@engines
@floats
@pytest.mark.parametrize("nan_equal", [False, True])
def test_identical_nans_are_equal(dtype, engine, nan_equal) -> None:
    names = ["qnan", "qnan_payload", "nan_all_ones", "snan", "snan_payload"]
    bits = [sp(dtype, n, neg) for n in names if n in float_bits(dtype) for neg in (False, True)]
    buf = pack(dtype, bits)
    got = scan_bytes(buf, bytes(buf), dtype, Tolerance(nan_equal=nan_equal), engine=engine)
    assert got == ScanStats()


@engines
@pytest.mark.parametrize("dtype", WITH_NEG_ZERO)
def test_signed_zeros_differ_with_delta_zero(dtype, engine) -> None:
    a = pack(dtype, [sp(dtype, "one"), sp(dtype, "zero")])
    b = pack(dtype, [sp(dtype, "one"), sp(dtype, "zero", negative=True)])
    got = scan_and_check(a, b, dtype, EXACT, engine)
    assert core(got) == core_of(
        n_diff=1, first_diff=1, first_any=1, max_abs_delta=0.0, max_abs_delta_index=1
    )
    # zero ulp apart, and within any close-tolerance
    for tol in (Tolerance(ulp=0), Tolerance(atol=0.0), Tolerance(rtol=0.0)):
        got = scan_and_check(a, b, dtype, tol, engine)
        assert core(got) == core_of(
            n_within_tolerance=1, first_any=1, max_abs_delta=0.0, max_abs_delta_index=1
        )


@engines
@floats
def test_nan_against_number(dtype, engine) -> None:
    a = pack(dtype, [sp(dtype, "qnan"), sp(dtype, "one")])
    b = enc(dtype, 1.0, 3.0)
    want = ScanStats(
        n_diff=2,
        first_diff=0,
        first_any=0,
        max_abs_delta=2.0,
        max_abs_delta_index=1,
        n_nan_mismatch=1,
    )
    assert core(scan_and_check(a, b, dtype, EXACT, engine)) == core(want)
    # nan_equal only forgives NaN against NaN, and no tolerance forgives NaN vs number
    tol = Tolerance(atol=1e300, rtol=2.0, ulp=2**40, nan_equal=True)
    got = scan_and_check(a, b, dtype, tol, engine)
    assert core(got) == core_of(
        n_diff=1,
        n_within_tolerance=1,
        first_diff=0,
        first_any=0,
        max_abs_delta=2.0,
        max_abs_delta_index=1,
        n_nan_mismatch=1,
    )


@engines
@pytest.mark.parametrize("dtype", WITH_PAYLOADS)
def test_nan_payloads_and_nan_equal(dtype, engine) -> None:
    a = pack(dtype, [sp(dtype, "qnan"), sp(dtype, "snan", negative=True)])
    b = pack(dtype, [sp(dtype, "qnan_payload"), sp(dtype, "qnan")])
    assert core(scan_and_check(a, b, dtype, EXACT, engine)) == core_of(
        n_diff=2, first_diff=0, first_any=0, n_nan_mismatch=2
    )
    assert core(scan_and_check(a, b, dtype, Tolerance(nan_equal=True), engine)) == core_of(
        n_within_tolerance=2, first_any=0
    )


@engines
@with_inf
def test_infinities(dtype, engine) -> None:
    inf, ninf = sp(dtype, "inf"), sp(dtype, "inf", negative=True)
    big = sp(dtype, "max_finite")
    a = pack(dtype, [inf, inf, big, sp(dtype, "one")])
    b = pack(dtype, [ninf, big, inf, sp(dtype, "two")])
    want = ScanStats(
        n_diff=4,
        first_diff=0,
        first_any=0,
        max_abs_delta=1.0,
        max_abs_delta_index=3,
        n_inf_mismatch=3,
    )
    assert core(scan_and_check(a, b, dtype, EXACT, engine)) == core(want)
    # inf vs the largest finite value is 1 ulp apart, yet never within tolerance
    tol = Tolerance(atol=1e300, rtol=2.0, ulp=2**40, nan_equal=True)
    want = ScanStats(
        n_diff=3,
        n_within_tolerance=1,
        first_diff=0,
        first_any=0,
        max_abs_delta=1.0,
        max_abs_delta_index=3,
        n_inf_mismatch=3,
    )
    assert core(scan_and_check(a, b, dtype, tol, engine)) == core(want)


@engines
@with_inf
def test_inf_against_nan_counts_as_nan(dtype, engine) -> None:
    a = pack(dtype, [sp(dtype, "inf")])
    b = pack(dtype, [sp(dtype, "qnan")])
    want = ScanStats(n_diff=1, first_diff=0, first_any=0, n_nan_mismatch=1)
    assert core(scan_and_check(a, b, dtype, Tolerance(nan_equal=True), engine)) == core(want)


@engines
@pytest.mark.parametrize("f64", ["f64", "f64be"])
def test_f64_delta_overflows_to_inf(engine, f64) -> None:
    big = sp(f64, "max_finite")
    a = pack(f64, [sp(f64, "one"), big])
    b = pack(f64, [sp(f64, "two"), big | (1 << 63)])
    want = ScanStats(
        n_diff=2, first_diff=0, first_any=0, max_abs_delta=math.inf, max_abs_delta_index=1
    )
    assert core(scan_and_check(a, b, f64, EXACT, engine)) == core(want)
    # an infinite delta is beyond any finite bound (rtol=1 would make the bound inf too)
    got = scan_and_check(a, b, f64, Tolerance(atol=1e300, rtol=0.5), engine)
    assert core(got) == core_of(
        n_diff=1,
        n_within_tolerance=1,
        first_diff=1,
        first_any=0,
        max_abs_delta=math.inf,
        max_abs_delta_index=1,
    )


INT_EXTREMES = [
        ("u64", 0, 2**64 - 1, 2**64 - 1),
        ("i64", -(2**63), 2**63 - 1, 2**64 - 1),
        ("i8", -128, 127, 255),
        ("u8", 0, 255, 255),
        ("i16", -(2**15), 2**15 - 1, 2**16 - 1),
        ("u16", 2**16 - 1, 0, 2**16 - 1),
        ("i32", 2**31 - 1, -(2**31), 2**32 - 1),
        ("u32", 0, 2**32 - 1, 2**32 - 1),
        # deltas that float64 cannot tell apart from neighbours
        ("u64", 2**64 - 1, 2**64 - 2, 1),
        ("i64", 2**63 - 1, 2**63 - 2, 1),
        ("i64", -(2**63), 2**63 - 2, 2**64 - 2),
        # bool: the byte as an integer (numpy and torch write 0 and 1)
        ("bool", 0, 1, 1),
        ("bool", 255, 0, 255),
]  # fmt: skip


@engines
@pytest.mark.parametrize(
    "dtype, x, y, delta",
    INT_EXTREMES + [(d + "be", *rest) for d, *rest in INT_EXTREMES if d + "be" in DTYPES],
)
def test_integer_extremes_exact(engine, dtype, x, y, delta) -> None:
    got = scan_and_check(enc(dtype, x), enc(dtype, y), dtype, EXACT, engine)
    assert core(got) == core_of(
        n_diff=1, first_diff=0, first_any=0, max_abs_delta=delta, max_abs_delta_index=0
    )
    assert type(got.max_abs_delta) is int
    got = scan_and_check(enc(dtype, y), enc(dtype, x), dtype, EXACT, engine)
    assert got.max_abs_delta == delta and type(got.max_abs_delta) is int


@engines
@pytest.mark.parametrize("dtype", ["u64", "i64"])
def test_wide_int_max_is_exact(engine, dtype) -> None:
    # 2**64-2 comes first, 2**64-1 later: as float64 they tie, exactly they do not
    lo = 0 if dtype == "u64" else -(2**63)
    a = enc(dtype, lo, lo, lo + 1, lo)
    b = enc(dtype, lo + 2**64 - 2, lo + 5, lo + 2**64 - 1, lo + 2**64 - 1)
    got = scan_and_check(a, b, dtype, EXACT, engine)
    assert got.max_abs_delta == 2**64 - 1 and got.max_abs_delta_index == 3


@engines
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_difference_only_at_last_element(engine, dtype) -> None:
    n = 1031
    a = bytes(n * itemsize(dtype))
    b = a[: -itemsize(dtype)] + enc(dtype, 1)
    got = scan_and_check(a, b, dtype, EXACT, engine)
    delta = 1.0 if kind(dtype) == "float" else 1
    assert core(got) == core_of(
        n_diff=1, first_diff=n - 1, first_any=n - 1, max_abs_delta=delta, max_abs_delta_index=n - 1
    )


@engines
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_max_found_beyond_first_five_differences(engine, dtype) -> None:
    deltas = [1, 2, 3, 4, 5, 1, 0, 1, 64, 1, 64, 2]
    n = 40
    a = [0] * n
    b = [0] * n
    for i, d in enumerate(deltas):
        b[3 * i + 1] = d
    a_buf, b_buf = enc(dtype, *a), enc(dtype, *b)
    got = scan_and_check(a_buf, b_buf, dtype, EXACT, engine)
    assert got.max_abs_delta_index == 3 * 8 + 1
    assert got.max_abs_delta == 64
    assert got.n_diff == len(deltas) - 1
    assert got.first_diff == got.first_any == 1


@engines
@pytest.mark.parametrize(
    "dtype, tol, a, b, within",
    [
        ("f32", Tolerance(atol=0.5), 1.0, 1.5, True),
        ("f32", Tolerance(atol=0.25), 1.0, 1.5, False),
        ("f32", Tolerance(rtol=0.25), 2.5, 2.0, True),
        ("f32", Tolerance(rtol=0.25), 2.0, 2.5, True),
        ("f32", Tolerance(rtol=0.2), 2.0, 2.5, True),
        ("f32", Tolerance(rtol=0.2), 2.5, 2.0, False),
        ("f64", Tolerance(atol=0.5, rtol=0.25), 1.0, 2.0, True),
        ("f64", Tolerance(atol=0.5, rtol=0.25), 0.0, 2.0, False),
        ("f16", Tolerance(atol=1.0), -1.0, 0.0, True),
        ("bf16", Tolerance(atol=1.0), 3.0, 1.0, False),
        ("i32", Tolerance(atol=0.5), 1, 2, False),
        ("i32", Tolerance(atol=1.0), 1, 2, True),
        ("i32", Tolerance(ulp=1), 1, 2, True),
        ("i32", Tolerance(ulp=0), 1, 2, False),
        ("i8", Tolerance(rtol=0.5), -100, 100, False),
        ("i8", Tolerance(rtol=2.0), -100, 100, True),
        ("u8", Tolerance(ulp=254), 0, 255, False),
        ("u8", Tolerance(ulp=255), 0, 255, True),
        ("i64", Tolerance(ulp=2**64 - 1), -(2**63), 2**63 - 1, True),
        ("i64", Tolerance(ulp=2**64 - 2), -(2**63), 2**63 - 1, False),
        ("u64", Tolerance(ulp=2**63), 0, 2**63, True),
        ("u64", Tolerance(ulp=2**63 - 1), 0, 2**63, False),
        # the new kinds: tolerances act on their values and ULP
        ("bool", Tolerance(atol=1.0), 0, 1, True),
        ("bool", Tolerance(ulp=0), 1, 0, False),
        ("f8_e4m3fn", Tolerance(atol=32.0), 448.0, 416.0, True),  # 0x7E, 0x7D: no inf, no NaN
        ("f8_e4m3fn", Tolerance(ulp=1), 448.0, 416.0, True),
        ("f8_e4m3fn", Tolerance(rtol=0.05), 448.0, 416.0, False),
        ("f8_e5m2", Tolerance(ulp=1), 57344.0, 49152.0, True),
        ("f8_e4m3fnuz", Tolerance(ulp=2), 240.0, 208.0, True),
        ("f8_e5m2fnuz", Tolerance(atol=0.25), -1.0, -1.25, True),
        ("f32be", Tolerance(rtol=0.25), 2.0, 2.5, True),
        ("i64be", Tolerance(ulp=2**64 - 1), -(2**63), 2**63 - 1, True),
        ("bf16be", Tolerance(atol=1.0), 3.0, 1.0, False),
    ],
)
def test_tolerance_examples(engine, dtype, tol, a, b, within) -> None:
    got = scan_and_check(enc(dtype, a), enc(dtype, b), dtype, tol, engine)
    assert (got.n_within_tolerance, got.n_diff) == ((1, 0) if within else (0, 1))


@engines
@floats
def test_ulp_across_zero(engine, dtype) -> None:
    # +min_denormal vs -min_denormal: 2 ulp; +0.0 vs -min_denormal: 1 ulp
    a = pack(dtype, [sp(dtype, "min_denormal"), sp(dtype, "zero")])
    b = pack(dtype, [sp(dtype, "min_denormal", True), sp(dtype, "min_denormal", True)])
    got = scan_and_check(a, b, dtype, Tolerance(ulp=1), engine)
    assert (got.n_within_tolerance, got.n_diff, got.first_diff) == (1, 1, 0)
    got = scan_and_check(a, b, dtype, Tolerance(ulp=2), engine)
    assert (got.n_within_tolerance, got.n_diff) == (2, 0)


@engines
def test_huge_ulp_on_f64(engine) -> None:
    # -max_finite vs +max_finite: 2*(2**63 - 2**52 - 1) ulp, beyond int64
    big = sp("f64", "max_finite")
    a, b = pack("f64", [big | (1 << 63)]), pack("f64", [big])
    dist = 2 * big
    for ulp, within in [(dist, True), (dist - 1, False), (2**63 - 1, False), (2**64 - 1, True)]:
        got = scan_and_check(a, b, "f64", Tolerance(ulp=ulp), engine)
        assert got.n_within_tolerance == int(within), ulp


@engines
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_empty_buffers(engine, dtype) -> None:
    assert scan_bytes(b"", b"", dtype, engine=engine) == ScanStats()
    assert scan_bytes(b"", b"", dtype, Tolerance(atol=1.0), engine=engine) == ScanStats()


@engines
@pytest.mark.parametrize(
    "dtype", ["u8", "i16", "f16", "bf16", "f32", "u64", "f64", "bool", "f8_e5m2", "i32be", "f32be"]
)
def test_buffer_kinds(engine, dtype) -> None:
    """bytes, bytearray, memoryview and an unaligned memoryview slice agree."""
    rng = np.random.default_rng(7)
    n = 257
    a_bits = base_array(dtype, n, "bits", rng)
    b_bits = a_bits.copy()
    b_bits[rng.random(n) < 0.3] ^= 1
    a, b = a_bits.tobytes(), b_bits.tobytes()
    want = naive(a, b, dtype)
    pad_a, pad_b = bytearray(b"\x00" + a), bytearray(b"\x00" + b)
    for x, y in [
        (a, b),
        (bytearray(a), bytearray(b)),
        (memoryview(a), memoryview(b)),
        (memoryview(pad_a)[1:], memoryview(pad_b)[1:]),
    ]:
        assert_matches(scan_bytes(x, y, dtype, engine=engine), want, dtype)


# --------------------------------------------------------------------------
# Integer tolerances are decided exactly
# --------------------------------------------------------------------------

TWO53, TWO63, TWO64 = 2**53, 2**63, 2**64

#: Integers float64 cannot hold, and their neighbours (wrapped into each dtype).
WIDE_INTS = sorted(
    {v + k for v in (0, TWO53, TWO63, TWO64, -TWO53, -TWO63) for k in (-2, -1, 0, 1, 2)}
    | {TWO64 - 2047, TWO64 - 2048, TWO64 - 2049, 3 * 2**52 + 1, 10, 13, 100}
)


def int_range(dtype: str) -> tuple[int, int]:
    w = nbits(dtype)
    return (0, (1 << w) - 1) if kind(dtype) == "uint" else (-(1 << (w - 1)), (1 << (w - 1)) - 1)


def wrap(dtype: str, v: int) -> int:
    """v as a value of dtype (two's complement wrap-around)."""
    lo, hi = int_range(dtype)
    return (v - lo) % (hi - lo + 1) + lo


def nudge(x: float, k: int) -> float:
    """x moved k float64 steps (up for k > 0), staying >= 0 and finite."""
    for _ in range(abs(k)):
        x = math.nextafter(x, math.inf if k > 0 else 0.0)
    return x if math.isfinite(x) else 0.0


def float_tol(x: float, k: int) -> float:
    return nudge(float(x), k)


#: atol and rtol values around where float64 stops holding integers
TOL_FLOATS = [0.0, 5e-324, 2.0**-64, 2.0**-53, 0.1, 0.25, 0.3, 0.5, 0.75, 1.0, 2.0, 1e300]
TOL_FLOATS += [float_tol(x, k) for x in (1.0, 2.0**53, 2.0**63, 2.0**64) for k in (-1, 0, 1)]
TOL_FLOATS += [float(x) for x in (3, 10, 2**11, 2**52, 2**54, 2**65)]

tol_values = st.one_of(
    st.none(),
    st.sampled_from(TOL_FLOATS),
    st.floats(0.0, 2.0**70, allow_nan=False, allow_infinity=False),
)


@st.composite
def wide_int_pairs(draw, dtype: str):
    """Two buffers of extreme integers and their neighbours, and the values."""
    lo, hi = int_range(dtype)
    value = st.one_of(st.sampled_from(WIDE_INTS), st.integers(lo, hi), st.integers(-300, 300))
    pairs = draw(st.lists(st.tuples(value, value), min_size=1, max_size=40))
    xs = [wrap(dtype, x) for x, _ in pairs]
    ys = [wrap(dtype, y) for _, y in pairs]
    return xs, ys


@st.composite
def boundary_tolerance(draw, xs: list[int], ys: list[int]) -> Tolerance:
    """A tolerance at (or a few float steps from) the exact bound of one element."""
    i = draw(st.integers(0, len(xs) - 1))
    d, m = abs(xs[i] - ys[i]), abs(ys[i])
    k = draw(st.integers(-2, 2))
    how = draw(st.sampled_from(["atol", "rtol", "both"]))
    if how == "atol" or m == 0:
        return Tolerance(atol=float_tol(d, k))
    if how == "rtol":
        return Tolerance(rtol=float_tol(d / m, k))
    # part of d from atol, the rest from rtol*m
    share = draw(st.integers(0, max(d, 0)))
    return Tolerance(
        atol=float_tol(share, k), rtol=float_tol((d - share) / m, draw(st.integers(-2, 2)))
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", ["i64", "u64", "i32", "u8"])
@PROPERTY
@given(data=st.data())
def test_integer_tolerance_is_exact(dtype: str, engine: str, data) -> None:
    """Extremes of the wide integers, atol/rtol around 2**53, 2**63 and 2**64
    and at each element's own bound: every engine agrees with the exact twin."""
    xs, ys = data.draw(wide_int_pairs(dtype), label="values")
    if data.draw(st.booleans(), label="at a bound"):
        tol = data.draw(boundary_tolerance(xs, ys), label="tol")
    else:
        atol = data.draw(tol_values, label="atol")
        rtol = data.draw(tol_values, label="rtol")
        ulp = data.draw(st.sampled_from([None, 0, 1, 2**53, 2**63, 2**64 - 2]), label="ulp")
        tol = Tolerance(atol=atol, rtol=rtol, ulp=ulp)
    scan_and_check(enc(dtype, *xs), enc(dtype, *ys), dtype, tol, engine)


@settings(max_examples=2000, deadline=None)
@given(
    d=st.one_of(st.sampled_from([1, 2, TWO53 - 1, TWO53, TWO53 + 1, TWO63, TWO64 - 1]),
                st.integers(1, TWO64 - 1)),
    m=st.one_of(st.sampled_from([0, 1, 10, TWO53 + 1, TWO63, TWO64 - 1]),
                st.integers(0, TWO64 - 1)),
    atol=st.one_of(st.sampled_from(TOL_FLOATS), st.floats(0.0, 1e300)),
    rtol=st.one_of(st.sampled_from(TOL_FLOATS), st.floats(0.0, 1e300)),
    k=st.integers(-2, 2),
    at_bound=st.booleans(),
)  # fmt: skip
def test_integer_bound_is_exact(d, m, atol, rtol, k, at_bound) -> None:
    """IntegerBound (the algorithm of the numpy and numba kernels) and both
    kernels' versions of it, one element at a time, against Fractions."""
    from fastdiff.kernels import numba_engine as _numba_kernels
    from fastdiff.kernels import numpy_engine as _numpy_kernels

    if at_bound and m:
        rtol = float_tol(max(Fraction(d) - Fraction(atol), Fraction(0)) / m, k)
    want = Fraction(d) <= Fraction(atol) + Fraction(rtol) * m
    tol = Tolerance(atol=atol, rtol=rtol)
    ib = tol.integer_bound
    assert ib.within(d, m) == want
    du, mu = np.array([d], np.uint64), np.array([m], np.uint64)
    assert bool(_numpy_kernels._int_close(du, mu, ib)[0]) == want
    words = (d, m, ib.rtol_mant, ib.atol_scaled, ib.lshift, ib.rshift, ib.frame)
    steps_2_3 = ib.rtol_mant != 0 and m != 0 and _numba_kernels._rtol_close(*map(np.uint64, words))
    assert (d <= ib.atol_floor or steps_2_3) == want
    # and through whole scans, where some u64 value lies d away from m
    x = m - d if d <= m else m + d
    if x < TWO64:
        for engine in ENGINES:
            got = scan_bytes(enc("u64", x), enc("u64", m), "u64", tol, engine=engine)
            assert got.n_within_tolerance == int(want), engine


@engines
@pytest.mark.parametrize(
    "dtype, tol, a, b, within",
    [
        # the issue: 2**53+1 rounds to 2**53 in float64
        ("i64", Tolerance(atol=2.0**53), 0, 2**53 + 1, False),
        ("i64", Tolerance(atol=2.0**53), 0, 2**53, True),
        ("i64", Tolerance(atol=2.0**53), 2**63 - 1, 2**63 - 1 - 2**53 - 1, False),
        ("u64", Tolerance(atol=2.0**64 - 2048), 0, 2**64 - 2047, False),
        ("u64", Tolerance(atol=2.0**64 - 2048), 1, 2**64 - 2047, True),
        ("u64", Tolerance(atol=2.0**64), 0, 2**64 - 1, True),
        ("i64", Tolerance(atol=2.0**63), -(2**63), 2**63 - 1, False),
        ("i64", Tolerance(atol=2.0**63), -(2**63), 0, True),
        # rtol: |b| = 2**63-1 and rtol 0.5 give 2**62 - 0.5, plus atol 0.5
        ("u64", Tolerance(atol=0.5, rtol=0.5), 2**63 - 1 + 2**62, 2**63 - 1, True),
        ("u64", Tolerance(atol=0.5, rtol=0.5), 2**63 + 2**62, 2**63 - 1, False),
        # 2*|b| is 2**64-2 and 2**64 (float64: 2**64 for both)
        ("i64", Tolerance(rtol=2.0), -(2**63), 2**63 - 1, False),
        ("i64", Tolerance(rtol=2.0), 2**63 - 1, -(2**63), True),
        # the binary value of 0.3 is just below 3/10 (float64 rounds 0.3*10 to 3)
        ("i32", Tolerance(rtol=0.3), 13, 10, False),
        ("i32", Tolerance(rtol=0.3), 12, 10, True),
        ("i8", Tolerance(rtol=0.25), 15, 12, True),
        # fractional parts of atol and rtol*|b| that add up to a whole unit
        ("u8", Tolerance(atol=0.75, rtol=0.25), 2, 1, True),
        ("u8", Tolerance(atol=math.nextafter(0.75, 0.0), rtol=0.25), 2, 1, False),
        ("u16", Tolerance(atol=5e-324, rtol=math.nextafter(1.0, 0.0)), 0, 1, False),
        # rtol*|b| just below 1 and 2 (float64: 1 and 2)
        ("u64", Tolerance(rtol=2.0**-64), 2**64 - 2, 2**64 - 1, False),
        ("u64", Tolerance(rtol=2.0**-63), 2**64 - 3, 2**64 - 1, False),
        ("u64", Tolerance(rtol=2.0**-63), 2**64 - 2, 2**64 - 1, True),
        ("u64", Tolerance(rtol=2.0**-63), 2**63 + 1, 2**63, True),
        ("u64", Tolerance(rtol=1e300), 0, 1, True),
    ],
)
def test_integer_tolerance_examples(engine, dtype, tol, a, b, within) -> None:
    got = scan_and_check(enc(dtype, a), enc(dtype, b), dtype, tol, engine)
    assert (got.n_within_tolerance, got.n_diff) == ((1, 0) if within else (0, 1))


@pytest.mark.parametrize("engine", ENGINES)
def test_cli_integer_atol_is_exact(tmp_path, engine) -> None:
    """The issue's case through the CLI: 0 vs 2**53+1 is not within --atol 2**53."""
    for run, value in (("A", 0), ("B", 2**53 + 1)):
        (tmp_path / run).mkdir()
        (tmp_path / run / "step_0_x.bin").write_bytes(enc("i64", value))
    r = subprocess.run(
        [sys.executable, "-m", "fastdiff", "compare", str(tmp_path / "A"), str(tmp_path / "B"),
         "--schema", "raw", "--default-dtype", "i64", "--atol", "9007199254740992",
         "--engine", engine, "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    (buf,) = doc["buffers"]
    assert buf["status"] == "diverged"
    assert buf["max_abs_delta"] == 2**53 + 1
    assert doc["verdict"] == "diverged"


# --------------------------------------------------------------------------
# Chunk boundaries
# --------------------------------------------------------------------------


def scan_in_pieces(a, b, dtype, tol, engine, cuts, row_size: int = 0) -> ScanStats:
    """Scan [cuts[k], cuts[k+1]) element ranges and combine them (each piece
    told its origin, so rows are numbered in the whole buffer)."""
    w = itemsize(dtype)
    ma, mb = memoryview(a), memoryview(b)
    total = ScanStats()
    for start, end in itertools.pairwise(cuts):
        part = scan_bytes(
            ma[start * w : end * w], mb[start * w : end * w], dtype, tol, engine,
            row_size=row_size, origin=start,
        )  # fmt: skip
        total = total.merged(part.shifted(start))
    return total


@engines
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("tol", [EXACT, Tolerance(atol=1.0, ulp=2, nan_equal=True)])
def test_chunks_with_differences_at_piece_edges(engine, dtype, tol) -> None:
    n = 3000
    cuts = [0, 1, 2, 3, 64, 65, 1000, 1001, 1002, 2048, 2999, 3000]
    rng = np.random.default_rng(11)
    a_bits = [int(x) for x in base_array(dtype, n, "ordinary", rng)]
    b_bits = list(a_bits)
    for k, (start, end) in enumerate(itertools.pairwise(cuts)):
        # first and last element of every piece differ, with growing deltas and
        # ties between pieces (the first index of a tie must win)
        for i in {start, end - 1}:
            b_bits[i] = mutate(dtype, a_bits[i], "nudge", k % 3)
            if a_bits[i] == b_bits[i]:
                b_bits[i] = mutate(dtype, a_bits[i], "flip", k)
    b_bits[5] = specials(dtype)[0]
    b_bits[1500] = specials(dtype)[3]
    a, b = pack(dtype, a_bits), pack(dtype, b_bits)
    whole = scan_and_check(a, b, dtype, tol, engine)
    assert whole.first_any == 0
    assert scan_in_pieces(a, b, dtype, tol, engine, cuts) == whole
    # one element per piece over a stretch
    cuts = [0, *range(990, 1010), n]
    assert scan_in_pieces(a, b, dtype, tol, engine, cuts) == whole


@engines
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_chunks_differences_only_in_middle_piece(engine, dtype) -> None:
    n = 300
    a_bits = [0] * n
    b_bits = [0] * n
    b_bits[150] = 1
    b_bits[160] = 1
    a, b = pack(dtype, a_bits), pack(dtype, b_bits)
    whole = scan_and_check(a, b, dtype, EXACT, engine)
    assert whole.first_diff == whole.max_abs_delta_index == 150
    assert scan_in_pieces(a, b, dtype, EXACT, engine, [0, 100, 150, 151, 155, 161, n]) == whole


@engines
@pytest.mark.parametrize("dtype", LITTLE_DTYPES)
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_chunked_equals_whole(engine, dtype, data) -> None:
    a, b = data.draw(buffer_pairs(dtype, max_len=200), label="buffers")
    tol = data.draw(st.one_of(st.just(EXACT), tolerances), label="tol")
    n = len(a) // itemsize(dtype)
    inner = data.draw(st.lists(st.integers(0, n), max_size=8), label="cuts")
    cuts = sorted({0, n, *inner})
    whole = scan_and_check(a, b, dtype, tol, engine)
    assert scan_in_pieces(a, b, dtype, tol, engine, cuts) == whole


@engines
@pytest.mark.parametrize("dtype", LITTLE_DTYPES)
@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_chunked_runs_and_rows_equal_whole(engine, dtype, data) -> None:
    """Runs of differing elements that cross piece edges join into one; rows
    seen by two pieces count once; the first 16 of each stay the first 16."""
    a, b = data.draw(buffer_pairs(dtype, max_len=200), label="buffers")
    tol = data.draw(st.one_of(st.just(EXACT), tolerances), label="tol")
    row_size = data.draw(st.sampled_from([1, 2, 3, 7, 16]), label="row_size")
    n = len(a) // itemsize(dtype)
    inner = data.draw(st.lists(st.integers(0, n), max_size=8), label="cuts")
    cuts = sorted({0, n, *inner})
    whole = scan_bytes(a, b, dtype, tol, engine, row_size=row_size)
    assert_matches(whole, naive_scan(a, b, dtype, tol.atol, tol.rtol, tol.ulp, tol.nan_equal,
                                     row_size=row_size), dtype)  # fmt: skip
    assert scan_in_pieces(a, b, dtype, tol, engine, cuts, row_size) == whole


@engines
@pytest.mark.parametrize("dtype", LITTLE_DTYPES)
@PROPERTY
@given(data=st.data())
def test_rows_of_a_piece_at_any_origin_match_naive(dtype: str, engine: str, data) -> None:
    a, b = data.draw(buffer_pairs(dtype, max_len=120), label="buffers")
    row_size = data.draw(st.integers(1, 40), label="row_size")
    origin = data.draw(st.integers(0, 1000), label="origin")
    got = scan_bytes(a, b, dtype, EXACT, engine, row_size=row_size, origin=origin)
    assert_matches(got, naive_scan(a, b, dtype, row_size=row_size, origin=origin), dtype)


@engines
@pytest.mark.parametrize("dtype", ["u8", "f32", "f64"])
def test_a_run_across_many_pieces_is_one_range(engine, dtype) -> None:
    n = 300
    a = bytes(n * itemsize(dtype))
    b = bytearray(a)
    b[50 * itemsize(dtype) : 250 * itemsize(dtype)] = enc(dtype, *([1] * 200))
    cuts = [0, 49, 50, 51, 100, 101, 180, 250, 251, n]
    got = scan_in_pieces(a, bytes(b), dtype, EXACT, engine, cuts, row_size=64)
    assert (got.ranges, got.n_ranges, got.last_range) == (((50, 250),), 1, (50, 250))
    assert (got.rows, got.n_rows, got.last_row) == ((0, 1, 2, 3), 4, 3)
    assert got == scan_bytes(a, bytes(b), dtype, EXACT, engine, row_size=64)


@engines
def test_more_than_16_runs_and_rows_across_pieces(engine) -> None:
    """Every other element differs: 40 runs and, 2 elements a row, 40 rows; the
    first 16 listed, every one counted, the true last kept, whatever the cuts."""
    n = 80
    a = enc("i32", *([0] * n))
    b = enc("i32", *[i % 2 for i in range(n)])
    runs = tuple((i, i + 1) for i in range(1, n, 2))
    for cuts in ([0, n], [0, 33, n], [0, 1, 2, 3, 50, 79, n], list(range(n + 1))):
        got = scan_in_pieces(a, b, "i32", EXACT, engine, cuts, row_size=2)
        assert (got.ranges, got.n_ranges, got.last_range) == (runs[:16], 40, (79, 80)), cuts
        assert (got.rows, got.n_rows, got.last_row) == (tuple(range(16)), 40, 39), cuts


@engines
@pytest.mark.parametrize("dtype", [d for d in WITH_INF if d in WITH_NEG_ZERO])
def test_ulp_histogram_and_signed_zero(engine, dtype) -> None:
    one, two = sp(dtype, "one"), sp(dtype, "two")
    bits_a = [one, one, one, sp(dtype, "zero", True), sp(dtype, "min_denormal", True), two]
    bits_b = [one + 1, one + 3, one + 4, sp(dtype, "zero"), sp(dtype, "min_denormal"), two]
    got = scan_and_check(pack(dtype, bits_a), pack(dtype, bits_b), dtype, EXACT, engine)
    # distances 1, 3, 4, 0 (-0.0 vs +0.0) and 2 (across zero): bins 0, 1, 2 and 1
    assert got.ulp_log2_histogram == (1, 2, 1)
    assert (got.max_ulp, got.n_signed_zero) == (4, 1)
    assert (got.ranges, got.n_ranges) == (((0, 5),), 1)
    # NaN and infinity pairs have no distance; NaN-only buffers have no max
    nan = pack(dtype, [sp(dtype, "qnan"), sp(dtype, "inf")])
    got = scan_and_check(nan, pack(dtype, [one, two]), dtype, EXACT, engine)
    assert (got.max_ulp, got.ulp_log2_histogram, got.n_signed_zero) == (None, (), 0)


@engines
def test_ulp_distance_of_f64_extremes_is_exact(engine) -> None:
    big = sp("f64", "max_finite")
    got = scan_and_check(pack("f64", [big | (1 << 63)]), pack("f64", [big]), "f64", EXACT, engine)
    assert got.max_ulp == 2 * big and got.ulp_log2_histogram == (0,) * 63 + (1,)


@engines
@pytest.mark.parametrize(
    "dtype, a, b, rel, index",
    [
        ("f32", [1.0, 3.0], [2.0, 2.0], 0.5, 0),  # |1-2|/2 and |3-2|/2 tie: the first
        ("f32", [1.0, 3.0, 0.0], [2.0, 2.0, 1.0], 1.0, 2),
        ("f64", [0.0, 5.0], [0.0, 4.0], 0.25, 1),
        ("f32", [1.0], [0.0], None, -1),  # B = 0: no relative delta
        ("i32", [0, -7, 9], [5, 7, 3], 2.0, 1),
        ("u64", [0, 2**64 - 1], [1, 1], float(2**64 - 2), 1),
        ("i64", [2**63 - 1], [-(2**63)], (2**64 - 1) / 2**63, 0),
    ],
)
def test_max_rel_delta(engine, dtype, a, b, rel, index) -> None:
    got = scan_and_check(enc(dtype, *a), enc(dtype, *b), dtype, EXACT, engine)
    assert (got.max_rel_delta, got.max_rel_delta_index) == (rel, index)


# --------------------------------------------------------------------------
# The 8-bit floats, bool and big-endian types: each by its own definition
# --------------------------------------------------------------------------


@engines
def test_e4m3fn_has_no_infinity_and_one_nan_per_sign(engine) -> None:
    # S.1111.000-110 are the numbers 256 to 448; S.1111.111 is NaN
    a = pack("f8_e4m3fn", [0x78, 0x7F, 0x7F, 0x00, 0xFE])
    b = pack("f8_e4m3fn", [0x7E, 0x7E, 0xFF, 0x80, 0x7E])
    got = scan_and_check(a, b, "f8_e4m3fn", EXACT, engine)
    assert core(got) == core_of(
        n_diff=5, first_diff=0, first_any=0, max_abs_delta=896.0, max_abs_delta_index=4,
        n_nan_mismatch=2,
    )  # fmt: skip
    # 256 vs 448 is 6 ULP, -448 vs 448 is 2 * 126, and -0.0 vs +0.0 is 0
    assert (got.max_ulp, got.n_signed_zero, got.n_inf_mismatch) == (252, 1, 0)
    assert got.ulp_log2_histogram == (0, 0, 1, 0, 0, 0, 0, 1)
    # nan_equal forgives +NaN against -NaN, not NaN against 448
    got = scan_and_check(a, b, "f8_e4m3fn", Tolerance(nan_equal=True), engine)
    assert (got.n_nan_mismatch, got.n_within_tolerance) == (1, 1)


@engines
@pytest.mark.parametrize("dtype, largest", [("f8_e4m3fnuz", 240.0), ("f8_e5m2fnuz", 57344.0)])
def test_fnuz_has_one_nan_no_infinity_no_negative_zero(engine, dtype, largest) -> None:
    # 0x80 (the sign alone) is the one NaN; 0x7F and 0xFF are +-largest; no -0.0
    a = pack(dtype, [0x00, 0x80, 0x7F, 0x01, 0x7F])
    b = pack(dtype, [0x80, 0x01, 0x7E, 0x81, 0xFF])
    got = scan_and_check(a, b, dtype, EXACT, engine)
    assert (got.n_nan_mismatch, got.n_inf_mismatch, got.n_signed_zero) == (2, 0, 0)
    assert (got.max_abs_delta, got.max_abs_delta_index) == (2 * largest, 4)
    # +min_denormal vs -min_denormal: 2 ULP (through the single zero); +-largest: 254
    assert got.max_ulp == 254 and got.ulp_log2_histogram == (1, 1, 0, 0, 0, 0, 0, 1)
    same = pack(dtype, [0x80, 0x80])
    assert scan_bytes(same, bytes(same), dtype, engine=engine) == ScanStats()


@engines
def test_e5m2_is_ieee_like(engine) -> None:
    # S.11111.00 is infinite, S.11111.01-11 NaN (payloads), 0x80 is -0.0
    a = pack("f8_e5m2", [0x7C, 0x7D, 0x7E, 0x80, 0x7B])
    b = pack("f8_e5m2", [0x7B, 0x7F, 0x7C, 0x00, 0xFB])
    got = scan_and_check(a, b, "f8_e5m2", EXACT, engine)
    assert (got.n_inf_mismatch, got.n_nan_mismatch, got.n_signed_zero) == (1, 2, 1)
    assert (got.max_abs_delta, got.max_ulp) == (2 * 57344.0, 2 * 0x7B)
    got = scan_and_check(a, b, "f8_e5m2", Tolerance(nan_equal=True, ulp=2**40), engine)
    assert (got.n_diff, got.n_within_tolerance) == (2, 3)  # inf is never within


@engines
@pytest.mark.parametrize(
    "dtype, tiny", [("f8_e4m3fn", 2**-9), ("f8_e5m2", 2**-16), ("f8_e4m3fnuz", 2**-10),
                    ("f8_e5m2fnuz", 2**-17)],
)  # fmt: skip
def test_fp8_subnormals(engine, dtype, tiny) -> None:
    m = FP8_SPEC[dtype]["m"]
    top = (1 << m) - 1  # the largest subnormal, then the smallest normal: 1 ULP apart
    a = pack(dtype, [0x01, top, 0x00])
    b = pack(dtype, [0x02, top + 1, 0x01])
    got = scan_and_check(a, b, dtype, EXACT, engine)
    assert (got.max_abs_delta, got.max_ulp, got.ulp_log2_histogram) == (tiny, 1, (3,))
    assert fp8_value(dtype, 0x01) == tiny


@engines
@pytest.mark.parametrize("dtype", BIG_ENDIAN)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_big_endian_is_its_little_endian_twin_with_bytes_reversed(engine, dtype, data) -> None:
    """Whatever differs, a big-endian buffer scans exactly as the same elements
    little-endian: equality is on the bytes, values and ULP after reversing."""
    little = little_endian(dtype)
    a, b = data.draw(buffer_pairs(little, max_len=150), label="buffers")
    tol = data.draw(st.one_of(st.just(EXACT), tolerances), label="tol")
    w = itemsize(dtype)
    swap_a, swap_b = (np.frombuffer(x, f"<u{w}").astype(f">u{w}").tobytes() for x in (a, b))
    assert scan_bytes(swap_a, swap_b, dtype, tol, engine) == scan_bytes(a, b, little, tol, engine)


@engines
@pytest.mark.parametrize("dtype", BIG_ENDIAN)
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_big_endian_matches_naive(engine, dtype, data) -> None:
    """Big-endian buffers against the naive twin: exact and with tolerances,
    whole and in pieces, with rows."""
    a, b = data.draw(buffer_pairs(dtype, max_len=200), label="buffers")
    tol = data.draw(st.one_of(st.just(EXACT), tolerances), label="tol")
    row_size = data.draw(st.sampled_from([0, 1, 3, 16]), label="row_size")
    n = len(a) // itemsize(dtype)
    cuts = sorted({0, n, *data.draw(st.lists(st.integers(0, n), max_size=6), label="cuts")})
    whole = scan_bytes(a, b, dtype, tol, engine, row_size=row_size)
    want = naive_scan(a, b, dtype, tol.atol, tol.rtol, tol.ulp, tol.nan_equal, row_size=row_size)
    assert_matches(whole, want, dtype)
    assert scan_in_pieces(a, b, dtype, tol, engine, cuts, row_size) == whole


# --------------------------------------------------------------------------
# Argument errors
# --------------------------------------------------------------------------


@engines
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_length_errors(engine, dtype) -> None:
    w = itemsize(dtype)
    with pytest.raises(ValueError):
        scan_bytes(bytes(2 * w), bytes(w), dtype, engine=engine)
    with pytest.raises(ValueError):
        scan_bytes(bytes(w), bytes(2 * w), dtype, engine=engine)
    with pytest.raises(ValueError):
        scan_bytes(b"", bytes(w), dtype, engine=engine)
    if w > 1:
        for length in (1, w + 1, 2 * w - 1):
            with pytest.raises(ValueError):
                scan_bytes(bytes(length), bytes(length), dtype, engine=engine)


def test_unknown_engine() -> None:
    with pytest.raises(ValueError):
        scan_bytes(b"\x00\x01", b"\x00\x02", "u8", engine="cuda")  # type: ignore[arg-type]


def test_unknown_dtype() -> None:
    with pytest.raises(ValueError):
        scan_bytes(b"\x00", b"\x01", "f8")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"atol": -1},
        {"atol": float("nan")},
        {"atol": float("inf")},
        {"rtol": -1e-9},
        {"rtol": float("nan")},
        {"rtol": float("inf")},
        {"ulp": -1},
    ],
)
def test_bad_tolerances(kwargs) -> None:
    with pytest.raises(ValueError):
        Tolerance(**kwargs)


def test_naive_sanity() -> None:
    """The twin itself, on hand-computed cases."""
    assert naive(enc("f32", 1.0, 2.0), enc("f32", 1.0, 5.0), "f32")["max_abs_delta"] == 3.0
    got = naive(enc("i64", -(2**63)), enc("i64", 2**63 - 1), "i64")
    assert got["max_abs_delta"] == 2**64 - 1
    assert set(INTS) | set(FLOATS) == set(ALL_DTYPES)
