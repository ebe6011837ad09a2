"""Element types of dump buffers: names, sizes and how their bits are read.

Every dump is raw little-endian. A comparison always decides equality on the
bit patterns (through an unsigned view of the element width); the numeric
value is only used for deltas and tolerances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["uint", "int", "float"]


@dataclass(frozen=True)
class DType:
    """One element type: its short name, width in bytes and kind."""

    name: str
    itemsize: int
    kind: Kind
    numpy: str  # the numpy dtype string used to view values ("<f4"); bf16 has none

    @property
    def bits(self) -> str:
        """numpy dtype string of the unsigned view of the same width."""
        return f"<u{self.itemsize}"


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("u8", 1, "uint", "<u1"),
        DType("i8", 1, "int", "<i1"),
        DType("u16", 2, "uint", "<u2"),
        DType("i16", 2, "int", "<i2"),
        DType("u32", 4, "uint", "<u4"),
        DType("i32", 4, "int", "<i4"),
        DType("u64", 8, "uint", "<u8"),
        DType("i64", 8, "int", "<i8"),
        DType("f16", 2, "float", "<f2"),
        DType("bf16", 2, "float", ""),
        DType("f32", 4, "float", "<f4"),
        DType("f64", 8, "float", "<f8"),
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


_STRUCT = {
    "u8": "<B",
    "i8": "<b",
    "u16": "<H",
    "i16": "<h",
    "u32": "<I",
    "i32": "<i",
    "u64": "<Q",
    "i64": "<q",
    "f16": "<e",
    "f32": "<f",
    "f64": "<d",
}


def decode(dt: DType, raw: bytes) -> int | float:
    """The value of one little-endian element (no numpy needed)."""
    import struct

    if dt.name == "bf16":
        return float(struct.unpack("<f", b"\x00\x00" + raw)[0])
    value = struct.unpack(_STRUCT[dt.name], raw)[0]
    return float(value) if dt.kind == "float" else int(value)
