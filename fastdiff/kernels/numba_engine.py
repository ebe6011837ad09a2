"""Compiled scan kernels (numba). Private: use ``fastdiff.kernels.scan_bytes``.

The kernels are pure functions over arrays and scalars, with no I/O, compiled
ahead of their first call for explicit signatures and cached on disk
(``cache=True``), so a later process loads them in milliseconds instead of
compiling. The exception is the kernel for integers with ``--rtol``, built
the same way but only when first needed, since few runs need it. They
compare bit patterns through unsigned views and never use ``fastmath`` (it
changes NaN and infinity results). ``nogil`` lets several threads scan at
once.

The kernels write their facts to two output arrays, ``out_i`` (int64 words)
and ``out_max`` (the deltas: float64 for floats, uint64 for integers), at the
places ``facts.SLOT`` gives each fact; ``ScanStats.from_slots`` reads them
back by the same table. The slots are module constants here, which numba
compiles in. numba's disk cache only notices edits to this file, not to
``facts.py``: so every kernel also writes the fingerprint of the layout it
was compiled for (``_LAYOUT``, to the last word of ``out_i``), and ``scan``
refuses results of a kernel compiled for another layout.
"""

from __future__ import annotations

import threading
from typing import Any

import numba as nb
import numpy as np

from ..dtypes import DType
from .facts import DELTA, INT, SLOT, STORE_SIZE, ScanStats, layout_fingerprint
from .types import Tolerance
from .values import float_values

_N_DIFF = SLOT["n_diff"]
_N_WITHIN = SLOT["n_within_tolerance"]
_FIRST_DIFF = SLOT["first_diff"]
_FIRST_ANY = SLOT["first_any"]
_MAX_DELTA = SLOT["max_abs_delta"]  # in out_max
_MAX_INDEX = SLOT["max_abs_delta_index"]
_N_NAN = SLOT["n_nan_mismatch"]
_N_INF = SLOT["n_inf_mismatch"]

#: Words of ``out_i`` and ``out_max``: room for any layout (a kernel loaded
#: from a stale cache must not write past them), the last for the check.
_WORDS = 32
_CHECK = _WORDS - 1
_LAYOUT = layout_fingerprint()
assert STORE_SIZE[INT] < _CHECK and STORE_SIZE[DELTA] <= _WORDS

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


def _int_sig(t: nb.types.Integer) -> nb.core.typing.templates.Signature:
    arr = _ro(t, 1, "C", readonly=True)
    return nb.void(arr, arr, nb.uint64, nb.boolean, _I64_OUT, nb.types.Array(nb.uint64, 1, "C"))


def _int_close_sig(t: nb.types.Integer) -> nb.core.typing.templates.Signature:
    arr = _ro(t, 1, "C", readonly=True)
    words = (nb.uint64,) * 6  # IntegerBound: atol_floor rtol_mant atol_scaled lshift rshift frame
    return nb.void(
        arr, arr, nb.uint64, nb.boolean, *words, _I64_OUT, nb.types.Array(nb.uint64, 1, "C")
    )


