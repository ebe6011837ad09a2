"""Reading element values out of unsigned bit views (numpy only)."""

from __future__ import annotations

import numpy as np

from ..dtypes import DType


def float_values(bits: np.ndarray, dt: DType) -> np.ndarray:
    """The values of float elements as float32/float64, for deltas only.

    f16 and bf16 are widened to float32 exactly (NaN stays NaN); equality is
    never decided on these values, only on ``bits``.
    """
    if dt.name == "bf16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dt.name == "f16":
        with np.errstate(invalid="ignore"):  # signalling NaNs stay NaN, quietly
            return bits.view(np.float16).astype(np.float32)
    return bits.view(dt.numpy)


def float64_values(bits: np.ndarray, dt: DType) -> np.ndarray:
    """The values widened to float64 (signalling NaNs become quiet NaNs)."""
    with np.errstate(invalid="ignore"):
        return float_values(bits, dt).astype(np.float64)
