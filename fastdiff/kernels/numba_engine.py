"""Compiled scan kernels (numba). Private: use ``fastdiff.kernels.scan_bytes``.

The kernels are pure functions over arrays and scalars, with no I/O, compiled
ahead of their first call for explicit signatures and cached on disk
(``cache=True``), so a later process loads them in milliseconds instead of
compiling. The exception is the kernel for integers with ``--rtol``, built
the same way but only when first needed, since few runs need it. They
compare bit patterns through unsigned views and never use ``fastmath`` (it
changes NaN and infinity results). ``nogil`` lets several threads scan at
once.

The kernels write their facts to four output arrays, one per store of
``facts``: ``out_i`` (int64 words: counts, indices, the listed runs and
rows, the ULP histogram), ``out_max`` (the deltas: float64 for floats,
uint64 for integers), ``out_u`` (uint64: the largest ULP distance) and
``out_r`` (float64: the largest relative delta), at the places
``facts.SLOT`` gives each fact; ``ScanStats.from_slots`` reads them back by
the same table. Each differing element is looked at once: its run and row,
its delta, ULP distance and relative delta are taken in the same pass; a
float's value is read from its bits (no second view of the buffers), and
blocks of equal elements are passed over by a vectorised test. The 8-bit
floats are read from a table of their 256 values (``values.fp8_table``).
numba reads arrays only in the machine's byte order: big-endian floats are
read as they lie and their bytes reversed in the kernel where they differ;
big-endian integers are copied byte-swapped, piece by piece. The
slots are module constants here, which numba compiles in. numba's disk cache
only notices edits to this file, not to
``facts.py``: so every kernel also writes the fingerprint of the layout it
was compiled for (``_LAYOUT``, to the last word of ``out_i``), and ``scan``
refuses results of a kernel compiled for another layout.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros, viewer

from ..dtypes import DTYPES, FP8, DType, float_format
from ..model.facts import (
    DELTA,
    HIST_BINS,
    INT,
    LISTED,
    NO_UINT,
    REAL,
    SLOT,
    STORE_SIZE,
    UINT,
    ScanStats,
    layout_fingerprint,
)
from ..model.tolerance import Tolerance
from .values import fp8_table, native

_N_DIFF = SLOT["n_diff"]
_N_WITHIN = SLOT["n_within_tolerance"]
_FIRST_DIFF = SLOT["first_diff"]
_FIRST_ANY = SLOT["first_any"]
_MAX_DELTA = SLOT["max_abs_delta"]  # in out_max
_MAX_INDEX = SLOT["max_abs_delta_index"]
_N_NAN = SLOT["n_nan_mismatch"]
_N_INF = SLOT["n_inf_mismatch"]
_RANGES = SLOT["ranges"]  # LISTED (start, stop) pairs
_N_RANGES = SLOT["n_ranges"]
_LAST_RANGE = SLOT["last_range"]  # two words
_ROWS = SLOT["rows"]  # LISTED row numbers
_N_ROWS = SLOT["n_rows"]
_LAST_ROW = SLOT["last_row"]
_MAX_REL = SLOT["max_rel_delta"]  # in out_r
_MAX_REL_INDEX = SLOT["max_rel_delta_index"]
_MAX_ULP = SLOT["max_ulp"]  # in out_u
_HIST = SLOT["ulp_log2_histogram"]  # HIST_BINS words
_N_SIGNED_ZERO = SLOT["n_signed_zero"]
_SCALE = SLOT["scale_rows"]  # SCALE_WORDS words in out_r
_LISTED = LISTED

#: Words of the output arrays: room for any layout (a kernel loaded from a
#: stale cache must not write past them); the last word of ``out_i`` is for
#: the check.
_WORDS = 256
_SMALL = 16
_CHECK = _WORDS - 1
_LAYOUT = layout_fingerprint()
assert STORE_SIZE[INT] < _CHECK and HIST_BINS == 64
assert max(STORE_SIZE[DELTA], STORE_SIZE[UINT], STORE_SIZE[REAL]) <= _SMALL

#: Every numba flag of the project, in one place.
JIT_FLAGS = {
    "nopython": True,
    "nogil": True,
    "cache": True,
    "fastmath": False,
    "error_model": "numpy",
}

_ro = nb.types.Array
_I64_OUT = nb.types.Array(nb.int64, 1, "C")
_U64_OUT = nb.types.Array(nb.uint64, 1, "C")
_F64_OUT = nb.types.Array(nb.float64, 1, "C")
#: Where the rows are: elements per row (0: no rows) and the piece's first element.
_ROW_ARGS = (nb.int64, nb.int64)


def _int_sig(t: nb.types.Integer) -> nb.core.typing.templates.Signature:
    arr = _ro(t, 1, "C", readonly=True)
    return nb.void(arr, arr, nb.uint64, nb.boolean, *_ROW_ARGS, _I64_OUT, _U64_OUT, _F64_OUT)


def _int_close_sig(t: nb.types.Integer) -> nb.core.typing.templates.Signature:
    arr = _ro(t, 1, "C", readonly=True)
    words = (nb.uint64,) * 6  # IntegerBound: atol_floor rtol_mant atol_scaled lshift rshift frame
    return nb.void(
        arr, arr, nb.uint64, nb.boolean, *words, *_ROW_ARGS, _I64_OUT, _U64_OUT, _F64_OUT
    )


def _float_sig(bits: nb.types.Integer) -> nb.core.typing.templates.Signature:
    ubits = _ro(bits, 1, "C", readonly=True)
    return nb.void(
        ubits,
        ubits,
        _ro(nb.float64, 1, "C", readonly=True),  # 8-bit floats: the value of each pattern
        nb.boolean,  # bf16 (16-bit bits: bf16, else f16)
        nb.boolean,  # swap: big-endian elements
        nb.uint64,  # ulp
        nb.float64,
        nb.float64,
        nb.boolean,
        nb.boolean,
        nb.boolean,
        *_ROW_ARGS,
        nb.int64,  # the format's mantissa bits
        nb.int64,  # and smallest normal exponent: its ULP at a scale
        _I64_OUT,
        _F64_OUT,
        _U64_OUT,
        _F64_OUT,
    )


_INT_TYPES = (nb.uint8, nb.int8, nb.uint16, nb.int16, nb.uint32, nb.int32, nb.uint64, nb.int64)

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S64 = np.uint64(64)
_S128 = np.uint64(128)


# The exact rtol test for integers is built on first use: loading its eight
# compiled variants from the cache would cost every numba start tens of ms.
# Its helpers have no signature of their own: they are compiled, for uint64
# arguments only, into the kernel that calls them.


@nb.jit(**JIT_FLAGS)
def _shr128(hi, lo, k):  # type: ignore[no-untyped-def]
    """(hi, lo) >> k for 0 <= k <= 128 (LLVM leaves a shift by 64 or more undefined)."""
    if k == 0:
        return hi, lo
    if k >= _S128:
        return np.uint64(0), np.uint64(0)
    if k >= _S64:
        return np.uint64(0), hi >> (k - _S64)
    return hi >> k, (lo >> k) | (hi << (_S64 - k))


@nb.jit(**JIT_FLAGS)
def _rtol_close(d, m, rtol_mant, atol_scaled, lshift, rshift, frame):  # type: ignore[no-untyped-def]
    """Exactly ``d <= atol + rtol*m`` for d > atol, rtol > 0 and m > 0:
    steps 2 and 3 of ``types.IntegerBound``, in two-word arithmetic."""
    # P = rtol_mant * m, below 2**117, from four 32x32-bit products
    rl = rtol_mant & _M32
    rh = rtol_mant >> _S32
    ml = m & _M32
    mh = m >> _S32
    ll = rl * ml
    lh = rl * mh
    hl = rh * ml
    mid = (ll >> _S32) + (lh & _M32) + (hl & _M32)
    lo = (ll & _M32) | (mid << _S32)
    hi = rh * mh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)
    if lshift > 0:
        # rtol >= 2: frame and rshift are 0; a product reaching 2**64 is within
        if hi != 0 or lshift >= _S64 or (lo >> (_S64 - lshift)) != 0:
            return True
        lo = lo << lshift
    hi, lo = _shr128(hi, lo, rshift)
    total = lo + atol_scaled
    if total < lo:
        hi += np.uint64(1)
    hi, total = _shr128(hi, total, frame)
    return hi != 0 or total >= d


# --- state kept in out_i, and where differing elements are -----------------------
# The loops keep only what changes at nearly every differing element in local
# variables (counts, maxima, the end of the current run and row); what changes
# rarely (the runs and rows listed and counted, NaN, infinity and signed-zero
# counts, the first indices) lives in ``out_i`` and is updated there, on the
# rare path: fewer live variables keep the loop out of the stack.
#
# A run [start, stop) of consecutive differing elements: ``_new_run`` lists it
# while fewer than LISTED are, and writes the stop of the one before; the
# first run starts at ``first_any``. A row (first-axis index, absolute:
# origin + i): ``_new_row`` costs one division per row, not per element;
# ``row_end`` is where the current row ends (out of reach without rows).
_NO_ROWS = 1 << 62
_NO_UINT = np.uint64(NO_UINT)


@nb.jit(**JIT_FLAGS)
def _exponent_mask(width, bf16):  # type: ignore[no-untyped-def]
    """The exponent bits of a float format of 2 bytes or more: all set for
    infinities and NaNs (the 8-bit floats are read from a table instead)."""
    if width == 8:
        return np.uint64(0x7FF0000000000000)
    if width == 4:
        return np.uint64(0x7F800000)
    return np.uint64(0x7F80) if bf16 else np.uint64(0x7C00)


@nb.jit(**JIT_FLAGS)
def _value(u, width, bf16):  # type: ignore[no-untyped-def]
    """The value of a float's bits ``u`` (uint64) as float64, exactly (NaN stays NaN)."""
    if width == 8:
        return viewer(u, nb.float64)
    if width == 4:
        return np.float64(viewer(np.uint32(u), nb.float32))
    if bf16:  # the top half of an f32
        return np.float64(viewer(np.uint32(np.uint32(u) << np.uint32(16)), nb.float32))
    h = np.uint32(u)  # f16, widened by hand
    s = (h >> np.uint32(15)) << np.uint32(31)
    e = (h >> np.uint32(10)) & np.uint32(0x1F)
    m = h & np.uint32(0x3FF)
    if e == 0:  # zero or subnormal: m * 2**-24, exact
        v = np.float64(m) * 5.9604644775390625e-08
        return -v if s else v
    if e == 31:  # infinity or NaN
        bits = s | np.uint32(0x7F800000) | (m << np.uint32(13))
    else:
        bits = s | ((e + np.uint32(112)) << np.uint32(23)) | (m << np.uint32(13))
    return np.float64(viewer(np.uint32(bits), nb.float32))


