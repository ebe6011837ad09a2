"""A slow, obviously-correct twin of ``fastdiff.kernels.scan_bytes``.

One Python loop over the elements, decoding each one with ``int.from_bytes``
or ``struct`` (a big-endian element: its bytes reversed first), the 8-bit
floats from their specifications (``FP8_SPEC``: which patterns are NaN or
infinite, the exponent bias, exact values as fractions); every rule of the
spec is written out literally. It is only
meant for small arrays in tests. It deliberately imports nothing from
fastdiff (the result is a plain dict with the ScanStats field names, the
kernel facts of ``fastdiff.model.facts``): where the differing elements
lie (runs and rows, from the list of all of them), the largest relative
delta, and for floats the ULP distances (their maximum and log2 histogram,
and the -0.0 against +0.0 pairs at distance 0).
"""

from __future__ import annotations

import functools
import math
import struct
from fractions import Fraction

# name -> (itemsize in bytes, kind)
DTYPES: dict[str, tuple[int, str]] = {
    "u8": (1, "uint"),
    "i8": (1, "int"),
    "u16": (2, "uint"),
    "i16": (2, "int"),
    "u32": (4, "uint"),
    "i32": (4, "int"),
    "u64": (8, "uint"),
    "i64": (8, "int"),
    "f16": (2, "float"),
    "bf16": (2, "float"),
    "f32": (4, "float"),
    "f64": (8, "float"),
    "bool": (1, "uint"),  # a byte, compared and shown as the integer it holds
    "f8_e4m3fn": (1, "float"),
    "f8_e5m2": (1, "float"),
    "f8_e4m3fnuz": (1, "float"),
    "f8_e5m2fnuz": (1, "float"),
}
#: big-endian twins of the multi-byte types: the same elements, bytes reversed
DTYPES.update({name + "be": spec for name, spec in list(DTYPES.items()) if spec[0] > 1})

#: The 8-bit floats as their specifications define them (OCP 8-bit floating
#: point v1.0 for E4M3 and E5M2; the FNUZ formats of Graphcore and AMD as
#: torch and ml_dtypes implement them): exponent and mantissa bits, exponent
#: bias, the patterns that are NaN and those that are infinite.
FP8_SPEC: dict[str, dict] = {
    # S.1111.111 is NaN; S.1111.000-110 are numbers (256 to 448); no infinity
    "f8_e4m3fn": {"e": 4, "m": 3, "bias": 7, "nan": {0x7F, 0xFF}, "inf": set()},
    # IEEE-like: S.11111.00 is infinite, S.11111.01-11 NaN
    "f8_e5m2": {"e": 5, "m": 2, "bias": 15, "nan": {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF},
                "inf": {0x7C, 0xFC}},
    # no infinity, no -0.0: the sign alone (0x80) is the one NaN
    "f8_e4m3fnuz": {"e": 4, "m": 3, "bias": 8, "nan": {0x80}, "inf": set()},
    "f8_e5m2fnuz": {"e": 5, "m": 2, "bias": 16, "nan": {0x80}, "inf": set()},
}  # fmt: skip

#: Each float format's explicit mantissa bits and smallest normal exponent
#: (IEEE 754 binary64, binary32, binary16; bfloat16 has binary32's exponent;
#: the 8-bit floats from their specifications: 1 - bias).
FLOAT_FORMATS: dict[str, tuple[int, int]] = {
    "f64": (52, -1022),
    "f32": (23, -126),
    "f16": (10, -14),
    "bf16": (7, -126),
    **{name: (spec["m"], 1 - spec["bias"]) for name, spec in FP8_SPEC.items()},
}

FLOATS = tuple(name for name, (_, k) in DTYPES.items() if k == "float")
INTS = tuple(name for name, (_, k) in DTYPES.items() if k != "float")
FP8 = tuple(FP8_SPEC)
BIG_ENDIAN = tuple(name for name in DTYPES if name.endswith("be"))


def itemsize(dtype: str) -> int:
    return DTYPES[dtype][0]


def kind(dtype: str) -> str:
    return DTYPES[dtype][1]


def little_endian(dtype: str) -> str:
    """The little-endian type of a dtype's elements (itself, or its name less "be")."""
    return dtype[:-2] if dtype in BIG_ENDIAN else dtype


