"""Element types of dump buffers: names, sizes, byte order and how their bits are read.

Elements are little-endian unless the name ends in ``be`` (``f32be``: a
big-endian f32, numpy's ``>f4``). A comparison always decides equality on the
bit patterns, through an unsigned view of the element width: two elements
are equal exactly when their bytes are, whatever the byte order. The numeric
value is only used for deltas, tolerances and ULP distances, and each format
is read by its own definition:

- ``f16``, ``f32``, ``f64`` (IEEE 754) and ``bf16`` (the top half of an
  f32): an all-ones exponent is an infinity (zero mantissa) or a NaN (any
  other payload); -0.0 exists;
- the 8-bit floats (``FP8``): ``f8_e5m2`` is IEEE-like (infinities, NaNs,
  -0.0); ``f8_e4m3fn`` has no infinity and one NaN per sign (S.1111.111);
  ``f8_e4m3fnuz`` and ``f8_e5m2fnuz`` have no infinity, no -0.0 and a single
  NaN, 0x80 (the pattern -0.0 would have);
- ``bool``: one byte, compared and shown as the integer it holds (0 or 1
  from numpy and torch; any other byte is compared as it is);
- integers: two's complement (``i``) or unsigned (``u``), of 8 to 64 bits.

This module is the one home of dtype names: the canonical short names
(``DTYPES``, the names reports use), the names a user may write for them
(``dtype_name``: numpy's names and codes, ml_dtypes', safetensors' and
torch's), and the lookups of the type fields of file formats
(``from_descr``, ``from_safetensors``, ``from_torch``).
"""

from __future__ import annotations

from .model.value import Value
from .textkit.values import VALUE_DIGITS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Kind = Literal["uint", "int", "float"]
else:
    Kind = str

#: ``struct`` codes of the unsigned integers of each width.
_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}

#: The 8-bit float formats: (exponent bits, mantissa bits, exponent bias,
#: special values). ``ieee``: an all-ones exponent is an infinity with a zero
#: mantissa, else a NaN. ``fn`` (finite): no infinity; only S.1111.111 is a
#: NaN, every other all-ones exponent is a number. ``fnuz`` (finite, unsigned
#: zero): no infinity, no -0.0; 0x80 alone is a NaN.
FP8: dict[str, tuple[int, int, int, str]] = {
    "f8_e4m3fn": (4, 3, 7, "fn"),  # torch float8_e4m3fn, safetensors F8_E4M3, OCP E4M3
    "f8_e5m2": (5, 2, 15, "ieee"),  # torch float8_e5m2, safetensors F8_E5M2, OCP E5M2
    "f8_e4m3fnuz": (4, 3, 8, "fnuz"),  # torch float8_e4m3fnuz, safetensors F8_E4M3FNUZ
    "f8_e5m2fnuz": (5, 2, 16, "fnuz"),  # torch float8_e5m2fnuz, safetensors F8_E5M2FNUZ
}


class DType(Value):
    """One element type: its canonical name, width in bytes, kind and byte order.

    ``numpy``: the numpy dtype string that views values (``"<f4"``, ``">i8"``;
    bool is viewed as ``"|u1"``; bf16 and the 8-bit floats have none);
    ``code``: the ``struct`` character of a value (bf16 and the 8-bit floats
    have none); ``order``: ``"<"`` or ``">"``, the ``struct`` and numpy
    byte-order character (``"<"`` for one-byte types); ``base``: the name of
    the little-endian type of the same elements (``"f32"`` for ``"f32be"``,
    the name itself otherwise), which says how a value is read once its bits
    are in the machine's order; ``descr``: numpy's type string for arrays of
    it as ``.npy`` headers write it (``"|b1"``, ``">f4"``; ``""``: none).
    ``bits`` and ``bits_code``: the numpy dtype string (in the element's own
    byte order) and ``struct`` character of the unsigned view of the same
    width, on which equality is decided; ``digits``: the ``format`` spec that
    shows a value with as many digits as the type holds (``""``: ``repr``;
    from ``textkit.values.VALUE_DIGITS``).
    """

    __slots__ = (
        "base",
        "bits",
        "bits_code",
        "code",
        "descr",
        "digits",
        "itemsize",
        "kind",
        "name",
        "numpy",
        "order",
    )

    def __init__(
        self,
        name: str,
        itemsize: int,
        kind: Kind,
        numpy: str,
        code: str,
        order: str = "<",
        base: str = "",
        descr: str = "",
        digits: str = "",
    ) -> None:
        self.name = name
        self.itemsize = itemsize
        self.kind = kind
        self.numpy = numpy
        self.code = code
        self.order = order
        self.base = base or name
        self.descr = descr
        self.digits = digits
        self.bits = f"{order}u{itemsize}"
        self.bits_code = _UNSIGNED[itemsize]

    @property
    def swapped(self) -> bool:
        """Whether the elements are big-endian (their bytes reversed against
        the little-endian type ``base``)."""
        return self.order == ">"