@nb.jit(**JIT_FLAGS)
def _bswap(u, width):  # type: ignore[no-untyped-def]
    """The bit pattern ``u`` (uint64) of a ``width``-byte element with its bytes reversed."""
    out = np.uint64(0)
    for _ in range(width):
        out = (out << np.uint64(8)) | (u & np.uint64(0xFF))
        u >>= np.uint64(8)
    return out


#: Elements compared at once before any of them is looked at: a block whose
#: bits all agree costs one vectorised pass (unsigned indices: no negative
#: index to allow for), so the equal stretches between differing elements
#: stay cheap however much the loop over a block with differences holds.
#: Measured with benchmarks/bench_anatomy.py: 64 beats 16, 32 and no blocks
#: with 1% of the elements differing, at a small cost when all differ.
_BLOCK = 64


@nb.jit(**JIT_FLAGS)
def _same_block(a, b, start):  # type: ignore[no-untyped-def]
    """Whether the _BLOCK elements from ``start`` on are all equal."""
    acc = np.uint64(0)
    for k in range(_BLOCK):
        j = np.uint64(start + k)
        acc |= np.uint64(a[j] ^ b[j])
    return acc == 0


@nb.jit(**JIT_FLAGS)
def _begin(out_i):  # type: ignore[no-untyped-def]
    """The words of ``out_i`` that do not start at 0."""
    out_i[_FIRST_ANY] = -1
    out_i[_FIRST_DIFF] = -1
    out_i[_LAST_ROW] = -1