def bits_of(dtype: str, raw: bytes) -> int:
    """The bit pattern of one element, in its own byte order."""
    return int.from_bytes(raw, "big" if dtype in BIG_ENDIAN else "little")


@functools.cache
def fp8_value(dtype: str, byte: int) -> float:
    """The value of an 8-bit float, from its specification (exact: a Fraction
    rounded once, exactly, to float64)."""
    spec = FP8_SPEC[dtype]
    if byte in spec["nan"]:
        return math.nan
    sign = -1.0 if byte & 0x80 else 1.0
    if byte in spec["inf"]:
        return sign * math.inf
    e, m, bias = spec["e"], spec["m"], spec["bias"]
    exponent = (byte >> m) % 2**e
    fraction = Fraction(byte % 2**m, 2**m)
    if exponent == 0:  # subnormal (or zero): 0.fraction * 2**(1 - bias)
        magnitude = fraction * Fraction(2) ** (1 - bias)
    else:
        magnitude = (1 + fraction) * Fraction(2) ** (exponent - bias)
    return math.copysign(float(magnitude), sign)


@functools.cache
def fp8_finite_values(dtype: str) -> tuple[float, ...]:
    """The distinct finite values of an 8-bit float format, in increasing
    order (-0.0 and +0.0 are one value)."""
    values = {fp8_value(dtype, u) for u in range(256)}
    return tuple(sorted(v for v in values if math.isfinite(v)))


def fp8_rank(dtype: str, byte: int) -> int:
    """The position of a finite 8-bit float among the format's finite values."""
    return fp8_finite_values(dtype).index(fp8_value(dtype, byte))


def decode(dtype: str, raw: bytes) -> int | float:
    """The value of one element: an exact int or a float64."""
    if dtype in BIG_ENDIAN:
        return decode(little_endian(dtype), raw[::-1])
    if dtype in FP8_SPEC:
        return fp8_value(dtype, raw[0])
    k = kind(dtype)
    if k == "uint":
        return int.from_bytes(raw, "little", signed=False)
    if k == "int":
        return int.from_bytes(raw, "little", signed=True)
    if dtype == "f16":
        return struct.unpack("<e", raw)[0]
    if dtype == "bf16":
        bits = int.from_bytes(raw, "little")
        return struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]
    if dtype == "f32":
        return struct.unpack("<f", raw)[0]
    if dtype == "f64":
        return struct.unpack("<d", raw)[0]
    raise ValueError(dtype)


def ulp_distance(dtype: str, a_bits: int, b_bits: int) -> int:
    """Distance in units in the last place of two finite float bit patterns:
    for the 8-bit floats, how many distinct values apart they are in the
    ordered list of all the format's finite values; for the others, as sign
    and magnitude (the same count for them: -0.0 and +0.0 are 0 apart)."""
    if little_endian(dtype) in FP8_SPEC:
        base = little_endian(dtype)
        return abs(fp8_rank(base, a_bits) - fp8_rank(base, b_bits))
    signbit = 1 << (8 * itemsize(dtype) - 1)
    mag_a = a_bits & (signbit - 1)
    mag_b = b_bits & (signbit - 1)
    if (a_bits & signbit) == (b_bits & signbit):
        return abs(mag_a - mag_b)
    return mag_a + mag_b


def ulp_of(dtype: str, s: float) -> Fraction:
    """The unit in the last place of the format of ``dtype`` at a magnitude
    ``s`` >= 0: 2**(e - p) for the exponent e with 2**e <= s < 2**(e+1),
    never below the smallest normal exponent (subnormals and zero)."""
    p, emin = FLOAT_FORMATS[little_endian(dtype)]
    e = emin
    x = Fraction(s)
    if x > 0:
        e = 0
        while Fraction(2) ** e > x:
            e -= 1
        while Fraction(2) ** (e + 1) <= x:
            e += 1
        e = max(e, emin)
    return Fraction(2) ** (e - p)