def _little() -> tuple[DType, ...]:
    d = DType
    return (
        d("u8", 1, "uint", "|u1", "B", descr="|u1"),
        d("i8", 1, "int", "|i1", "b", descr="|i1"),
        d("u16", 2, "uint", "<u2", "H", descr="<u2"),
        d("i16", 2, "int", "<i2", "h", descr="<i2"),
        d("u32", 4, "uint", "<u4", "I", descr="<u4"),
        d("i32", 4, "int", "<i4", "i", descr="<i4"),
        d("u64", 8, "uint", "<u8", "Q", descr="<u8"),
        d("i64", 8, "int", "<i8", "q", descr="<i8"),
        d("f16", 2, "float", "<f2", "e", descr="<f2", digits=VALUE_DIGITS["f16"]),
        d("bf16", 2, "float", "", "", digits=VALUE_DIGITS["bf16"]),
        d("f32", 4, "float", "<f4", "f", descr="<f4", digits=VALUE_DIGITS["f32"]),
        d("f64", 8, "float", "<f8", "d", descr="<f8"),
        d("bool", 1, "uint", "|u1", "B", descr="|b1"),
        *(d(name, 1, "float", "", "", digits=VALUE_DIGITS[name]) for name in FP8),
    )


def _big(t: DType) -> DType:
    """The big-endian twin of a little-endian multi-byte type."""
    swap = ">" + t.numpy[1:] if t.numpy else ""
    descr = ">" + t.descr[1:] if t.descr else ""
    return DType(t.name + "be", t.itemsize, t.kind, swap, t.code, ">", t.name, descr, t.digits)


_LITTLE = _little()

#: Every element type by canonical name: the little-endian ones, then the
#: big-endian twin of each multi-byte one (``u16be`` ... ``f64be``).
DTYPES: dict[str, DType] = {
    t.name: t for t in (*_LITTLE, *(_big(t) for t in _LITTLE if t.itemsize > 1))
}

#: The widest element: chunk sizes are multiples of it, so a chunk boundary
#: never splits an element of any type.
MAX_ITEMSIZE = 8


# --- names ------------------------------------------------------------------------

#: Names that mean different types to different libraries: refused, with the
#: reason and the names to write instead.
_AMBIGUOUS = {
    "f8": "numpy's f8 is float64 (write f64 or <f8); the 8-bit floats are "
    "f8_e4m3fn, f8_e5m2, f8_e4m3fnuz, f8_e5m2fnuz",
    "float": "numpy's float is float64, torch's float32: write f64 or f32",
    "int": "numpy's int is int64, torch's int32: write i64 or i32",
    "long": "numpy's long is int32 or int64 by platform: write i32 or i64",
    "float8_e4m3": "ml_dtypes' float8_e4m3 (IEEE-like, with infinities) is not supported; "
    "torch's float8_e4m3fn (safetensors F8_E4M3) is f8_e4m3fn",
    "f8_e4m3": "ml_dtypes' float8_e4m3 has infinities, torch's float8_e4m3fn (safetensors "
    "F8_E4M3) none: write f8_e4m3fn for the latter",
}

#: safetensors' dtype names of the types fastdiff compares.
SAFETENSORS: dict[str, str] = {
    "BOOL": "bool",
    "U8": "u8",
    "I8": "i8",
    "F8_E5M2": "f8_e5m2",
    "F8_E4M3": "f8_e4m3fn",
    "F8_E5M2FNUZ": "f8_e5m2fnuz",
    "F8_E4M3FNUZ": "f8_e4m3fnuz",
    "I16": "i16",
    "U16": "u16",
    "F16": "f16",
    "BF16": "bf16",
    "I32": "i32",
    "U32": "u32",
    "F32": "f32",
    "F64": "f64",
    "I64": "i64",
    "U64": "u64",
}
#: safetensors dtypes that exist but that fastdiff does not compare.
_SAFETENSORS_OTHER = ("F4", "F6_E2M3", "F6_E3M2", "F8_E8M0", "C64")