def _float_sig(bits: nb.types.Integer, vals: nb.types.Float) -> nb.core.typing.templates.Signature:
    ubits = _ro(bits, 1, "C", readonly=True)
    fvals = _ro(vals, 1, "C", readonly=True)
    return nb.void(
        ubits,
        ubits,
        fvals,
        fvals,
        nb.uint64,
        nb.uint64,
        nb.float64,
        nb.float64,
        nb.boolean,
        nb.boolean,
        nb.boolean,
        _I64_OUT,
        nb.types.Array(nb.float64, 1, "C"),
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


@nb.jit([_int_sig(t) for t in _INT_TYPES], **JIT_FLAGS)
def _scan_int(a, b, ulp, use_ulp, out_i, out_max):  # type: ignore[no-untyped-def]
    n_diff = 0
    n_within = 0
    first_diff = -1
    first_any = -1
    best = np.uint64(0)
    best_i = -1
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        if x != y:
            if first_any < 0:
                first_any = i
            # Two's complement makes the unsigned difference exact for any
            # signed pair: the true |x-y| is below 2**64.
            d = np.uint64(x) - np.uint64(y) if x > y else np.uint64(y) - np.uint64(x)
            if best_i < 0 or d > best:
                best = d
                best_i = i
            if use_ulp and d <= ulp:
                n_within += 1
            else:
                n_diff += 1
                if first_diff < 0:
                    first_diff = i
    out_i[_N_DIFF] = n_diff
    out_i[_N_WITHIN] = n_within
    out_i[_FIRST_DIFF] = first_diff
    out_i[_FIRST_ANY] = first_any
    out_i[_MAX_INDEX] = best_i
    out_i[_N_NAN] = 0
    out_i[_N_INF] = 0
    out_max[_MAX_DELTA] = best
    out_i[_CHECK] = _LAYOUT


def _scan_int_close(  # type: ignore[no-untyped-def]
    a, b, ulp, use_ulp, atol_floor, rtol_mant, atol_scaled, lshift, rshift, frame, out_i, out_max
):
    """``_scan_int`` with atol and an rtol > 0, decided exactly (``types.IntegerBound``)."""
    n_diff = 0
    n_within = 0
    first_diff = -1
    first_any = -1
    best = np.uint64(0)
    best_i = -1
    for i in range(a.shape[0]):
        x = a[i]
        y = b[i]
        if x != y:
            if first_any < 0:
                first_any = i
            d = np.uint64(x) - np.uint64(y) if x > y else np.uint64(y) - np.uint64(x)
            if best_i < 0 or d > best:
                best = d
                best_i = i
            within = d <= atol_floor or (use_ulp and d <= ulp)
            if not within and y != 0:
                m = np.uint64(0) - np.uint64(y) if y < 0 else np.uint64(y)  # |y|, exact
                within = _rtol_close(d, m, rtol_mant, atol_scaled, lshift, rshift, frame)
            if within:
                n_within += 1
            else:
                n_diff += 1
                if first_diff < 0:
                    first_diff = i
    out_i[_N_DIFF] = n_diff
    out_i[_N_WITHIN] = n_within
    out_i[_FIRST_DIFF] = first_diff
    out_i[_FIRST_ANY] = first_any
    out_i[_MAX_INDEX] = best_i
    out_i[_N_NAN] = 0
    out_i[_N_INF] = 0
    out_max[_MAX_DELTA] = best
    out_i[_CHECK] = _LAYOUT


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
        _float_sig(nb.uint16, nb.float32),
        _float_sig(nb.uint32, nb.float32),
        _float_sig(nb.uint64, nb.float64),
    ],
    **JIT_FLAGS,
)
def _scan_float(  # type: ignore[no-untyped-def]
    ua, ub, fa, fb, sign, ulp, atol, rtol, use_ulp, use_close, nan_equal, out_i, out_max
):
    n_diff = 0
    n_within = 0
    first_diff = -1
    first_any = -1
    n_nan = 0
    n_inf = 0
    best = 0.0
    best_i = -1
    mag_mask = sign - np.uint64(1)
    for i in range(ua.shape[0]):
        x = ua[i]
        y = ub[i]
        if x != y:
            if first_any < 0:
                first_any = i
            va = np.float64(fa[i])
            vb = np.float64(fb[i])
            within = False
            if np.isnan(va) or np.isnan(vb):
                if nan_equal and np.isnan(va) and np.isnan(vb):
                    within = True
                else:
                    n_nan += 1
            elif np.isinf(va) or np.isinf(vb):
                n_inf += 1
            else:
                d = abs(va - vb)
                if best_i < 0 or d > best:
                    best = d
                    best_i = i
                if use_close and d <= atol + rtol * abs(vb):
                    within = True
                elif use_ulp:
                    ma = np.uint64(x) & mag_mask
                    mb = np.uint64(y) & mag_mask
                    if (np.uint64(x) & sign) == (np.uint64(y) & sign):
                        dist = ma - mb if ma >= mb else mb - ma
                    else:
                        dist = ma + mb
                    within = dist <= ulp
            if within:
                n_within += 1
            else:
                n_diff += 1
                if first_diff < 0:
                    first_diff = i
    out_i[_N_DIFF] = n_diff
    out_i[_N_WITHIN] = n_within
    out_i[_FIRST_DIFF] = first_diff
    out_i[_FIRST_ANY] = first_any
    out_i[_MAX_INDEX] = best_i
    out_i[_N_NAN] = n_nan
    out_i[_N_INF] = n_inf
    out_max[_MAX_DELTA] = best
    out_i[_CHECK] = _LAYOUT


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


def _tol_args(tol: Tolerance) -> tuple[int, float, float, bool, bool]:
    ulp = tol.ulp if tol.ulp is not None else 0
    return ulp, tol.atol or 0.0, tol.rtol or 0.0, tol.ulp is not None, tol.uses_close


def scan(a: object, b: object, dt: DType, tol: Tolerance) -> ScanStats:
    ulp, atol, rtol, use_ulp, use_close = _tol_args(tol)
    out_i = np.zeros(_WORDS, np.int64)
    ua = _readonly(np.frombuffer(a, dt.bits))  # type: ignore[call-overload]
    ub = _readonly(np.frombuffer(b, dt.bits))  # type: ignore[call-overload]
    if dt.kind == "float":
        out_max = np.zeros(_WORDS, np.float64)
        sign = np.uint64(1) << np.uint64(8 * dt.itemsize - 1)
        _scan_float(
            ua,
            ub,
            _readonly(float_values(ua, dt)),
            _readonly(float_values(ub, dt)),
            sign,
            np.uint64(ulp),
            atol,
            rtol,
            use_ulp,
            use_close,
            tol.nan_equal,
            out_i,
            out_max,
        )
    else:
        out_max = np.zeros(_WORDS, np.uint64)
        va = _readonly(np.frombuffer(a, dt.numpy))  # type: ignore[call-overload]
        vb = _readonly(np.frombuffer(b, dt.numpy))  # type: ignore[call-overload]
        ib = tol.integer_bound
        if use_close and ib.rtol_mant:
            words = (ib.atol_floor, ib.rtol_mant, ib.atol_scaled, ib.lshift, ib.rshift, ib.frame)
            kernel = _int_close_kernel()
            kernel(va, vb, np.uint64(ulp), use_ulp, *map(np.uint64, words), out_i, out_max)
        else:
            # without rtol, d <= atol is d <= floor(atol): one limit with --ulp
            limit = max(ulp if use_ulp else 0, ib.atol_floor if use_close else 0)
            _scan_int(va, vb, np.uint64(limit), use_ulp or use_close, out_i, out_max)
    if out_i[_CHECK] != _LAYOUT:
        raise RuntimeError(
            "numba's cache holds fastdiff kernels compiled for another layout of "
            "fastdiff/kernels/facts.py; delete the numba cache files (*.nbi, *.nbc) in "
            "fastdiff/kernels/__pycache__"
        )
    return ScanStats.from_slots(out_i, out_max)