@nb.jit(**JIT_FLAGS)
def _new_run(i, run_stop, out_i):  # type: ignore[no-untyped-def]
    n = out_i[_N_RANGES]
    if n == 0:
        out_i[_FIRST_ANY] = i
    elif n <= _LISTED:
        out_i[_RANGES + 2 * n - 1] = run_stop
    if n < _LISTED:
        out_i[_RANGES + 2 * n] = i
    out_i[_N_RANGES] = n + 1
    out_i[_LAST_RANGE] = i


@nb.jit(**JIT_FLAGS)
def _new_row(i, row_size, origin, out_i):  # type: ignore[no-untyped-def]
    row = (origin + i) // row_size
    n = out_i[_N_ROWS]
    if n < _LISTED:
        out_i[_ROWS + n] = row
    out_i[_N_ROWS] = n + 1
    out_i[_LAST_ROW] = row
    return (row + 1) * row_size - origin


@nb.jit(**JIT_FLAGS)
def _end(run_stop, n_diff, n_within, best_i, best_rel, best_rel_i, out_i, out_r):  # type: ignore[no-untyped-def]
    n = out_i[_N_RANGES]
    if 0 < n <= _LISTED:
        out_i[_RANGES + 2 * n - 1] = run_stop
    out_i[_LAST_RANGE + 1] = run_stop
    out_i[_N_DIFF] = n_diff
    out_i[_N_WITHIN] = n_within
    out_i[_MAX_INDEX] = best_i
    out_i[_MAX_REL_INDEX] = best_rel_i
    out_r[_MAX_REL] = best_rel if best_rel_i >= 0 else 0.0
    out_i[_CHECK] = _LAYOUT