#: torch's dtype names (``torch.<name>``, also the global a pickle names for
#: ``_rebuild_tensor_v3``), aliases included.
TORCH: dict[str, str] = {
    "bool": "bool",
    "uint8": "u8",
    "int8": "i8",
    "uint16": "u16",
    "int16": "i16",
    "short": "i16",
    "uint32": "u32",
    "int32": "i32",
    "int": "i32",
    "uint64": "u64",
    "int64": "i64",
    "long": "i64",
    "float16": "f16",
    "half": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float": "f32",
    "float64": "f64",
    "double": "f64",
    "float8_e4m3fn": "f8_e4m3fn",
    "float8_e5m2": "f8_e5m2",
    "float8_e4m3fnuz": "f8_e4m3fnuz",
    "float8_e5m2fnuz": "f8_e5m2fnuz",
}

#: torch's storage classes (``torch.FloatStorage``: what ``torch.save``
#: pickles for the dtypes that have one; the others are saved as an
#: ``UntypedStorage`` and a dtype, ``TORCH``). The 8-bit float and wide
#: unsigned names are accepted as some writers spell them.
TORCH_STORAGES: dict[str, str] = {
    "BoolStorage": "bool",
    "ByteStorage": "u8",
    "CharStorage": "i8",
    "ShortStorage": "i16",
    "IntStorage": "i32",
    "LongStorage": "i64",
    "HalfStorage": "f16",
    "BFloat16Storage": "bf16",
    "FloatStorage": "f32",
    "DoubleStorage": "f64",
    "UInt16Storage": "u16",
    "UInt32Storage": "u32",
    "UInt64Storage": "u64",
    "Float8_e4m3fnStorage": "f8_e4m3fn",
    "Float8_e5m2Storage": "f8_e5m2",
    "Float8_e4m3fnuzStorage": "f8_e4m3fnuz",
    "Float8_e5m2fnuzStorage": "f8_e5m2fnuz",
}

#: numpy's and ml_dtypes' type names (``np.dtype(name)``: native byte order,
#: little-endian on every machine fastdiff runs on).
_NUMPY_NAMES = {
    "bool": "bool",
    "bool_": "bool",
    "uint8": "u8",
    "int8": "i8",
    "ubyte": "u8",
    "byte": "i8",
    "uint16": "u16",
    "int16": "i16",
    "ushort": "u16",
    "short": "i16",
    "uint32": "u32",
    "int32": "i32",
    "uint64": "u64",
    "int64": "i64",
    "float16": "f16",
    "half": "f16",
    "float32": "f32",
    "single": "f32",
    "float64": "f64",
    "double": "f64",
    "bfloat16": "bf16",
    "float8_e4m3fn": "f8_e4m3fn",
    "float8_e5m2": "f8_e5m2",
    "float8_e4m3fnuz": "f8_e4m3fnuz",
    "float8_e5m2fnuz": "f8_e5m2fnuz",
}

#: numpy's type characters and the canonical name of each width.
_CODES = {
    "b": {1: "bool"},
    "u": {1: "u8", 2: "u16", 4: "u32", 8: "u64"},
    "i": {1: "i8", 2: "i16", 4: "i32", 8: "i64"},
    # ml_dtypes registers float8_e5m2 as kind "f", width 1: np.save writes '<f1'
    "f": {1: "f8_e5m2", 2: "f16", 4: "f32", 8: "f64"},
}
_NUMPY_KINDS = {
    "c": "complex",
    "V": "void (raw bytes, or ml_dtypes' bfloat16 and 8-bit floats, which numpy saves as "
    "<V2 and <V1: name the dtype in the schema)",
    "O": "Python objects",
    "U": "unicode text",
    "S": "byte strings",
    "a": "byte strings",
    "M": "datetime",
    "m": "timedelta",
}


def _known() -> str:
    return " ".join(DTYPES)


