"""Element types of dump buffers: names, sizes and how their bits are read.

Every dump is raw little-endian. A comparison always decides equality on the
bit patterns (through an unsigned view of the element width); the numeric
value is only used for deltas and tolerances.
"""

from __future__ import annotations

from .record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Kind = Literal["uint", "int", "float"]
else:
    Kind = str

#: ``struct`` codes of the unsigned integers of each width.
_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}


class DType(Record):
    """One element type: its short name, width in bytes and kind.

    ``numpy``: the numpy dtype string used to view values (``"<f4"``; bf16
    has none); ``code``: the ``struct`` format character of a value (bf16
    has none: it is the top half of an f32). ``bits`` and ``bits_code``: the
    numpy dtype string and ``struct`` character of the unsigned view of the
    same width, on which equality is decided.
    """

    __slots__ = ("bits", "bits_code", "code", "itemsize", "kind", "name", "numpy")

    def __init__(self, name: str, itemsize: int, kind: Kind, numpy: str, code: str) -> None:
        self.name = name
        self.itemsize = itemsize
        self.kind = kind
        self.numpy = numpy
        self.code = code
        self.bits = f"<u{itemsize}"
        self.bits_code = _UNSIGNED[itemsize]


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("u8", 1, "uint", "<u1", "B"),
        DType("i8", 1, "int", "<i1", "b"),
        DType("u16", 2, "uint", "<u2", "H"),
        DType("i16", 2, "int", "<i2", "h"),
        DType("u32", 4, "uint", "<u4", "I"),
        DType("i32", 4, "int", "<i4", "i"),
        DType("u64", 8, "uint", "<u8", "Q"),
        DType("i64", 8, "int", "<i8", "q"),
        DType("f16", 2, "float", "<f2", "e"),
        DType("bf16", 2, "float", "", ""),
        DType("f32", 4, "float", "<f4", "f"),
        DType("f64", 8, "float", "<f8", "d"),
    )
}

#: The widest element: chunk sizes are multiples of it, so a chunk boundary
#: never splits an element of any type.
MAX_ITEMSIZE = 8


def get_dtype(name: str) -> DType:
    """Look up a dtype by its short name; ValueError names the valid ones."""
    try:
        return DTYPES[name]
    except KeyError:
        valid = " ".join(DTYPES)
        raise ValueError(f"unknown dtype {name!r} (valid: {valid})") from None


def decode(dt: DType, raw: bytes) -> int | float:
    """The value of one little-endian element (no numpy needed)."""
    import struct

    if dt.name == "bf16":
        return float(struct.unpack("<f", b"\x00\x00" + raw)[0])
    value = struct.unpack("<" + dt.code, raw)[0]
    return float(value) if dt.kind == "float" else int(value)
