"""The pure-Python twin of the kernels. Private: use ``fastdiff.kernels.scan_bytes``.

It imports neither numpy nor numba, so it starts in microseconds; it costs
about a microsecond per element, so the scan stage gives it only a few
small blocks (a late single difference in a huge buffer is the typical
case). It computes exactly what the other engines compute: equality on
the unsigned bit patterns, then values, deltas and tolerances only for the
elements that differ.
"""

from __future__ import annotations

import math
import struct

from ..dtypes import FP8, float_format, fp8_values
from ..model.facts import HIST_BINS, LISTED, ScanStats, scale_ulp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..dtypes import DType
    from ..model.tolerance import Tolerance


def _float_value(dt: DType, bits: int) -> float:
    """The value of a float's bit pattern ``bits`` (a number: byte order is
    already undone)."""
    if dt.base in FP8:
        return fp8_values(dt.base)[bits]
    if dt.base == "bf16":
        return float(struct.unpack("<f", struct.pack("<I", bits << 16))[0])
    return float(struct.unpack("<" + dt.code, struct.pack("<" + dt.bits_code, bits))[0])


def _exact_close(atol: float, rtol: float) -> Callable[[int, int], bool]:
    """``d <= atol + rtol*m`` decided exactly for integers d and m.

    atol and rtol are dyadic fractions (their denominators are powers of
    two), so over their common denominator the test is one comparison of
    Python integers.
    """
    a_num, a_den = atol.as_integer_ratio()
    r_num, r_den = rtol.as_integer_ratio()
    den = max(a_den, r_den)
    a_num *= den // a_den
    r_num *= den // r_den

    def close(d: int, m: int) -> bool:
        return d * den <= a_num + r_num * m

    return close


def positions(diff: list[int], row_size: int, origin: int) -> dict[str, object]:
    """The runs and rows facts of the sorted differing indices ``diff`` (not empty)."""
    starts = [i for k, i in enumerate(diff) if k == 0 or diff[k - 1] != i - 1]
    stops = [i + 1 for k, i in enumerate(diff) if k == len(diff) - 1 or diff[k + 1] != i + 1]
    runs = list(zip(starts, stops, strict=True))
    facts: dict[str, object] = {
        "ranges": tuple(runs[:LISTED]),
        "n_ranges": len(runs),
        "last_range": runs[-1],
    }
    if row_size > 0:
        rows = sorted({(origin + i) // row_size for i in diff})
        facts.update(rows=tuple(rows[:LISTED]), n_rows=len(rows), last_row=rows[-1])
    return facts


def scale_rows(
    rows: list[tuple[int, float, float]], p: int, emin: int
) -> tuple[object, ...] | None:
    """The ``scale_rows`` fact of the rows holding a finite differing pair, in
    order: (row, largest |A-B|, largest |B|) each."""
    if not rows:
        return None
    inner = [scale_ulp(d, s, p, emin) for _, d, s in rows[1:-1]]
    return (p, emin, *rows[0], *rows[-1], max(inner) if inner else None)


def scan(
    a: object, b: object, dt: DType, tol: Tolerance, row_size: int = 0, origin: int = 0
) -> ScanStats:
    n = len(a) // dt.itemsize  # type: ignore[arg-type]
    code = f"{dt.order}{n}{dt.bits_code}"
    ua = struct.unpack(code, a)  # type: ignore[arg-type]
    ub = struct.unpack(code, b)  # type: ignore[arg-type]
    diff = [i for i, x, y in zip(range(n), ua, ub, strict=True) if x != y]
    if not diff:
        return ScanStats()
    use_close = tol.uses_close
    atol = tol.atol or 0.0
    rtol = tol.rtol or 0.0
    n_nan = n_inf = n_zero = 0
    outside: list[int] = []  # differing indices beyond tolerance, in order
    best: float | int | None = None
    best_i = -1
    best_rel: float | None = None
    best_rel_i = -1
    best_ulp: int | None = None
    hist = [0] * HIST_BINS
    scales: list[tuple[int, float, float]] = []  # (row, max |A-B|, max |B|) per row
    scale_facts: dict[str, object] = {}
    if dt.kind == "float":
        sign = 1 << (8 * dt.itemsize - 1)
        mag = sign - 1
        for i in diff:
            x, y = ua[i], ub[i]
            va, vb = _float_value(dt, x), _float_value(dt, y)
            within = False
            if math.isnan(va) or math.isnan(vb):
                if tol.nan_equal and math.isnan(va) and math.isnan(vb):
                    within = True
                else:
                    n_nan += 1
            elif math.isinf(va) or math.isinf(vb):
                n_inf += 1
            else:
                d = abs(va - vb)  # float64, as in the other engines (may be inf)
                if best is None or d > best:
                    best, best_i = d, i
                row = (origin + i) // row_size if row_size > 0 else 0
                if scales and scales[-1][0] == row:
                    _, sd, ss = scales[-1]
                    scales[-1] = (row, max(sd, d), max(ss, abs(vb)))
                else:
                    scales.append((row, d, abs(vb)))
                ma, mb = x & mag, y & mag
                dist = abs(ma - mb) if (x & sign) == (y & sign) else ma + mb
                if dist:
                    hist[dist.bit_length() - 1] += 1
                else:
                    n_zero += 1
                if best_ulp is None or dist > best_ulp:
                    best_ulp = dist
                if vb != 0.0:
                    rel = d / abs(vb)
                    if best_rel is None or rel > best_rel:
                        best_rel, best_rel_i = rel, i
                if use_close and d <= atol + rtol * abs(vb):
                    within = True
                elif tol.ulp is not None:
                    within = dist <= tol.ulp
            if not within:
                outside.append(i)
        scale_facts["scale_rows"] = scale_rows(scales, *float_format(dt))
    else:
        vcode = f"{dt.order}{n}{dt.code}"
        va_all = struct.unpack(vcode, a)  # type: ignore[arg-type]
        vb_all = struct.unpack(vcode, b)  # type: ignore[arg-type]
        close = _exact_close(atol, rtol) if use_close else None
        for i in diff:
            x, y = va_all[i], vb_all[i]
            d = abs(x - y)
            if best is None or d > best:
                best, best_i = d, i
            if y != 0:
                rel = float(d) / float(abs(y))  # each rounded to float64, as numba and numpy do
                if best_rel is None or rel > best_rel:
                    best_rel, best_rel_i = rel, i
            within = (tol.ulp is not None and d <= tol.ulp) or (
                close is not None and close(d, abs(y))
            )
            if not within:
                outside.append(i)
    while hist and not hist[-1]:
        hist.pop()
    return ScanStats(
        n_diff=len(outside),
        n_within_tolerance=len(diff) - len(outside),
        first_diff=outside[0] if outside else -1,
        first_any=diff[0],
        max_abs_delta=best,
        max_abs_delta_index=best_i,
        n_nan_mismatch=n_nan,
        n_inf_mismatch=n_inf,
        max_rel_delta=best_rel,
        max_rel_delta_index=best_rel_i,
        max_ulp=best_ulp,
        ulp_log2_histogram=tuple(hist),
        n_signed_zero=n_zero,
        **scale_facts,  # type: ignore[arg-type]
        **positions(diff, row_size, origin),  # type: ignore[arg-type]
    )
