"""The numpy twin of the compiled kernels. Private: use ``fastdiff.kernels.scan_bytes``.

It computes exactly what ``numba_engine`` computes, vectorised: one
bitwise comparison over the unsigned views, then every further step only on
the indices that differ, so its cost follows the number of differences. It
needs numpy (about 0.2 s to import) but not numba (about 0.5 s more plus
loading the kernels), which makes it the cheaper engine when the differing
region is small.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import float_format
from ..model.facts import LISTED, ScanStats
from .values import float64_values, native

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..dtypes import DType
    from ..model.tolerance import IntegerBound, Tolerance


def _first(idx: np.ndarray, mask: np.ndarray) -> int:
    hits = idx[mask]
    return int(hits[0]) if hits.size else -1


def _ulp_distance(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """The ULP distances of float bit patterns (unsigned, of their own width:
    no distance exceeds it): |ma - mb| for equal signs, ma + mb otherwise."""
    sign = xa.dtype.type(1) << xa.dtype.type(8 * xa.itemsize - 1)
    ma = xa & (sign - xa.dtype.type(1))
    mb = xb & (sign - xb.dtype.type(1))
    apart = np.maximum(ma, mb) - np.minimum(ma, mb)
    return np.where((xa ^ xb) >= sign, ma + mb, apart)


_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


def _shr128(hi: np.ndarray, lo: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Two-word numbers (hi, lo) shifted right by 0 <= k <= 128."""
    if k == 0:
        return hi, lo
    if k >= 128:
        return np.zeros_like(hi), np.zeros_like(lo)
    if k >= 64:
        return np.zeros_like(hi), hi >> np.uint64(k - 64)
    s, back = np.uint64(k), np.uint64(64 - k)
    return hi >> s, (lo >> s) | (hi << back)


def _int_close(d: np.ndarray, m: np.ndarray, ib: IntegerBound) -> np.ndarray:
    """Exactly ``d <= atol + rtol*m`` for uint64 deltas d >= 1 and magnitudes m.

    ``types.IntegerBound`` in two-word arithmetic, as in the compiled kernel.
    """
    within = d <= np.uint64(ib.atol_floor)
    if ib.rtol_mant == 0:
        return within
    todo = np.flatnonzero(~within & (m != 0))
    if not todo.size:
        return within
    dt, mt = d[todo], m[todo]
    r = np.uint64(ib.rtol_mant)
    rl, rh = r & _M32, r >> _S32
    ml, mh = mt & _M32, mt >> _S32
    ll, lh, hl = rl * ml, rl * mh, rh * ml
    mid = (ll >> _S32) + (lh & _M32) + (hl & _M32)
    lo = (ll & _M32) | (mid << _S32)
    hi = rh * mh + (lh >> _S32) + (hl >> _S32) + (mid >> _S32)
    if ib.lshift > 0:
        # rtol >= 2: frame and rshift are 0; a product reaching 2**64 is within
        if ib.lshift >= 64:
            big = np.ones(todo.size, dtype=bool)
        else:
            big = (hi != 0) | ((lo >> np.uint64(64 - ib.lshift)) != 0)
        lo = lo << np.uint64(min(ib.lshift, 63))
        hi = np.where(big, np.uint64(1), np.uint64(0))
    hi, lo = _shr128(hi, lo, ib.rshift)
    total = lo + np.uint64(ib.atol_scaled)
    hi = hi + (total < lo).astype(np.uint64)
    hi, total = _shr128(hi, total, ib.frame)
    within[todo] = (hi != 0) | (total >= dt)
    return within