def in_scale_ulps(dtype: str, d: float, s: float) -> float:
    """The difference ``d`` in units in the last place of the scale ``s``."""
    if math.isinf(d):
        return math.inf
    try:
        return float(Fraction(d) / ulp_of(dtype, s))  # rounded once, as IEEE division is
    except OverflowError:  # beyond the largest float64: IEEE division gives inf
        return math.inf


def is_close(d: float, b: float, atol: float | None, rtol: float | None) -> bool:
    """|a-b| <= atol + rtol*|b| in float64, with an unset atol/rtol counting as 0."""
    if atol is None and rtol is None:
        return False
    return d <= (atol or 0.0) + (rtol or 0.0) * abs(b)


def is_close_exact(d: int, b: int, atol: float | None, rtol: float | None) -> bool:
    """|a-b| <= atol + rtol*|b| in exact rationals: integers against the exact
    binary values of atol and rtol. An unset atol/rtol counts as 0."""
    if atol is None and rtol is None:
        return False
    return Fraction(d) <= Fraction(atol or 0.0) + Fraction(rtol or 0.0) * abs(b)


def naive_scan(
    a: bytes,
    b: bytes,
    dtype: str,
    atol: float | None = None,
    rtol: float | None = None,
    ulp: int | None = None,
    nan_equal: bool = False,
    row_size: int = 0,
    origin: int = 0,
) -> dict[str, object]:
    """Scan two equally long buffers of ``dtype`` elements, one element at a time.

    ``row_size`` > 0: the buffers hold elements ``origin ...`` of an array of
    rows of ``row_size`` elements; the rows holding a differing element are
    reported by their number in that array.
    """
    a = bytes(a)
    b = bytes(b)
    w = itemsize(dtype)
    assert len(a) == len(b)
    assert len(a) % w == 0

    n_diff = 0
    n_within = 0
    first_diff = -1
    first_any = -1
    max_delta: int | float | None = None
    max_index = -1
    n_nan = 0
    n_inf = 0
    differing: list[int] = []  # every index whose bits differ
    max_rel: float | None = None
    max_rel_index = -1
    ulps: list[int] = []  # the ULP distance of every finite differing float pair
    # per row (no rows: one), in order: its largest |A-B| and |B| over finite differing pairs
    scale: dict[int, tuple[float, float]] = {}

    for i in range(len(a) // w):
        raw_a = a[i * w : (i + 1) * w]
        raw_b = b[i * w : (i + 1) * w]
        a_bits = bits_of(dtype, raw_a)
        b_bits = bits_of(dtype, raw_b)
        if a_bits == b_bits:
            continue

        if first_any == -1:
            first_any = i
        differing.append(i)

        va = decode(dtype, raw_a)
        vb = decode(dtype, raw_b)
        d: int | float | None = None  # set only for candidates of the max

        if kind(dtype) == "float":
            if math.isnan(va) or math.isnan(vb):
                if nan_equal and math.isnan(va) and math.isnan(vb):
                    within = True
                else:
                    n_nan += 1
                    within = False
            elif math.isinf(va) or math.isinf(vb):
                n_inf += 1
                within = False
            else:
                d = abs(va - vb)  # Python float: IEEE float64, may overflow to inf
                ulps.append(ulp_distance(dtype, a_bits, b_bits))
                row = (origin + i) // row_size if row_size else 0
                old_d, old_s = scale.get(row, (0.0, 0.0))
                scale[row] = (max(old_d, d), max(old_s, abs(vb)))
                within = False
                if ulp is not None and ulp_distance(dtype, a_bits, b_bits) <= ulp:
                    within = True
                if is_close(d, vb, atol, rtol):
                    within = True
        else:
            d = abs(va - vb)  # exact Python int
            within = False
            if ulp is not None and d <= ulp:
                within = True
            if is_close_exact(d, vb, atol, rtol):
                within = True

        if d is not None and (max_delta is None or d > max_delta):
            max_delta = d
            max_index = i
        if d is not None and vb != 0:
            rel = float(d) / float(abs(vb))  # both rounded to float64 first (ints: exact before)
            if max_rel is None or rel > max_rel:
                max_rel = rel
                max_rel_index = i

        if within:
            n_within += 1
        else:
            n_diff += 1
            if first_diff == -1:
                first_diff = i

    # maximal runs of consecutive differing indices, and the distinct rows
    runs: list[tuple[int, int]] = []
    for i in differing:
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    rows: list[int] = []
    if row_size:
        for i in differing:
            row = (origin + i) // row_size
            if row not in rows:
                rows.append(row)
    # bin k: distances d with 2**k <= d < 2**(k+1), written out with a loop
    histogram = [0] * 64
    for dist in ulps:
        if dist:
            k = 0
            while 2 ** (k + 1) <= dist:
                k += 1
            histogram[k] += 1
    while histogram and histogram[-1] == 0:
        histogram.pop()
    # the first and last rows with their scale, and the rows between in ULPs of theirs
    scale_rows = None
    if scale:
        order = sorted(scale)
        p, emin = FLOAT_FORMATS[little_endian(dtype)]
        between = [in_scale_ulps(dtype, *scale[r]) for r in order[1:-1]]
        scale_rows = (
            p, emin, order[0], *scale[order[0]], order[-1], *scale[order[-1]],
            max(between) if between else None,
        )  # fmt: skip

    return {
        "n_diff": n_diff,
        "n_within_tolerance": n_within,
        "first_diff": first_diff,
        "first_any": first_any,
        "max_abs_delta": max_delta,
        "max_abs_delta_index": max_index,
        "n_nan_mismatch": n_nan,
        "n_inf_mismatch": n_inf,
        "ranges": tuple(runs[:16]),
        "n_ranges": len(runs),
        "last_range": runs[-1] if runs else None,
        "rows": tuple(rows[:16]),
        "n_rows": len(rows),
        "last_row": rows[-1] if rows else -1,
        "max_rel_delta": max_rel,
        "max_rel_delta_index": max_rel_index,
        "max_ulp": max(ulps) if ulps else None,
        "ulp_log2_histogram": tuple(histogram),
        "n_signed_zero": ulps.count(0),
        "scale_rows": scale_rows,
    }


# --- where a divergence was born (stages.roles), from the files themselves -------------


def naive_status(a: bytes | None, b: bytes | None, size: int) -> str | None:
    """A buffer's status from its bytes in runs A and B (``size``: the element
    size; no tolerance); None when neither run holds it."""
    if a is None and b is None:
        return None
    if a is None:
        return "only_in_b" if len(b) % size == 0 else "malformed"  # type: ignore[arg-type]
    if b is None:
        return "only_in_a" if len(a) % size == 0 else "malformed"
    if len(a) % size or len(b) % size:
        return "malformed"
    if len(a) != len(b):
        return "length_mismatch"
    return "equal" if a == b else "diverged"


def naive_roles(
    run_a: dict[tuple[int, str], bytes],
    run_b: dict[tuple[int, str], bytes],
    inputs: dict[str, list[str] | None],
    size: int,
) -> dict[tuple[int, str], tuple[str, list[str], list[str], int | None]]:
    """The role of every buffer that diverged and declares inputs, as issue 16
    states the rule, written out literally: (role, differing inputs, inputs
    not compared, the step ``@prev`` was read at)."""
    keys = set(run_a) | set(run_b)
    held = sorted({step for step, _ in keys})
    status = {k: naive_status(run_a.get(k), run_b.get(k), size) for k in keys}
    out = {}
    for (step, name), st in status.items():
        declared = inputs.get(name)
        if declared is None or st not in ("diverged", "length_mismatch", "only_in_a", "only_in_b"):
            continue
        earlier = [s for s in held if s < step]
        prev = earlier[-1] if earlier else None
        differing: list[str] = []
        unknown: list[str] = []
        used = None
        for written in declared:
            at_prev = written.endswith("@prev")
            base = written[: -len("@prev")] if at_prev else written
            if at_prev and step == 0:
                continue  # no earlier state: no input
            if at_prev and prev is None:
                unknown.append(written)  # before the first step held: not dumped
                continue
            if at_prev:
                used = prev
            s = status.get((prev if at_prev else step, base))
            if s in ("equal", "within_tolerance"):
                pass
            elif s in ("diverged", "length_mismatch"):
                differing.append(written)
            else:
                unknown.append(written)
        role = "receiver" if differing else "undetermined" if unknown else "origin"
        out[(step, name)] = (role, differing, unknown, used)
    return out
