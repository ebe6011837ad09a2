"""The ``.npz`` format: a zip archive of ``.npy`` members (``np.savez``).

Each member ``<name>.npy`` is buffer ``<name>``, its dtype and shape from
its ``.npy`` header (``npy``). A stored member (``np.savez``) is a byte
range of the archive, hashed through memory maps; a compressed one
(``np.savez_compressed``) is streamed through the decompressor in bounded
memory (``buffers.Deflate``), its CRC-32 checked whenever it is read whole.
The archive is located by its central directory (``ziparchive``), which is
checked before anything is trusted, and an archive it refuses, one of over
``MAX_ARRAYS`` members (counted from its end record, before anything else
is read), or one with a member that is not ``.npy``, is refused whole. A member whose own ``.npy``
header is refused (an object array, say), whose stream is not valid
deflate, or that is a Fortran-order array compressed (its elements would
have to be gathered out of a stream) is an error for that member alone
(``Unread``): the archive's other members are still compared.
"""

from __future__ import annotations

import os
import zlib

from .buffers import BufferRef, Deflate, Unread
from .names import NPY_SUFFIX
from .npy import MAX_HEADER_SIZE, PREAMBLE, NpyError, parse_header
from .run import file_source
from .ziparchive import ZipError, read_members

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .buffers import StepFilter
    from .run import RunSource
    from .ziparchive import ZipMember


#: An archive holds at most this many arrays (each costs a read of its
#: header, and about a kilobyte to list and compare).
MAX_ARRAYS = 1 << 18


class NpzError(ValueError):
    """An archive that is not a usable ``.npz``: the message says why."""


def _head(fd: int, m: ZipMember) -> bytes:
    """The first bytes of a member (enough for an ``.npy`` header)."""
    want = min(m.size, PREAMBLE + MAX_HEADER_SIZE)
    if m.method == 0:
        return os.pread(fd, want, m.data_offset)
    z = zlib.decompressobj(-15)
    out = b""
    pos = m.data_offset
    end = m.data_offset + m.stored
    try:
        while len(out) < want and pos < end:
            piece = os.pread(fd, min(1 << 16, end - pos), pos)
            if not piece:
                break
            pos += len(piece)
            out += z.decompress(piece, want - len(out))
            while z.unconsumed_tail and len(out) < want:
                out += z.decompress(z.unconsumed_tail, want - len(out))
    except zlib.error as exc:
        raise NpzError(f"member {m.name!r}: not a valid deflate stream ({exc})") from None
    return out


def sniff(head: bytes, fd: int, size: int) -> bool:
    """Whether a zip archive (its magic in ``formats.FORMATS``) of ``size``
    bytes, open as ``fd``, is an ``.npz``: every member an ``.npy`` array.
    An archive of no members is ``np.savez()`` of nothing (``torch.save``
    always writes its ``data.pkl``); one ``ziparchive`` refuses is not one
    (the ``torch.save`` reader then says what is wrong)."""
    try:
        names = [m.name for m in read_members(fd, size, local=False)]
    except ZipError:
        return False
    return all(n.endswith(NPY_SUFFIX) for n in names)


def archive_buffers(path: str, step: int, fd: int, st: os.stat_result) -> list[BufferRef | Unread]:
    """The buffers of an open ``.npz`` file (at ``step``), in archive order:
    a member whose own header or stream is refused is an ``Unread`` (an
    error for that member alone); raises NpzError when the archive as a
    whole is refused."""
    try:
        members = read_members(fd, st.st_size, MAX_ARRAYS)
    except ZipError as exc:
        raise NpzError(str(exc)) from None
    for m in members:
        if not m.name.endswith(NPY_SUFFIX):
            raise NpzError(f"member {m.name!r} is not an .npy array")
    out: list[BufferRef | Unread] = []
    dev, ino, mtime, ctime, size = st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size
    for m in members:
        name = m.name[: -len(NPY_SUFFIX)]
        try:
            h = parse_header(_head(fd, m), m.size)
        except (NpyError, NpzError) as exc:
            out.append(Unread(step, name, _unread(m, str(exc))))
            continue
        if m.method == 0:
            ref = BufferRef(
                path, step, name, h.nbytes, dev, ino, mtime, ctime,
                offset=m.data_offset + h.data_offset, file_size=size, dtype=h.dtype,
                shape=h.shape, codec=h.codec,
            )  # fmt: skip
        elif h.codec is not None:
            why = (
                "a Fortran-order array in a compressed archive (np.savez_compressed), which "
                "fastdiff does not gather; save it in C order (np.ascontiguousarray) or "
                "uncompressed (np.savez)"
            )
            out.append(Unread(step, name, _unread(m, why)))
            continue
        else:
            codec = Deflate(m.stored, m.crc, h.data_offset)
            ref = BufferRef(
                path, step, name, h.nbytes, dev, ino, mtime, ctime, offset=m.data_offset,
                file_size=size, dtype=h.dtype, shape=h.shape, codec=codec,
            )  # fmt: skip
        out.append(ref)
    return out


def _unread(m: ZipMember, why: str) -> str:
    prefix = f"member {m.name!r}: "
    return f"{prefix}{why.removeprefix(prefix)}; this member was not compared"


def read_file(path: str, step: int) -> list[BufferRef | Unread]:
    """The buffers of the ``.npz`` at ``path``; raises OSError or NpzError."""
    from .reader import read_regular

    return read_regular(path, lambda fd, st: archive_buffers(path, step, fd, st), NpzError)


def open_source(spec: str, steps: StepFilter | None = None) -> RunSource:
    """An ``.npz`` file as a run source: one step (0) of buffers."""
    return file_source(spec, steps, "npz", lambda: read_file(spec, 0), NpzError, ".npz archive")
