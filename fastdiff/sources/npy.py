"""The ``.npy`` format: one array per file, its dtype and shape in the header.

Layout (numpy's ``lib/_format_impl.py``): the magic ``\\x93NUMPY``, a major
and minor version byte, the header length (2 bytes little-endian in
version 1.0, 4 bytes in 2.0 and 3.0), then the header: a Python dict
literal with exactly the keys ``descr``, ``fortran_order`` and ``shape``,
padded with spaces and ending in a newline; the data follows at once, in C
order (or Fortran order), ``prod(shape) * itemsize`` bytes.

The header is parsed here by a strict reader of that literal, never by
``eval`` (not even ``ast.literal_eval``), and refused, with a message
naming what is wrong, when it is longer than numpy reads by default
(``MAX_HEADER_SIZE``), is not exactly such a dict, names an object,
structured or other dtype fastdiff does not compare, or when the file is
not exactly header plus data (truncated, or trailing bytes). A Fortran-order
array is compared in its logical (C) order: a strided view of the data.

An ``.npy`` file given as a run (``open_source``) is a run of one buffer at
step 0, named by the file's stem, as a ``torch.save`` file is a run of its
tensors.
"""

from __future__ import annotations

import struct

from ..dtypes import from_descr
from .buffers import BufferRef, Strided
from .formats import NPY_MAGIC

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os

    from .buffers import StepFilter
    from .run import RunSource

#: numpy's magic (the format table's, ``formats.FORMATS``).
MAGIC = NPY_MAGIC
#: numpy's own default cap on a header it reads (``max_header_size``).
MAX_HEADER_SIZE = 10_000
#: Bytes read first: the magic, the version and the header length.
PREAMBLE = 12
#: The most dimensions numpy allows an array.
MAX_DIMS = 64


class NpyError(ValueError):
    """A file that is not a usable ``.npy``: the message says why."""


class NpyHeader:
    """What an ``.npy`` header says: the dtype (fastdiff's name; None for raw
    bytes of a type numpy cannot name, ``<V2``: the schema names it, or a
    recorder's digest log), the shape, where the
    data starts and how many bytes it has, and its layout (``codec``: None
    for C order, a ``Strided`` view for Fortran order). ``itemsize`` and
    ``dims``: the element width and the shape as written, whatever the dtype."""

    __slots__ = ("codec", "data_offset", "dims", "dtype", "itemsize", "nbytes", "shape")

    def __init__(
        self, dtype: str | None, shape: tuple[int, ...] | None, data_offset: int, nbytes: int,
        codec: Strided | None, itemsize: int = 0, dims: tuple[int, ...] = (),
    ) -> None:  # fmt: skip
        self.dtype = dtype
        self.shape = shape
        self.data_offset = data_offset
        self.nbytes = nbytes
        self.codec = codec
        self.itemsize = itemsize
        self.dims = dims


def header_length(preamble: bytes) -> tuple[int, int]:
    """(header length, bytes before the header) from the first bytes."""
    if len(preamble) < 10 or not preamble.startswith(MAGIC):
        raise NpyError("not an .npy file (it does not start with numpy's magic bytes)")
    major, minor = preamble[6], preamble[7]
    if (major, minor) == (1, 0):
        return struct.unpack("<H", preamble[8:10])[0], 10
    if (major, minor) in ((2, 0), (3, 0)):
        if len(preamble) < 12:
            raise NpyError("truncated .npy header")
        return struct.unpack("<I", preamble[8:12])[0], 12
    raise NpyError(f".npy format version {major}.{minor} is not one fastdiff reads (1.0 2.0 3.0)")


