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

from .dtypes import DType, get_dtype

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
        from . import _numba_kernels as impl
    elif engine == "numpy":
        from . import _numpy_kernels as impl  # type: ignore[no-redef]
    elif engine == "python":
        from . import _python_kernels as impl  # type: ignore[no-redef]
    else:
        raise ValueError(f"unknown engine {engine!r} (valid: numba numpy python)")
    return impl.scan(a, b, dt, tol)
