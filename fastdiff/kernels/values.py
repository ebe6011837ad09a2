"""Reading element values out of unsigned bit views (numpy only)."""

from __future__ import annotations

import numpy as np

from ..dtypes import DTYPES, FP8, DType, fp8_values

_TABLES: dict[str, np.ndarray] = {}


def fp8_table(name: str) -> np.ndarray:
    """The float64 values of the 256 bit patterns of an 8-bit float format
    (read-only; NaN where the format has a NaN)."""
    table = _TABLES.get(name)
    if table is None:
        table = np.array(fp8_values(name), dtype=np.float64)
        table.flags.writeable = False
        _TABLES[name] = table
    return table


def native(arr: np.ndarray) -> np.ndarray:
    """The same numbers (integers, or bit patterns) in the machine's byte
    order: ``arr`` itself, or a copy where its elements are big-endian."""
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def float_values(bits: np.ndarray, dt: DType) -> np.ndarray:
    """The values of float elements as float32/float64, for deltas only.

    ``bits``: the elements' bit patterns as unsigned integers (in any byte
    order: numpy reads them as numbers). f16, bf16 and the 8-bit floats are
    widened exactly (NaN stays NaN); equality is never decided on these
    values, only on ``bits``.
    """
    bits = native(bits)
    if dt.base in FP8:
        return fp8_table(dt.base)[bits]
    if dt.base == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dt.base == "f16":
        with np.errstate(invalid="ignore"):  # signalling NaNs stay NaN, quietly
            return bits.view(np.float16).astype(np.float32)
    return bits.view(DTYPES[dt.base].numpy)


def float64_values(bits: np.ndarray, dt: DType) -> np.ndarray:
    """The values widened to float64 (signalling NaNs become quiet NaNs)."""
    with np.errstate(invalid="ignore"):
        return float_values(bits, dt).astype(np.float64)