@nb.jit(**JIT_FLAGS)
def _scale_ulp(d, s, p, emin):  # type: ignore[no-untyped-def]
    """``facts.scale_ulp``: the difference d in ULPs of the scale s (>= 0)."""
    e = emin
    if s > 0.0 and np.isfinite(s):
        e = max(math.frexp(s)[1] - 1, emin)
    return d / math.ldexp(1.0, e - p)


@nb.jit(**JIT_FLAGS)
def _scale_begin(p, emin, out_r):  # type: ignore[no-untyped-def]
    out_r[_SCALE] = p
    out_r[_SCALE + 1] = emin
    out_r[_SCALE + 2] = -1.0  # no first row
    out_r[_SCALE + 5] = -1.0  # no last row
    out_r[_SCALE + 8] = -1.0  # nothing between


@nb.jit(**JIT_FLAGS)
def _scale_row(row, d, s, p, emin, out_r):  # type: ignore[no-untyped-def]
    """A row's scale is complete: the first, else the last so far (the one
    it replaces counts in the inner maximum)."""
    if out_r[_SCALE + 2] < 0.0:
        out_r[_SCALE + 2] = row
        out_r[_SCALE + 3] = d
        out_r[_SCALE + 4] = s
        return
    if out_r[_SCALE + 5] >= 0.0:
        out_r[_SCALE + 8] = max(
            out_r[_SCALE + 8], _scale_ulp(out_r[_SCALE + 6], out_r[_SCALE + 7], p, emin)
        )
    out_r[_SCALE + 5] = row
    out_r[_SCALE + 6] = d
    out_r[_SCALE + 7] = s


@nb.jit(**JIT_FLAGS)
def _scale_end(out_r):  # type: ignore[no-untyped-def]
    if out_r[_SCALE + 5] < 0.0 and out_r[_SCALE + 2] >= 0.0:  # one row: it is the last too
        for k in range(3):
            out_r[_SCALE + 5 + k] = out_r[_SCALE + 2 + k]


@nb.jit(**JIT_FLAGS)
def _int_rel(d, y):  # type: ignore[no-untyped-def]
    """|x-y| / |y| in float64 for an integer delta d and y != 0 (|y| exact as uint64)."""
    m = np.uint64(0) - np.uint64(y) if y < 0 else np.uint64(y)
    return np.float64(d) / np.float64(m)


