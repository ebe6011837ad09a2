"""The element-wise scan of two byte ranges that are known to differ.

This is the only stage that looks at element values. It takes two equally
long byte buffers holding elements of one dtype and returns, in one pass:
how many elements differ (outside and within tolerance), the first
differing index, the largest |A-B| (float64 for floats, an exact integer for
integers) with its index, and how many differences involve NaN or infinity.

Equality is decided on bit patterns: identical NaNs are equal, -0.0 and
+0.0 differ (with delta 0). Two engines compute the same numbers:

- ``numba``: compiled kernels (``_numba_kernels``), the fast path for large
  differing regions; importing numba costs about 0.5 s, so it loads lazily;
- ``numpy``: a vectorised twin (``_numpy_kernels``), cheaper to start, which
  serves mid-sized differing regions;
- ``python``: a plain-Python twin (``_python_kernels``) that needs neither,
  for a few small differing blocks.

Neither numpy nor numba is imported by this module itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from ..dtypes import DType, get_dtype

Engine = Literal["numba", "numpy", "python"]
ENGINES: tuple[Engine, ...] = ("numba", "numpy", "python")


#: The largest ULP (or integer) distance there is between two 64-bit elements.
ULP_MAX = (1 << 64) - 1


@dataclass(frozen=True)
class Tolerance:
    """What counts as 'close enough' for elements whose bits differ.

    The default is exact: every bit difference is a divergence. An element
    pair whose bits differ is *within tolerance* when

    - ``nan_equal`` and both are NaN (any payloads); or
    - both are finite and ``|a-b| <= atol + rtol*|b|`` (when atol or rtol is
      set; the unset one counts as 0); or
    - both are finite and their distance in units in the last place is at
      most ``ulp`` (for integers: ``|a-b| <= ulp``).

    A NaN against a number, or an infinity against anything else, is never
    within tolerance.

    How ``|a-b| <= atol + rtol*|b|`` is evaluated depends on the dtype:

    - floats: in float64, like ``numpy.isclose`` (the values widened to
      float64, the delta, product and sum each rounded to float64);
    - integers: exactly. ``a`` and ``b`` are the exact integers and atol and
      rtol the exact binary values of the float64s given (``0.1`` is
      0.1000000000000000055511151231257827...), with no rounding anywhere:
      a delta of 2**53+1 is not within an atol of 2**53, and ``--rtol 0.3``
      (just below 3/10) allows a delta of 2, not 3, at ``|b| = 10``.
      ``integer_bound`` holds the integer form the kernels use.
    """

    atol: float | None = None
    rtol: float | None = None
    ulp: int | None = None
    nan_equal: bool = False

    def __post_init__(self) -> None:
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"--{name} must be a finite number >= 0, got {value!r}")
        if self.ulp is not None and self.ulp < 0:
            raise ValueError(f"--ulp must be an integer >= 0, got {self.ulp!r}")
        if self.ulp is not None and self.ulp > ULP_MAX:
            # No two elements are further apart than this: the same tolerance.
            object.__setattr__(self, "ulp", ULP_MAX)

    @property
    def exact(self) -> bool:
        return self.atol is None and self.rtol is None and self.ulp is None and not self.nan_equal

    @property
    def uses_close(self) -> bool:
        return self.atol is not None or self.rtol is not None

    @property
    def integer_bound(self) -> IntegerBound:
        """``atol + rtol*|b|`` in the integer form the kernels decide exactly."""
        return IntegerBound.of(float(self.atol or 0.0), float(self.rtol or 0.0))


@dataclass(frozen=True)
class IntegerBound:
    """``atol + rtol*m`` for integers, in a form decided exactly in 64-bit words.

    For an integer delta ``d >= 1`` and ``m = |b| < 2**64``, the exact test
    ``d <= atol + rtol*m`` equals ``d <= floor(atol + rtol*m)``. Write
    ``rtol = rtol_mant * 2**rtol_exp`` (an integer mantissa below 2**53) and
    let F (``frame``) be the smaller of the fractional bit counts of atol and
    of ``rtol*m``, so that at least one of the two is a whole multiple of
    2**-F. Then no rounding is lost by truncating the other one to 2**-F:

        floor(atol + rtol*m) == (floor(atol*2**F) + floor(rtol*m*2**F)) >> F

    (the truncated sum is a whole number of 2**-F steps, the part cut off is
    less than one step, so the floor cannot move). ``floor(rtol*m*2**F)`` is
    the product ``rtol_mant*m`` (below 2**117) shifted left by ``lshift`` or
    right by ``rshift``. A kernel checks, in this order:

    1. ``d <= atol_floor``: within (the whole test when rtol is 0 or m is 0);
    2. else P = ``rtol_mant*m`` as a 128-bit number; with ``lshift`` > 0, P
       reaching 2**(64-lshift) means ``rtol*m >= 2**64 > d``: within;
    3. else ``((P << lshift >> rshift) + atol_scaled) >> frame >= d``.

    Shift counts are capped (``lshift`` at 64, ``rshift`` and ``frame`` at
    128) where a larger one gives the same answer, so they fit a word.
    """

    atol_floor: int  # floor(atol), capped at 2**64-1 (no delta exceeds it)
    rtol_mant: int  # rtol == rtol_mant * 2**rtol_exp, 0 <= rtol_mant < 2**53
    rtol_exp: int
    frame: int  # F, capped at 128
    atol_scaled: int  # floor(atol * 2**F), below 2**64 whenever step 3 is reached
    lshift: int  # max(rtol_exp, 0), capped at 64
    rshift: int  # max(-rtol_exp - F, 0), capped at 128

    @staticmethod
    def of(atol: float, rtol: float) -> IntegerBound:
        mant, exp = math.frexp(rtol)  # rtol == mant * 2**exp, 0.5 <= mant < 1
        rtol_mant, rtol_exp = int(mant * (1 << 53)), exp - 53
        a_num, a_den = atol.as_integer_ratio()  # a_den is a power of two
        atol_bits = a_den.bit_length() - 1
        rtol_bits = max(-rtol_exp, 0)
        frame = min(atol_bits, rtol_bits)
        atol_scaled = (a_num << frame) // a_den
        if atol >= 1 << 64:
            atol_scaled = 0  # step 1 decides every delta
        return IntegerBound(
            atol_floor=min(a_num // a_den, ULP_MAX),
            rtol_mant=rtol_mant,
            rtol_exp=rtol_exp,
            frame=min(frame, 128),
            atol_scaled=atol_scaled,
            lshift=min(max(rtol_exp, 0), 64),
            rshift=min(max(rtol_bits - frame, 0), 128),
        )

    def within(self, d: int, m: int) -> bool:
        """The exact test for one delta ``d >= 1`` at ``m = |b|``, in Python ints."""
        if d <= self.atol_floor:
            return True
        if self.rtol_mant == 0 or m == 0:
            return False
        y = (self.rtol_mant * m << self.lshift) >> self.rshift
        return (y + self.atol_scaled) >> self.frame >= d


EXACT = Tolerance()


@dataclass(frozen=True)
class ScanStats:
    """What one scan found. Indices are element indices, -1 for 'none'.

    ``max_delta`` is the largest |A-B| over differing element pairs where
    both are finite (a float for float dtypes, an exact int for integer
    dtypes), None when there is no such pair; ``max_index`` is the first
    index where it occurs. ``n_nan`` counts differing pairs where either side
    is NaN (pairs of NaNs forgiven by ``nan_equal`` excluded); ``n_inf``
    counts differing pairs where either side is infinite and neither is NaN.
    """

    n_diff: int = 0
    n_within: int = 0
    first_diff: int = -1
    first_any: int = -1
    max_delta: float | int | None = None
    max_index: int = -1
    n_nan: int = 0
    n_inf: int = 0

    def shifted(self, offset: int) -> ScanStats:
        """The same stats with every index moved by ``offset`` elements."""

        def move(i: int) -> int:
            return i + offset if i >= 0 else -1

        return replace(
            self,
            first_diff=move(self.first_diff),
            first_any=move(self.first_any),
            max_index=move(self.max_index),
        )

    def merged(self, later: ScanStats) -> ScanStats:
        """Combine with the stats of a range that comes after this one."""

        def first(x: int, y: int) -> int:
            return x if x >= 0 else y

        max_delta, max_index = self.max_delta, self.max_index
        if later.max_delta is not None and (max_delta is None or later.max_delta > max_delta):
            max_delta, max_index = later.max_delta, later.max_index
        return ScanStats(
            n_diff=self.n_diff + later.n_diff,
            n_within=self.n_within + later.n_within,
            first_diff=first(self.first_diff, later.first_diff),
            first_any=first(self.first_any, later.first_any),
            max_delta=max_delta,
            max_index=max_index,
            n_nan=self.n_nan + later.n_nan,
            n_inf=self.n_inf + later.n_inf,
        )


def scan_bytes(
    a: memoryview | bytes | bytearray,
    b: memoryview | bytes | bytearray,
    dtype: str | DType,
    tol: Tolerance = EXACT,
    engine: Engine = "numba",
) -> ScanStats:
    """Scan two equally long buffers of little-endian ``dtype`` elements.

    Raises ValueError when the lengths differ or are not a whole number of
    elements. Indices in the result are relative to the start of the buffers.
    """
    dt = dtype if isinstance(dtype, DType) else get_dtype(dtype)
    if len(a) != len(b):
        raise ValueError(f"buffers differ in length: {len(a)} and {len(b)} bytes")
    if len(a) % dt.itemsize:
        raise ValueError(f"{len(a)} bytes is not a whole number of {dt.itemsize}-byte elements")
    if len(a) == 0:
        return ScanStats()
    if engine == "numba":
        from . import numba_engine as impl
    elif engine == "numpy":
        from . import numpy_engine as impl  # type: ignore[no-redef]
    elif engine == "python":
        from . import python_engine as impl  # type: ignore[no-redef]
    else:
        raise ValueError(f"unknown engine {engine!r} (valid: numba numpy python)")
    return impl.scan(a, b, dt, tol)
