"""What counts as close enough: ``Tolerance``, and ``IntegerBound``, its exact
integer form.

Part of the result model (``fastdiff.model``, a leaf): the kernels, the
scan stage, the options and the reports read it without importing each
other.
"""

from __future__ import annotations

import math

from .value import Value

#: The largest ULP (or integer) distance there is between two 64-bit elements.
ULP_MAX = (1 << 64) - 1

#: A float buffer whose largest ULP distance is at most this (``--rounding-ulp``),
#: with no NaN or infinity mismatch, differs by rounding: its ``magnitude``.
DEFAULT_ROUNDING_ULP = 16


class Tolerance(Value):
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

    A tolerance applies to floating-point buffers only: integer and boolean
    buffers (PRNG states, indices, counts, masks) stay exact, unless
    ``int_tolerance`` (``--int-tolerance``) or the schema member of the
    buffer (``int_tolerance = true``) asks for the tolerance there too
    (``for_buffer``).

    How ``|a-b| <= atol + rtol*|b|`` is evaluated depends on the dtype:

    - floats: in float64, like ``numpy.isclose`` (the values widened to
      float64, the delta, product and sum each rounded to float64);
    - integers: exactly. ``a`` and ``b`` are the exact integers and atol and
      rtol the exact binary values of the float64s given (``0.1`` is
      0.1000000000000000055511151231257827...), with no rounding anywhere:
      a delta of 2**53+1 is not within an atol of 2**53, and ``--rtol 0.3``
      (just below 3/10) allows a delta of 2, not 3, at ``|b| = 10``.
      ``integer_bound`` holds the integer form the kernels use.

    ``rounding_ulp`` forgives nothing: it is where a report draws the line
    between a rounding-size difference of floats (at most this many ULP, no
    NaN or infinity mismatch) and a large one (the ``magnitude`` fact); None
    means ``DEFAULT_ROUNDING_ULP``.
    """

    __slots__ = ("atol", "int_tolerance", "nan_equal", "rounding_ulp", "rtol", "ulp")

    def __init__(
        self,
        atol: float | None = None,
        rtol: float | None = None,
        ulp: int | None = None,
        nan_equal: bool = False,
        rounding_ulp: int | None = None,
        int_tolerance: bool = False,
    ) -> None:
        for name, value in (("atol", atol), ("rtol", rtol)):
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"--{name} must be a finite number >= 0, got {value!r}")
        if ulp is not None and ulp < 0:
            raise ValueError(f"--ulp must be an integer >= 0, got {ulp!r}")
        if ulp is not None and ulp > ULP_MAX:
            ulp = ULP_MAX  # no two elements are further apart than this: the same tolerance
        if rounding_ulp is None:
            rounding_ulp = DEFAULT_ROUNDING_ULP
        elif rounding_ulp < 0:
            raise ValueError(f"--rounding-ulp must be an integer >= 0, got {rounding_ulp!r}")
        self.atol = atol
        self.rtol = rtol
        self.ulp = ulp
        self.nan_equal = nan_equal
        self.rounding_ulp = min(rounding_ulp, ULP_MAX)
        self.int_tolerance = int_tolerance

    @property
    def exact(self) -> bool:
        return self.atol is None and self.rtol is None and self.ulp is None and not self.nan_equal

    def for_buffer(self, kind: str, int_tolerant: bool = False) -> Tolerance:
        """The tolerance a buffer of dtype ``kind`` ("float", "int", "uint")
        is compared with: this one for floats, for integers where
        ``int_tolerance`` or the buffer's schema member (``int_tolerant``)
        asks; else exact (the same line between rounding and large)."""
        if kind == "float" or self.exact or self.int_tolerance or int_tolerant:
            return self
        return Tolerance(rounding_ulp=self.rounding_ulp)

    @property
    def uses_close(self) -> bool:
        return self.atol is not None or self.rtol is not None

    @property
    def integer_bound(self) -> IntegerBound:
        """``atol + rtol*|b|`` in the integer form the kernels decide exactly."""
        return IntegerBound.of(float(self.atol or 0.0), float(self.rtol or 0.0))


class IntegerBound(Value):
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

    __slots__ = ("atol_floor", "atol_scaled", "frame", "lshift", "rshift", "rtol_exp", "rtol_mant")

    def __init__(
        self,
        atol_floor: int,  # floor(atol), capped at 2**64-1 (no delta exceeds it)
        rtol_mant: int,  # rtol == rtol_mant * 2**rtol_exp, 0 <= rtol_mant < 2**53
        rtol_exp: int,
        frame: int,  # F, capped at 128
        atol_scaled: int,  # floor(atol * 2**F), below 2**64 whenever step 3 is reached
        lshift: int,  # max(rtol_exp, 0), capped at 64
        rshift: int,  # max(-rtol_exp - F, 0), capped at 128
    ) -> None:
        self.atol_floor = atol_floor
        self.rtol_mant = rtol_mant
        self.rtol_exp = rtol_exp
        self.frame = frame
        self.atol_scaled = atol_scaled
        self.lshift = lshift
        self.rshift = rshift

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