class _Literal:
    """A reader of the one dict literal an ``.npy`` header holds."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> NpyError:
        return NpyError(f".npy header is not a plain dict literal: {what} at character {self.pos}")

    def blank(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n and text[self.pos] in " \t\n":
            self.pos += 1

    def expect(self, c: str) -> None:
        self.blank()
        if not self.text.startswith(c, self.pos):
            raise self.fail(f"expected {c!r}")
        self.pos += 1

    def peek(self) -> str:
        self.blank()
        return self.text[self.pos : self.pos + 1]

    def string(self) -> str:
        self.blank()
        quote = self.text[self.pos : self.pos + 1]
        if quote not in ("'", '"'):
            raise self.fail("expected a quoted string")
        end = self.text.find(quote, self.pos + 1)
        if end < 0:
            raise self.fail("an unterminated string")
        value = self.text[self.pos + 1 : end]
        if "\\" in value:
            raise self.fail("an escape in a string")
        self.pos = end + 1
        return value

    def word(self) -> str:
        self.blank()
        start = self.pos
        text, n = self.text, len(self.text)
        while self.pos < n and (text[self.pos].isascii() and text[self.pos].isalnum()):
            self.pos += 1
        return text[start : self.pos]

    def integer(self) -> int:
        digits = self.word()
        # As Python writes an integer (numpy reads the header as a literal):
        # no leading zero.
        if (
            not (digits.isascii() and digits.isdigit())
            or len(digits) > 19
            or (digits[0] == "0" and len(digits) > 1)
        ):
            raise self.fail(f"expected a dimension, got {digits!r}")
        return int(digits)

    def shape(self) -> tuple[int, ...]:
        self.expect("(")
        dims: list[int] = []
        comma = False
        while self.peek() != ")":
            dims.append(self.integer())
            if len(dims) > MAX_DIMS:
                raise self.fail(f"more than {MAX_DIMS} dimensions")
            comma = self.peek() == ","
            if comma:
                self.pos += 1
            elif self.peek() != ")":
                raise self.fail("expected ',' or ')' in the shape")
        self.pos += 1
        if len(dims) == 1 and not comma:
            raise self.fail("a one-dimension shape without its comma")
        return tuple(dims)

    def value(self, key: str) -> object:
        if key == "descr":
            if self.peek() == "[":
                raise NpyError(
                    "the array has a structured dtype (fields); fastdiff compares arrays of "
                    "plain numbers"
                )
            return self.string()
        if key == "fortran_order":
            word = self.word()
            if word not in ("True", "False"):
                raise self.fail(f"fortran_order must be True or False, got {word!r}")
            return word == "True"
        return self.shape()

    def header(self) -> dict[str, object]:
        self.expect("{")
        out: dict[str, object] = {}
        while self.peek() != "}":
            key = self.string()
            if key not in ("descr", "fortran_order", "shape"):
                raise self.fail(f"unknown key {key!r}")
            if key in out:
                raise self.fail(f"key {key!r} twice")
            self.expect(":")
            out[key] = self.value(key)
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != "}":
                raise self.fail("expected ',' or '}'")
        self.pos += 1
        self.blank()
        if self.pos != len(self.text):
            raise self.fail("text after the dict")
        if len(out) != 3:
            missing = sorted({"descr", "fortran_order", "shape"} - out.keys())
            raise NpyError(f".npy header lacks key {missing[0]!r}")
        return out


def parse_header(head: bytes, file_size: int) -> NpyHeader:
    """The header of an ``.npy`` file of ``file_size`` bytes, from its first
    bytes (at least the whole header: ``PREAMBLE + MAX_HEADER_SIZE`` suffice).
    Raises NpyError, with a message naming what is wrong."""
    length, start = header_length(head)
    if length > MAX_HEADER_SIZE:
        raise NpyError(
            f".npy header of {length:,} bytes is longer than numpy reads ({MAX_HEADER_SIZE:,})"
        )
    end = start + length
    if end > file_size or end > len(head):
        raise NpyError(f"truncated .npy header ({file_size:,} bytes in all)")
    encoding = "utf-8" if head[6] == 3 else "latin-1"
    try:
        text = head[start:end].decode(encoding)
    except UnicodeDecodeError:
        raise NpyError(".npy header is not valid text") from None
    fields = _Literal(text).header()
    descr = fields["descr"]
    if descr in ("|O", "O", "<O", ">O"):
        raise NpyError(
            "the array holds Python objects (dtype object): it can only be read by running "
            "pickle code, which fastdiff never does"
        )
    void = _void_size(descr)  # type: ignore[arg-type]
    if void is None:
        try:
            dt = from_descr(descr)
        except ValueError as exc:
            raise NpyError(str(exc)) from None
        name: str | None = dt.name
        itemsize = dt.itemsize
    else:
        # Raw bytes of an unnamed type (ml_dtypes saves bfloat16 as <V2): the
        # schema (or a recorder's digest log) names its dtype; its shape is
        # the header's, as for every .npy.
        name, itemsize = None, void
    shape = fields["shape"]
    assert isinstance(shape, tuple)
    count = 1
    for d in shape:
        count *= d
    nbytes = count * itemsize
    if nbytes >= 1 << 62:
        raise NpyError(f"shape {shape} is too large to be read")
    if end + nbytes != file_size:
        if end + nbytes > file_size:
            raise NpyError(
                f"truncated: the header's shape {shape} of {name or descr} needs {nbytes:,} "
                f"bytes of data, the file holds {file_size - end:,}"
            )
        raise NpyError(
            f"{file_size - end - nbytes:,} bytes after the {nbytes:,} of the array its header "
            "describes (damaged, or not written by numpy)"
        )
    codec = None
    if fields["fortran_order"] and len(shape) > 1 and count > 1:
        strides = []
        step = 1
        for d in shape:  # column-major: the first index varies fastest
            strides.append(step)
            step *= d
        codec = Strided(itemsize, tuple(shape), tuple(strides), nbytes)
    dims = tuple(shape)
    return NpyHeader(name, dims, end, nbytes, codec, itemsize, dims)


def _void_size(descr: str) -> int | None:
    """The width of a void type (``'<V2'``, ``'|V1'``), else None."""
    rest = descr[1:] if descr[:1] in "<>|=" else descr
    if rest[:1] == "V" and rest[1:].isascii() and rest[1:].isdigit() and 0 < int(rest[1:]) <= 8:
        return int(rest[1:])
    return None


def file_buffers(path: str, step: int, name: str, fd: int, st: os.stat_result) -> list[BufferRef]:
    """The one buffer of an open ``.npy`` file; raises NpyError."""
    import os

    head = os.pread(fd, PREAMBLE + MAX_HEADER_SIZE, 0)
    h = parse_header(head, st.st_size)
    ref = BufferRef(
        path, step, name, h.nbytes, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns,
        offset=h.data_offset, file_size=st.st_size, dtype=h.dtype, shape=h.shape, codec=h.codec,
    )  # fmt: skip
    return [ref]


def open_source(spec: str, steps: StepFilter | None = None) -> RunSource:
    """An ``.npy`` file as a run source: one buffer, at step 0, named by the
    file's stem (``weights.npy``: ``weights``)."""
    import os

    from .reader import read_regular
    from .run import file_source

    base = os.path.basename(spec)
    name = os.path.splitext(base)[0] or base

    def read() -> list[BufferRef]:
        return read_regular(spec, lambda fd, st: file_buffers(spec, 0, name, fd, st), NpyError)

    return file_source(spec, steps, "npy", read, NpyError, ".npy file")