def unknown_dtype(value: object) -> str:
    """The message for a dtype name that names no type fastdiff knows."""
    return (
        f"unknown dtype {value!r} (valid: {_known()}; or numpy's and torch's names, such as "
        "float32, f4, <f4, >i8, int64, bfloat16, float8_e4m3fn, F8_E4M3, torch.float16)"
    )


def dtype_name(name: object) -> str:
    """The canonical name of a dtype a user names (``--default-dtype``, a
    schema file): a canonical name (``f32``, ``i8``: 8 bits, as fastdiff's
    names count bits), numpy's names (``float32``, ``int64``, ``bool``) and
    type codes with or without a byte order (``f4``, ``<f4``, ``>f4``,
    ``|b1``, ``<i8``: 8 bytes, as numpy's codes count bytes), ml_dtypes'
    (``bfloat16``, ``float8_e4m3fn``), safetensors' (``F8_E4M3``) and torch's
    (``torch.float16``). ValueError names what is wrong: unknown, ambiguous
    (``f8``, ``float``) or not a type fastdiff compares (``complex64``)."""
    if not isinstance(name, str):
        raise ValueError(unknown_dtype(name))
    if name in DTYPES:
        return name
    if name in _AMBIGUOUS:
        raise ValueError(f"ambiguous dtype {name!r}: {_AMBIGUOUS[name]}")
    found = _NUMPY_NAMES.get(name) or SAFETENSORS.get(name)
    if found is None and name.startswith("torch."):
        found = TORCH.get(name[6:]) or TORCH_STORAGES.get(name[6:])
    if found is not None:
        return found
    if name[:1] in ("<", ">", "|", "="):
        return from_descr(name).name  # a numpy type string: its error says what is wrong
    kind, width = name[:1], name[1:]
    if name == "?" or (kind in _NUMPY_KINDS and (width.isdigit() or not width)):
        return from_descr(name).name
    if kind in _CODES and width.isdigit() and int(width) in _CODES[kind]:
        return from_descr(name).name
    raise ValueError(unknown_dtype(name))


def get_dtype(name: str) -> DType:
    """Look up a dtype by a name a user may write (``dtype_name``); ValueError
    names the valid ones."""
    dt = DTYPES.get(name)
    return dt if dt is not None else DTYPES[dtype_name(name)]


def from_descr(descr: object) -> DType:
    """The dtype of a numpy type string as ``.npy`` headers give it (``'<f4'``,
    ``'>i2'``, ``'|b1'``, ``'|u1'``), with numpy's meaning: the digits count
    bytes (``'<i8'`` is i64), ``'<'``/``'>'`` is the byte order, ``'|'``
    (one-byte types only) none, ``'='`` or none the machine's. ValueError
    names the string and what is wrong (a structured or object dtype, a
    kind or width fastdiff does not compare)."""
    if not isinstance(descr, str):
        raise ValueError(
            f"numpy dtype {descr!r}: a structured dtype (fields, a list of them); fastdiff "
            "compares arrays of plain numbers"
        )
    order, rest = (descr[0], descr[1:]) if descr[:1] in ("<", ">", "|", "=") else ("=", descr)
    if rest in ("?", "b"):
        rest = "b1"
    kind, width = rest[:1], rest[1:]
    if kind in _NUMPY_KINDS:
        raise ValueError(
            f"numpy dtype {descr!r}: {_NUMPY_KINDS[kind]}, not a type fastdiff compares"
        )
    widths = {"b": {1: "bool"}, **_CODES}.get(kind)
    size = int(width) if width.isdigit() and width.isascii() else 0
    if widths is None or size not in widths:
        choices = "b1 u1 i1 u2 i2 f2 u4 i4 f4 u8 i8 f8, with < > = or | before"
        raise ValueError(f"numpy dtype {descr!r}: not a type fastdiff compares ({choices})")
    if size > 1 and order == "|":
        raise ValueError(f"numpy dtype {descr!r}: a {size}-byte type needs a byte order, < or >")
    if order == "=":
        import sys

        order = "<" if sys.byteorder == "little" else ">"
    name = widths[size]
    return DTYPES[name + "be" if order == ">" and size > 1 else name]