@nb.jit([_int_sig(t) for t in _INT_TYPES], **JIT_FLAGS)
def _scan_int(a, b, ulp, use_ulp, row_size, origin, out_i, out_max, out_r):  # type: ignore[no-untyped-def]
    _begin(out_i)
    n_diff = 0
    n_within = 0
    best = np.uint64(0)  # every differing pair has a delta >= 1
    best_i = -1
    best_rel = 0.0  # and a relative delta > 0
    best_rel_i = -1
    run_stop = -1
    row_end = 0 if row_size > 0 else _NO_ROWS
    n = a.shape[0]
    for block in range((n + _BLOCK - 1) // _BLOCK):
        start = block * _BLOCK
        size = min(_BLOCK, n - start)
        if size == _BLOCK and _same_block(a, b, start):
            continue
        for k in range(size):
            i = start + k
            x = a[np.uint64(i)]
            y = b[np.uint64(i)]
            if x != y:
                if i != run_stop:
                    _new_run(i, run_stop, out_i)
                run_stop = i + 1
                if i >= row_end:
                    row_end = _new_row(i, row_size, origin, out_i)
                # Two's complement makes the unsigned difference exact for any
                # signed pair: the true |x-y| is below 2**64.
                d = np.uint64(x) - np.uint64(y) if x > y else np.uint64(y) - np.uint64(x)
                if d > best:
                    best = d
                    best_i = i
                if y != 0:
                    rel = _int_rel(d, y)
                    if rel > best_rel:
                        best_rel = rel
                        best_rel_i = i
                if use_ulp and d <= ulp:
                    n_within += 1
                else:
                    if n_diff == 0:
                        out_i[_FIRST_DIFF] = i
                    n_diff += 1
    out_max[_MAX_DELTA] = best
    _end(run_stop, n_diff, n_within, best_i, best_rel, best_rel_i, out_i, out_r)


def _scan_int_close(  # type: ignore[no-untyped-def]
    a, b, ulp, use_ulp, atol_floor, rtol_mant, atol_scaled, lshift, rshift, frame,
    row_size, origin, out_i, out_max, out_r,
):  # fmt: skip
    """``_scan_int`` with atol and an rtol > 0, decided exactly (``types.IntegerBound``)."""
    _begin(out_i)
    n_diff = 0
    n_within = 0
    best = np.uint64(0)
    best_i = -1
    best_rel = 0.0
    best_rel_i = -1
    run_stop = -1
    row_end = 0 if row_size > 0 else _NO_ROWS
    n = a.shape[0]
    for block in range((n + _BLOCK - 1) // _BLOCK):
        start = block * _BLOCK
        size = min(_BLOCK, n - start)
        if size == _BLOCK and _same_block(a, b, start):
            continue
        for k in range(size):
            i = start + k
            x = a[np.uint64(i)]
            y = b[np.uint64(i)]
            if x != y:
                if i != run_stop:
                    _new_run(i, run_stop, out_i)
                run_stop = i + 1
                if i >= row_end:
                    row_end = _new_row(i, row_size, origin, out_i)
                d = np.uint64(x) - np.uint64(y) if x > y else np.uint64(y) - np.uint64(x)
                if d > best:
                    best = d
                    best_i = i
                if y != 0:
                    rel = _int_rel(d, y)
                    if rel > best_rel:
                        best_rel = rel
                        best_rel_i = i
                within = d <= atol_floor or (use_ulp and d <= ulp)
                if not within and y != 0:
                    m = np.uint64(0) - np.uint64(y) if y < 0 else np.uint64(y)  # |y|, exact
                    within = _rtol_close(d, m, rtol_mant, atol_scaled, lshift, rshift, frame)
                if within:
                    n_within += 1
                else:
                    if n_diff == 0:
                        out_i[_FIRST_DIFF] = i
                    n_diff += 1
    out_max[_MAX_DELTA] = best
    _end(run_stop, n_diff, n_within, best_i, best_rel, best_rel_i, out_i, out_r)


_close_lock = threading.Lock()
_close_kernel: list[Any] = []  # the compiled _scan_int_close, once built


def _int_close_kernel() -> Any:
    """``_scan_int_close`` compiled for every integer type (or loaded from the cache)."""
    with _close_lock:
        if not _close_kernel:
            sigs = [_int_close_sig(t) for t in _INT_TYPES]
            _close_kernel.append(nb.jit(sigs, **JIT_FLAGS)(_scan_int_close))
        return _close_kernel[0]


@nb.jit(
    [
        _float_sig(nb.uint8),
        _float_sig(nb.uint16),
        _float_sig(nb.uint32),
        _float_sig(nb.uint64),
    ],
    **JIT_FLAGS,
)
def _scan_float(  # type: ignore[no-untyped-def]
    ua, ub, table, bf16, swap, ulp, atol, rtol, use_ulp, use_close, nan_equal, row_size, origin,
    p, emin, out_i, out_max, out_u, out_r,
):  # fmt: skip
    width = ua.itemsize  # bytes per element: the float format, with bf16
    sign = np.uint64(1) << np.uint64(8 * width - 1)
    mag_mask = sign - np.uint64(1)
    exp_mask = _exponent_mask(width, bf16)
    _begin(out_i)
    _scale_begin(p, emin, out_r)
    # the current row's largest |A-B| and |B| over its finite differing pairs
    # (-1: none yet); a row's scale is handed on where the next row begins
    row_d = -1.0
    row_s = 0.0
    n_diff = 0
    n_within = 0
    best = -1.0  # below every delta (a delta is >= 0, or inf)
    best_i = -1
    best_rel = -1.0
    best_rel_i = -1
    best_ulp = np.uint64(0)
    run_stop = -1
    row_end = 0 if row_size > 0 else _NO_ROWS
    hist_top = np.uint64(_HIST + 63)
    n = ua.shape[0]
    for block in range((n + _BLOCK - 1) // _BLOCK):
        start = block * _BLOCK
        size = min(_BLOCK, n - start)
        if size == _BLOCK and _same_block(ua, ub, start):
            continue
        for k in range(size):
            i = start + k
            x = ua[np.uint64(i)]
            y = ub[np.uint64(i)]
            if x != y:
                if i != run_stop:
                    _new_run(i, run_stop, out_i)
                run_stop = i + 1
                if i >= row_end:
                    if row_d >= 0.0:
                        _scale_row(out_i[_LAST_ROW], row_d, row_s, p, emin, out_r)
                        row_d = -1.0
                        row_s = 0.0
                    row_end = _new_row(i, row_size, origin, out_i)
                ux = np.uint64(x)
                uy = np.uint64(y)
                if swap:  # big-endian: equal bytes are equal elements, values need the order
                    ux = _bswap(ux, width)
                    uy = _bswap(uy, width)
                if width == 1:  # an 8-bit float: its value from the format's table
                    va = table[ux]
                    vb = table[uy]
                    special = not (np.isfinite(va) and np.isfinite(vb))
                else:
                    va = _value(ux, width, bf16)
                    vb = _value(uy, width, bf16)
                    # all exponent bits set on a side: an infinity or a NaN
                    special = (ux & exp_mask) == exp_mask or (uy & exp_mask) == exp_mask
                within = False
                if special:
                    if np.isnan(va) or np.isnan(vb):
                        if nan_equal and np.isnan(va) and np.isnan(vb):
                            within = True
                        else:
                            out_i[_N_NAN] += 1
                    else:
                        out_i[_N_INF] += 1
                else:
                    d = abs(va - vb)
                    if d > best:
                        best = d
                        best_i = i
                    if d > row_d:
                        row_d = d
                    if abs(vb) > row_s:
                        row_s = abs(vb)
                    # the ULP distance: sign-magnitude bits as ordered integers;
                    # computed without branches (which side is larger, and whether
                    # the signs agree, is a coin toss in differing data)
                    ma = ux & mag_mask
                    mb = uy & mag_mask
                    same = np.uint64(0) - np.uint64((ux ^ uy) < sign)  # all ones if same sign
                    dist = ((max(ma, mb) - min(ma, mb)) & same) | ((ma + mb) & ~same)
                    if dist == 0:
                        out_i[_N_SIGNED_ZERO] += 1  # -0.0 against +0.0
                    else:
                        out_i[hist_top - leading_zeros(dist)] += 1
                    best_ulp = max(best_ulp, dist)
                    if vb != 0.0:
                        rel = d / abs(vb)
                        if rel > best_rel:
                            best_rel = rel
                            best_rel_i = i
                    if use_close and d <= atol + rtol * abs(vb):
                        within = True
                    elif use_ulp:
                        within = dist <= ulp
                if within:
                    n_within += 1
                else:
                    if n_diff == 0:
                        out_i[_FIRST_DIFF] = i
                    n_diff += 1
    out_max[_MAX_DELTA] = best if best_i >= 0 else 0.0
    out_u[_MAX_ULP] = best_ulp if best_i >= 0 else _NO_UINT
    if row_d >= 0.0:
        _scale_row(out_i[_LAST_ROW] if row_size > 0 else 0, row_d, row_s, p, emin, out_r)
    _scale_end(out_r)
    _end(run_stop, n_diff, n_within, best_i, best_rel, best_rel_i, out_i, out_r)


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


#: The table argument of the float kernel for formats that have none.
_NO_TABLE = _readonly(np.zeros(1, np.float64))


def _tol_args(tol: Tolerance) -> tuple[int, float, float, bool, bool]:
    ulp = tol.ulp if tol.ulp is not None else 0
    return ulp, tol.atol or 0.0, tol.rtol or 0.0, tol.ulp is not None, tol.uses_close


def scan(
    a: object, b: object, dt: DType, tol: Tolerance, row_size: int = 0, origin: int = 0
) -> ScanStats:
    ulp, atol, rtol, use_ulp, use_close = _tol_args(tol)
    out_i = np.zeros(_WORDS, np.int64)
    out_u = np.full(_SMALL, _NO_UINT, np.uint64)  # integer kernels leave max_ulp none
    out_r = np.zeros(_SMALL, np.float64)
    out_r[_SCALE + 2] = -1.0  # no scale rows (integer kernels leave it so)
    if dt.kind == "float":
        # big-endian elements are read as they lie (numba has no non-native
        # arrays) and byte-swapped in the kernel, only where they differ
        little = DTYPES[dt.base].bits
        ua = _readonly(np.frombuffer(a, little))  # type: ignore[call-overload]
        ub = _readonly(np.frombuffer(b, little))  # type: ignore[call-overload]
        table = fp8_table(dt.base) if dt.base in FP8 else _NO_TABLE
        out_max = np.zeros(_SMALL, np.float64)
        p, emin = float_format(dt)
        _scan_float(
            ua, ub, table, dt.base == "bf16", dt.swapped, np.uint64(ulp), atol, rtol, use_ulp,
            use_close, tol.nan_equal, row_size, origin, p, emin, out_i, out_max, out_u, out_r,
        )  # fmt: skip
    else:
        # big-endian integers: copied byte-swapped, piece by piece as the scan
        # stage hands them over (the kernels compare values of their own type)
        out_max = np.zeros(_SMALL, np.uint64)
        va = _readonly(native(np.frombuffer(a, dt.numpy)))  # type: ignore[call-overload]
        vb = _readonly(native(np.frombuffer(b, dt.numpy)))  # type: ignore[call-overload]
        ib = tol.integer_bound
        if use_close and ib.rtol_mant:
            words = (ib.atol_floor, ib.rtol_mant, ib.atol_scaled, ib.lshift, ib.rshift, ib.frame)
            kernel = _int_close_kernel()
            kernel(
                va, vb, np.uint64(ulp), use_ulp, *map(np.uint64, words), row_size, origin,
                out_i, out_max, out_r,
            )  # fmt: skip
        else:
            # without rtol, d <= atol is d <= floor(atol): one limit with --ulp
            limit = max(ulp if use_ulp else 0, ib.atol_floor if use_close else 0)
            _scan_int(
                va, vb, np.uint64(limit), use_ulp or use_close, row_size, origin, out_i, out_max,
                out_r,
            )  # fmt: skip
    if out_i[_CHECK] != _LAYOUT:
        raise RuntimeError(
            "numba's cache holds fastdiff kernels compiled for another layout of "
            "fastdiff/model/facts.py; delete the numba cache files (*.nbi, *.nbc) in "
            "fastdiff/kernels/__pycache__"
        )
    return ScanStats.from_slots({INT: out_i, DELTA: out_max, UINT: out_u, REAL: out_r})