def _positions(idx: np.ndarray, row_size: int, origin: int) -> dict[str, object]:
    """The runs and rows facts of the sorted differing indices ``idx`` (not empty)."""
    breaks = np.flatnonzero(np.diff(idx) != 1)
    starts = np.concatenate((idx[:1], idx[breaks + 1]))
    stops = np.concatenate((idx[breaks], idx[-1:])) + 1
    n = int(starts.size)
    facts: dict[str, object] = {
        "ranges": tuple(zip(starts[:LISTED].tolist(), stops[:LISTED].tolist(), strict=True)),
        "n_ranges": n,
        "last_range": (int(starts[-1]), int(stops[-1])),
    }
    if row_size > 0:
        rows = (idx + origin) // row_size
        distinct = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
        facts.update(
            rows=tuple(distinct[:LISTED].tolist()),
            n_rows=int(distinct.size),
            last_row=int(distinct[-1]),
        )
    return facts


def _log2_histogram(dist: np.ndarray) -> tuple[int, ...]:
    """Bin k counts the distances d >= 1 with 2**k <= d < 2**(k+1), exactly:
    the exponent of d as a float64 (0 for d = 0, left out), less one where d
    rounded up to the next power of two (only possible from 2**53 on)."""
    bits = dist.astype(np.float64).view(np.uint64)
    k = (bits >> np.uint64(52)).astype(np.intp) - 1022  # bin k + 1, and 0 for d = 0
    np.maximum(k, 0, out=k)
    if dist.dtype.itemsize == 8 and int(dist.max()) >= 1 << 53:
        np.minimum(k, 64, out=k)
        rounded_up = np.left_shift(np.uint64(1), (k - 1).clip(0).astype(np.uint64)) > dist
        k -= rounded_up & (k > 0)
    hist = np.bincount(k, minlength=1)[1:]
    return tuple(np.trim_zeros(hist, "b").tolist())


def _scale_rows(
    at: np.ndarray, delta: np.ndarray, mag_b: np.ndarray, row_size: int, origin: int,
    p: int, emin: int,
) -> tuple[object, ...]:  # fmt: skip
    """``scale_rows`` of the finite differing pairs at (sorted) ``at``: per row
    (1-D: one row), the largest |A-B| and |B|; the rows between the first and
    the last in ULPs of their scale."""
    if row_size > 0:
        rows = (at + origin) // row_size
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        row_ids = rows[starts]
        d_max = np.maximum.reduceat(delta, starts)
        s_max = np.maximum.reduceat(mag_b, starts)
    else:
        row_ids = np.zeros(1, np.int64)
        d_max = delta.max(keepdims=True)
        s_max = mag_b.max(keepdims=True)
    inner = None
    if row_ids.size > 2:
        s = s_max[1:-1]
        _, e = np.frexp(s)  # s = m * 2**e, 0.5 <= m < 1: exponent e - 1
        e = np.where(s > 0.0, np.maximum(e - 1, emin), emin)
        with np.errstate(all="ignore"):  # a quotient beyond float64 is inf, as in IEEE
            inner = float((d_max[1:-1] / np.ldexp(1.0, e - p)).max())
    first = (int(row_ids[0]), float(d_max[0]), float(s_max[0]))
    last = (int(row_ids[-1]), float(d_max[-1]), float(s_max[-1]))
    return (p, emin, *first, *last, inner)


def _argmax(values: np.ndarray, among: np.ndarray) -> tuple[np.ndarray, int]:
    """(the largest of ``values[among]``, its position in ``values``); the first on ties."""
    k = int(among[np.argmax(values[among])])
    return values[k], k