def from_safetensors(name: object) -> DType:
    """The dtype of a safetensors header's ``dtype`` field (``F32``,
    ``BF16``, ``F8_E4M3``, ...). ValueError names the value: one fastdiff
    does not compare (``F8_E8M0``, ``C64``), or no safetensors dtype."""
    if isinstance(name, str) and name in SAFETENSORS:
        return DTYPES[SAFETENSORS[name]]
    known = " ".join(SAFETENSORS)
    if name in _SAFETENSORS_OTHER:
        raise ValueError(
            f"safetensors dtype {name!r} is not one fastdiff compares (it compares {known})"
        )
    raise ValueError(f"unknown safetensors dtype {name!r} (known: {known})")


def from_torch(name: object) -> DType:
    """The dtype of a torch storage class or dtype as a pickle names it:
    ``FloatStorage``, ``BFloat16Storage`` (with or without ``torch.``),
    ``torch.float8_e4m3fn`` or ``float8_e4m3fn``. ValueError names the
    value (a complex or quantized type, or no torch type at all)."""
    if isinstance(name, str):
        short = name[6:] if name.startswith("torch.") else name
        found = TORCH_STORAGES.get(short) or TORCH.get(short)
        if found is not None:
            return DTYPES[found]
    raise ValueError(
        f"torch type {name!r} is not one fastdiff compares (storages: "
        f"{' '.join(TORCH_STORAGES)}; dtypes: torch.{' torch.'.join(TORCH)})"
    )


# --- values -----------------------------------------------------------------------

_FP8_VALUES: dict[str, tuple[float, ...]] = {}


def fp8_value(name: str, bits: int) -> float:
    """The value of the 8-bit float ``bits`` (0..255) of format ``name``
    (a key of ``FP8``), by the format's definition; NaN as ``float('nan')``."""
    e_bits, m_bits, bias, rule = FP8[name]
    negative = bits & 0x80
    exponent = (bits >> m_bits) & ((1 << e_bits) - 1)
    mantissa = bits & ((1 << m_bits) - 1)
    top = (1 << e_bits) - 1
    if rule == "fnuz" and bits == 0x80:
        return float("nan")
    if rule == "ieee" and exponent == top:
        return float("nan") if mantissa else (-1.0 if negative else 1.0) * float("inf")
    if rule == "fn" and exponent == top and mantissa == (1 << m_bits) - 1:
        return float("nan")
    if exponent == 0:  # zero or subnormal: mantissa * 2**(1 - bias - m_bits)
        value = mantissa * 2.0 ** (1 - bias - m_bits)
    else:
        value = ((1 << m_bits) | mantissa) * 2.0 ** (exponent - bias - m_bits)
    return -value if negative else value


#: Each float format's explicit mantissa bits and smallest normal exponent:
#: the unit in the last place of a value x is 2**(max(exponent(x), emin) - p).
FLOAT_FORMATS: dict[str, tuple[int, int]] = {
    "f64": (52, -1022),
    "f32": (23, -126),
    "f16": (10, -14),
    "bf16": (7, -126),
    **{name: (m, 1 - bias) for name, (_, m, bias, _) in FP8.items()},
}


def float_format(dt: DType) -> tuple[int, int]:
    """(mantissa bits, smallest normal exponent) of a float dtype (``FLOAT_FORMATS``)."""
    return FLOAT_FORMATS[dt.base]


def fp8_values(name: str) -> tuple[float, ...]:
    """The values of all 256 bit patterns of the 8-bit float format ``name``."""
    table = _FP8_VALUES.get(name)
    if table is None:
        table = _FP8_VALUES[name] = tuple(fp8_value(name, u) for u in range(256))
    return table


def decode(dt: DType, raw: bytes) -> int | float:
    """The value of one element in its own byte order (no numpy needed)."""
    import struct

    if dt.base in FP8:
        return fp8_values(dt.base)[raw[0]]
    if dt.base == "bf16":
        top = raw[::-1] if dt.swapped else raw
        return float(struct.unpack("<f", b"\x00\x00" + top)[0])
    value = struct.unpack(dt.order + dt.code, raw)[0]
    return float(value) if dt.kind == "float" else int(value)


def bits_hex(dt: DType, raw: bytes) -> str:
    """An element's bit pattern as a hex number (most significant byte first)."""
    return "0x" + (raw if dt.swapped else raw[::-1]).hex()
