"""The element-wise scan of two byte ranges that are known to differ.

This is the only stage that looks at element values. It takes two equally
long byte buffers holding elements of one dtype and returns, in one pass:
how many elements differ (outside and within tolerance), the first
differing index, the largest |A-B| (float64 for floats, an exact integer for
integers) and |A-B|/|B| with their indices, how many differences involve NaN
or infinity, where the differing elements lie (runs of consecutive ones,
and rows when told the row size) and, for floats, how far apart they are in
units in the last place (the largest distance and a log2 histogram).

Equality is decided on bit patterns: identical NaNs are equal, -0.0 and
+0.0 differ (with delta 0). Values are read by each dtype's own definition
(``fastdiff.dtypes``: the 8-bit floats' NaNs and missing infinities, bool as
an integer, big-endian elements with their bytes reversed). Three engines
compute the same numbers:

- ``numba``: compiled kernels (``numba_engine``), the fast path for large
  differing regions; importing numba costs about 0.5 s, so it loads lazily;
- ``numpy``: a vectorised twin (``numpy_engine``), cheaper to start, which
  serves mid-sized differing regions;
- ``python``: a plain-Python twin (``python_engine``) that needs neither,
  for a few small differing blocks.

Neither numpy nor numba is imported by this module itself. The facts a scan
reports are described once, in ``facts.FACTS`` (how they merge, shift and
render); the engines share the types of ``types``.
"""

from __future__ import annotations

from ..dtypes import DType, get_dtype
from ..model.facts import COUNT_FIELDS, FACTS, ScanStats
from ..model.tolerance import EXACT, ULP_MAX, IntegerBound, Tolerance
from .types import ENGINES, Engine

__all__ = [
    "COUNT_FIELDS",
    "ENGINES",
    "EXACT",
    "FACTS",
    "ULP_MAX",
    "Engine",
    "IntegerBound",
    "ScanStats",
    "Tolerance",
    "scan_bytes",
]


def scan_bytes(
    a: memoryview | bytes | bytearray,
    b: memoryview | bytes | bytearray,
    dtype: str | DType,
    tol: Tolerance = EXACT,
    engine: Engine = "numba",
    *,
    row_size: int = 0,
    origin: int = 0,
) -> ScanStats:
    """Scan two equally long buffers of ``dtype`` elements (in its byte order).

    Raises ValueError when the lengths differ or are not a whole number of
    elements. Indices in the result are relative to the start of the buffers.
    ``row_size`` > 0 asks for the rows holding differences: the buffers start
    at element ``origin`` of an array of rows of ``row_size`` elements, and
    rows are numbered in that array (they are not shifted when pieces merge).
    """
    if row_size < 0 or origin < 0:
        raise ValueError(f"row_size and origin must be >= 0, got {row_size} and {origin}")
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
    return impl.scan(a, b, dt, tol, row_size, origin)