def scan(
    a: object, b: object, dt: DType, tol: Tolerance, row_size: int = 0, origin: int = 0
) -> ScanStats:
    ua = np.frombuffer(a, dt.bits)  # type: ignore[call-overload]
    ub = np.frombuffer(b, dt.bits)  # type: ignore[call-overload]
    idx = np.flatnonzero(ua != ub)
    if idx.size == 0:
        return ScanStats()
    xa = native(ua[idx])  # big-endian elements: their patterns, in machine order
    xb = native(ub[idx])
    within = np.zeros(idx.size, dtype=bool)
    n_nan = n_inf = n_zero = 0
    max_delta: float | int | None = None
    max_index = -1
    rel_facts: dict[str, object] = {}
    ulp_facts: dict[str, object] = {}
    if dt.kind == "float":
        va = float64_values(xa, dt)
        vb = float64_values(xb, dt)
        nan_a = np.isnan(va)
        nan_b = np.isnan(vb)
        any_nan = nan_a | nan_b
        if tol.nan_equal:
            within |= nan_a & nan_b
            n_nan = int(np.count_nonzero(any_nan & ~(nan_a & nan_b)))
        else:
            n_nan = int(np.count_nonzero(any_nan))
        any_inf = ~any_nan & (np.isinf(va) | np.isinf(vb))
        n_inf = int(np.count_nonzero(any_inf))
        finite = ~(any_nan | any_inf)
        if n_nan or n_inf or tol.nan_equal:
            cand: np.ndarray | slice = np.flatnonzero(finite)
            fa, fb, fxa, fxb = va[cand], vb[cand], xa[cand], xb[cand]
        else:  # the usual case: every differing pair is finite, no copies
            cand = slice(None)
            fa, fb, fxa, fxb = va, vb, xa, xb
        if fa.size:
            with np.errstate(all="ignore"):
                delta = np.abs(fa - fb)
            if tol.uses_close:
                with np.errstate(all="ignore"):
                    bound = (tol.atol or 0.0) + (tol.rtol or 0.0) * np.abs(fb)
                within[cand] |= delta <= bound
            dist = _ulp_distance(fxa, fxb)
            if tol.ulp is not None:
                within[cand] |= dist <= np.uint64(tol.ulp)
            at = idx[cand]  # the element index of each finite pair
            k = int(np.argmax(delta))
            max_delta, max_index = float(delta[k]), int(at[k])
            ulp_facts = {
                "max_ulp": int(dist.max()),
                "ulp_log2_histogram": _log2_histogram(dist),
                "scale_rows": _scale_rows(
                    at, delta, np.abs(fb), row_size, origin, *float_format(dt)
                ),
            }
            n_zero = int(dist.size - np.count_nonzero(dist))
            with np.errstate(all="ignore"):
                rel = delta / np.abs(fb)
            rel[fb == 0.0] = -1.0  # no relative delta against 0
            k = int(np.argmax(rel))
            if rel[k] >= 0:
                rel_facts = {"max_rel_delta": float(rel[k]), "max_rel_delta_index": int(at[k])}
    else:
        va = native(np.frombuffer(a, dt.numpy)[idx])  # type: ignore[call-overload]
        vb = native(np.frombuffer(b, dt.numpy)[idx])  # type: ignore[call-overload]
        a64 = va.astype(np.uint64)
        b64 = vb.astype(np.uint64)
        # As in the compiled kernel: the unsigned difference of the larger
        # minus the smaller is exact even for signed 64-bit extremes.
        delta = np.where(va > vb, a64 - b64, b64 - a64)
        # |b| as uint64 (exact for -2**63 too)
        mag = np.where(vb < 0, np.uint64(0) - b64, b64)
        if tol.ulp is not None:
            within |= delta <= np.uint64(tol.ulp)
        if tol.uses_close:
            within |= _int_close(delta, mag, tol.integer_bound)
        k = int(np.argmax(delta))
        max_delta, max_index = int(delta[k]), int(idx[k])
        nonzero = np.flatnonzero(mag != 0)
        if nonzero.size:
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = delta.astype(np.float64) / mag.astype(np.float64)
            value, k = _argmax(rel, nonzero)
            rel_facts = {"max_rel_delta": float(value), "max_rel_delta_index": int(idx[k])}
    out = ~within
    return ScanStats(
        n_diff=int(np.count_nonzero(out)),
        n_within_tolerance=int(np.count_nonzero(within)),
        first_diff=_first(idx, out),
        first_any=int(idx[0]),
        max_abs_delta=max_delta,
        max_abs_delta_index=max_index,
        n_nan_mismatch=n_nan,
        n_inf_mismatch=n_inf,
        n_signed_zero=n_zero,
        **rel_facts,  # type: ignore[arg-type]
        **ulp_facts,  # type: ignore[arg-type]
        **_positions(idx, row_size, origin),  # type: ignore[arg-type]
    )
