"""Reading a buffer's bytes, whatever how they are stored in its file.

A buffer that is a plain byte range of its file is read with ``reader``'s
``preadv`` and memory maps at the buffer's offset. The others:

- ``Deflate``: a compressed zip member (``np.savez_compressed``). Its bytes
  are streamed through ``zlib`` in pieces of ``READ_SIZE``: memory stays
  bounded whatever the size. A read before the stream's position starts the
  stream again (the scan stage reads forward, so that is rare). The stream
  must yield exactly the buffer's size, and its CRC-32 is checked whenever
  the whole buffer is read (hashing): anything else is ``BadData``.
- ``Strided``: a tensor view of a storage (``torch.save`` of a transposed or
  sliced tensor): its elements are gathered in logical order from a
  read-only map of the storage, through numpy (imported only here).
- ``Pieces``: a buffer of several files (a distributed checkpoint's
  tensor, one chunk per rank): a range of its bytes in global order is cut
  into boxes of whole rows, and each box's intersection with each piece is
  read with ``preadv``: straight into place where it is one byte range of
  both, else (a column-sharded tensor's rows) each row into its place by
  the kernel, one ``preadv`` filling many rows' buffers (rows shorter than
  ``_ROW_COPY``: into this thread's buffer 4, then spread over the box's
  rows through numpy); an intersection that is
  no byte range of its piece is copied from a read-only map of it. Each
  piece's file is opened when first read and checked to be the file
  listed, then and after use. A buffer whose pieces each hold consecutive
  elements (a row-sharded or replicated tensor) is hashed as plain byte
  ranges are, straight from memory maps of its pieces (``runs_of``).
- ``Inline``: bytes decoded when the file was listed (a numpy array that a
  ``torch.save`` pickle holds as text): copied from where they are held;
  the file is still opened and checked to be the one listed.

Each fills this thread's buffer 0 and the callers' buffers; nothing is
written anywhere. ``open_buffer`` (a ``BufferReader``: reads at offsets
counted from the buffer's start) and ``buffer_views`` (consecutive views)
read any buffer.
"""

from __future__ import annotations

import mmap
import os
import zlib

from .buffers import BufferRef, Deflate, Inline, Pieces, Strided
from .reader import (
    CANCEL,
    PAGE,
    READ_SIZE,
    Cancelled,
    FileChanged,
    buffer,
    check_unchanged,
    open_dump,
    open_fd,
    read_at,
    read_exact,
    read_scattered,
    views,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType


class BadData(OSError):
    """A buffer whose stored bytes cannot be what its header says (a damaged
    or hostile compressed stream): the buffer is malformed."""

    kind = "malformed"  # its Problem's kind (errors.problem_kind)

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.filename = path

    def __str__(self) -> str:
        return str(self.args[0])


class _Inflater:
    """A deflate stream read forward, restarted when asked to go back.

    The stream's state where it was first read from is kept (a copy of
    the decompressor, its position, CRC and input): a read from there on
    goes back to it, not to the start. (A scan reads its ranges, from the
    first differing chunk, once to narrow them and once more to scan them,
    then the first differing element: each would else decompress all that
    lies before the chunk again.)"""

    __slots__ = ("_crc", "_in", "_mark", "_pending", "_z", "codec", "f", "fd", "pos")

    def __init__(self, fd: int, f: BufferRef) -> None:
        assert isinstance(f.codec, Deflate)
        self.fd = fd
        self.f = f
        self.codec = f.codec
        self._mark: tuple[int, zlib._Decompress, int, int, bytes] | None = None
        self._restart()

    def _restart(self) -> None:
        self._z = zlib.decompressobj(-15)
        self._in = 0  # compressed bytes fed so far
        self.pos = 0  # decompressed bytes handed out so far
        self._crc = 0
        self._pending = b""  # compressed bytes fed but not consumed
        skip = self.codec.skip  # output before the buffer's bytes (an .npy header)
        while skip:
            skip -= len(self._next(min(READ_SIZE, skip)))

    def _bad(self, what: str) -> BadData:
        return BadData(
            f"compressed member {what}; the file is damaged (re-create it) and nothing was "
            "compared for this buffer",
            self.f.path,
        )

    def _read_stored(self) -> bytes:
        """The next piece of the compressed stream (at most ``READ_SIZE`` bytes)."""
        n = min(READ_SIZE, self.codec.stored - self._in)
        data = bytes(read_exact(self.fd, buffer(3)[:n], self.f.offset + self._in, self.f.path))
        self._in += n
        return data

    def _next(self, most: int) -> bytes:
        """Up to ``most`` (> 0) more decompressed bytes; never empty."""
        z, stored = self._z, self.codec.stored
        while True:
            if CANCEL._set:
                raise Cancelled("interrupted")
            if z.eof:
                # The stream ended, yet more is wanted. (What follows its end
                # is no input: zlib keeps handing it back, unconsumed, for ever.)
                raise self._bad(f"ends after {self.pos:,} of {self.f.size:,} bytes")
            if self._pending:
                data, self._pending = self._pending, b""
            elif self._in < stored:
                data = self._read_stored()
            else:
                data = b""
            try:
                out = z.decompress(data, most)
            except zlib.error as exc:
                raise self._bad(f"is not a valid deflate stream ({exc})") from None
            self._pending = z.unconsumed_tail
            if out:
                self._crc = zlib.crc32(out, self._crc)
                return out
            if not data and not self._pending and not z.eof:
                raise self._bad("is truncated")

    def skip_to(self, offset: int) -> None:
        if offset < self.pos:
            mark = self._mark
            if mark is not None and mark[0] <= offset:
                pos, z, self._in, self._crc, self._pending = mark
                self.pos, self._z = pos, z.copy()
            else:
                self._restart()
        while self.pos < offset:
            self.pos += len(self._next(min(READ_SIZE, offset - self.pos)))
        if self._mark is None:  # where the stream is first read from
            self._mark = (self.pos, self._z.copy(), self._in, self._crc, self._pending)

    def read_into(self, into: memoryview, offset: int) -> memoryview:
        self.skip_to(offset)
        got, want = 0, len(into)
        if offset + want > self.f.size:
            raise ValueError(f"read past the end of {self.f.path}: {offset + want} bytes")
        while got < want:
            out = self._next(want - got)
            into[got : got + len(out)] = out
            got += len(out)
            self.pos += len(out)
        return into

    def finish(self) -> None:
        """At the end of the buffer: the stream must end here, with the
        stored CRC-32."""
        if self.pos != self.f.size:
            return
        z = self._z
        tail = self._pending
        try:
            extra = z.decompress(tail, 1) if tail else b""
            while not extra and not z.eof and self._in < self.codec.stored:
                extra = z.decompress(z.unconsumed_tail + self._read_stored(), 1)
        except zlib.error as exc:
            raise self._bad(f"is not a valid deflate stream ({exc})") from None
        if extra:
            raise self._bad(f"holds more than the {self.f.size:,} bytes its header declares")
        if not z.eof:
            raise self._bad("is truncated")
        crc = self.codec.crc
        if crc is not None and self._crc != crc:
            raise self._bad(f"fails its CRC-32 check ({self._crc:08x}, stored {crc:08x})")


#: How a gather gives back the pages of its map (Linux; elsewhere none).
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


class _Gather:
    """The elements of a strided view, gathered in logical (C) order: a
    read-only numpy view with the tensor's strides over a map of its
    storage, copied a block of whole rows (or a part of one row) at a time."""

    __slots__ = ("_logical", "_map", "codec", "f")

    def __init__(self, fd: int, f: BufferRef) -> None:
        import numpy as np
        from numpy.lib.stride_tricks import as_strided

        assert isinstance(f.codec, Strided)
        self.f = f
        self.codec = c = f.codec
        base = f.offset - f.offset % PAGE
        length = f.offset - base + c.extent
        if CANCEL._set:
            raise Cancelled("interrupted")
        try:
            self._map = mmap.mmap(fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ,
                                  offset=base)  # fmt: skip
        except ValueError:
            raise FileChanged("ended early; the file changed while it was read", f.path) from None
        w = c.itemsize
        reach = sum((d - 1) * s for d, s in zip(c.shape, c.strides, strict=True) if d)
        if any(s < 0 for s in c.strides) or (reach + 1) * w > c.extent:
            raise BadData(f"a strided view reaches past its storage ({c!r})", f.path)
        storage = np.frombuffer(self._map, dtype=np.uint8, count=c.extent, offset=f.offset - base)
        self._logical = as_strided(
            storage, shape=(*c.shape, w), strides=(*(s * w for s in c.strides), 1),
            writeable=False,
        )  # fmt: skip

    def read_into(self, into: memoryview, offset: int) -> memoryview:
        import numpy as np

        c = self.codec
        w = c.itemsize
        if offset % w or len(into) % w:
            raise ValueError(f"strided reads must be whole elements: {offset}, {len(into)}")
        count = len(into) // w
        out = np.frombuffer(into, dtype=np.uint8).reshape(count, w)
        logical, shape = self._logical, c.shape
        if not shape:  # a scalar
            out[:] = logical
            return into
        row = shape[-1]
        pos, done = offset // w, 0
        while done < count:
            r, col = divmod(pos, row)
            lead = np.unravel_index(r, shape[:-1]) if len(shape) > 1 else ()
            if col == 0 and len(shape) > 1 and count - done >= row:
                # Whole rows: as many as follow in this run of the next-to-last index.
                j = int(lead[-1])
                k = min(shape[-2] - j, (count - done) // row)
                block = logical[tuple(lead[:-1])][j : j + k]
                out[done : done + k * row].reshape(k, row, w)[...] = block
                done += k * row
                pos += k * row
                continue
            take = min(row - col, count - done)
            out[done : done + take] = logical[tuple(lead)][col : col + take]
            done += take
            pos += take
        # A view with strides may touch pages across its whole storage for
        # one piece (and the kernel maps pages around each one it faults in):
        # drop them from this process between pieces (they stay in the page
        # cache). While a piece is gathered they count in resident memory:
        # clean file pages, up to the storage's size, never copies.
        if _DONTNEED is not None:
            self._map.madvise(_DONTNEED)
        return into

    def finish(self) -> None:
        pass

    def close(self) -> None:
        self._logical = None
        try:  # noqa: SIM105 - a consumer may still hold a view
            self._map.close()
        except BufferError:
            pass


def _boxes(
    lo: int, hi: int, shape: tuple[int, ...]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The elements ``lo:hi`` (in row-major order) of an array of ``shape``
    as boxes, in order, each ``(starts, stops)``: a fixed index on the
    first dimensions, a range on the next, all of the rest (so each box is
    one run of consecutive elements); at most two per dimension."""
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def volume(dims: tuple[int, ...]) -> int:
        n = 1
        for d in dims:
            n *= d
        return n

    def cut(d: int, prefix: tuple[int, ...], a: int, b: int) -> None:
        if a >= b:
            return
        rest = shape[d:]
        if a == 0 and b == volume(rest):
            out.append(((*prefix, *(0,) * len(rest)), (*(i + 1 for i in prefix), *rest)))
            return
        inner = shape[d + 1 :]
        size = volume(inner)
        i0, r0 = divmod(a, size)
        i1, r1 = divmod(b, size)
        if i0 == i1:
            cut(d + 1, (*prefix, i0), r0, r1)
            return
        if r0:
            cut(d + 1, (*prefix, i0), r0, size)
            i0 += 1
        if i1 > i0:
            out.append(((*prefix, i0, *(0,) * len(inner)), (*(i + 1 for i in prefix), i1, *inner)))
        if r1:
            cut(d + 1, (*prefix, i1), 0, r1)

    cut(0, (), lo, hi)
    return out


def _run(lo: tuple[int, ...], hi: tuple[int, ...], shape: tuple[int, ...]) -> int | None:
    """Where the box ``lo:hi`` of an array of ``shape`` starts (its first
    element's row-major index) when its elements are consecutive; None
    when they are not."""
    dims = len(shape)
    d = 0
    while d < dims and hi[d] - lo[d] == 1:
        d += 1
    if any(lo[k] != 0 or hi[k] != shape[k] for k in range(d + 1, dims)):
        return None
    at = 0
    for k in range(dims):
        at = at * shape[k] + lo[k]
    return at


#: A row at least this long is read into its place by a buffer of its own
#: (``reader.read_scattered``); shorter ones are read whole and spread through numpy (a
#: Python step per short row would cost more than the copy).
_ROW_COPY = 2048


def _rows(
    box: tuple[int, ...], lo: tuple[int, ...], hi: tuple[int, ...], w: int
) -> tuple[int, list[int]]:
    """Box ``lo:hi`` of ``box`` as runs of consecutive bytes of the whole
    ``box`` (row-major, ``w`` bytes an element): ``(bytes a run, where
    each run starts)``, the starts made only for runs of at least
    ``_ROW_COPY`` bytes (else empty)."""
    dims = len(box)
    d = dims - 1
    inner = 1
    while d >= 0 and lo[d] == 0 and hi[d] == box[d]:
        inner *= box[d]
        d -= 1
    if d < 0:
        return inner * w, [0]
    # Dimensions after d are whole: a run is (hi[d] - lo[d]) * inner elements.
    run = (hi[d] - lo[d]) * inner * w
    count = 1
    for k in range(d):
        count *= hi[k] - lo[k]
    if run < _ROW_COPY and count > 1:
        return run, []
    strides = [0] * dims
    step = w
    for k in range(dims - 1, -1, -1):
        strides[k] = step
        step *= box[k]
    offsets = [lo[d] * strides[d]]
    for k in range(d):  # where each run starts, in order
        offsets = [o + i * strides[k] for o in offsets for i in range(lo[k], hi[k])]
    return run, offsets


def _spread(
    out: memoryview, src: memoryview, box: tuple[int, ...], lo: tuple[int, ...],
    hi: tuple[int, ...], w: int,
) -> None:  # fmt: skip
    """Copy ``src`` (the elements of box ``lo:hi`` of ``box``, in row-major
    order, of ``w`` bytes each) into their places in ``out`` (the whole
    ``box``, row-major)."""
    run, offsets = _rows(box, lo, hi, w)
    if not offsets:
        import numpy as np

        target = np.frombuffer(out, dtype=np.uint8).reshape(*box, w)
        put = tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))
        shape = tuple(b - a for a, b in zip(lo, hi, strict=True))
        target[put] = np.frombuffer(src, dtype=np.uint8).reshape(*shape, w)
        return
    pos = 0
    for at in offsets:
        out[at : at + run] = src[pos : pos + run]
        pos += run


class _Assemble:
    """The bytes of a buffer of several files (``Pieces``), in global order:
    each read cut into boxes (``_boxes``), each box filled from the pieces
    it meets (module docstring)."""

    __slots__ = ("_fds", "_maps", "codec", "f")

    def __init__(self, f: BufferRef) -> None:
        assert isinstance(f.codec, Pieces)
        self.f = f
        self.codec = f.codec
        self._fds: dict[int, int] = {}  # piece index -> open descriptor
        self._maps: dict[int, mmap.mmap] = {}

    def _fd(self, i: int) -> int:
        fd = self._fds.get(i)
        if fd is None:
            piece = self.codec.pieces[i]
            fd = open_fd(piece.path)
            self._fds[i] = fd
            check_unchanged(fd, piece)  # type: ignore[arg-type]
        return fd

    def _map(self, i: int) -> mmap.mmap:
        m = self._maps.get(i)
        if m is None:
            piece = self.codec.pieces[i]
            base = piece.offset - piece.offset % PAGE
            try:
                m = mmap.mmap(self._fd(i), piece.offset - base + piece.size, flags=mmap.MAP_SHARED,
                              prot=mmap.PROT_READ, offset=base)  # fmt: skip
            except ValueError:
                raise FileChanged(
                    "ended early; the file changed while it was read", piece.path
                ) from None
            self._maps[i] = m
        return m

    def read_into(self, into: memoryview, offset: int) -> memoryview:
        c = self.codec
        w = c.itemsize
        if offset % w or len(into) % w:
            raise ValueError(f"reads of pieces must be whole elements: {offset}, {len(into)}")
        if offset + len(into) > self.f.size:
            raise ValueError(f"read past the end of {self.f.path}: {offset + len(into)} bytes")
        if CANCEL._set:
            raise Cancelled("interrupted")
        shape, pieces = c.shape, c.pieces
        done = 0
        touched: list[tuple[int, int, int]] = []  # (piece, where in its map, bytes)
        for starts, stops in _boxes(offset // w, (offset + len(into)) // w, shape):
            box = tuple(b - a for a, b in zip(starts, stops, strict=True))
            count = 1
            for n in box:
                count *= n
            out = into[done : done + count * w]
            for i, p in enumerate(pieces):
                lo = tuple(max(a, s) for a, s in zip(starts, p.start, strict=True))
                hi = tuple(min(b, s + n) for b, s, n in zip(stops, p.start, p.shape, strict=True))
                if any(a >= b for a, b in zip(lo, hi, strict=True)):
                    continue
                local_lo = tuple(a - s for a, s in zip(lo, p.start, strict=True))
                local_hi = tuple(b - s for b, s in zip(hi, p.start, strict=True))
                in_box_lo = tuple(a - s for a, s in zip(lo, starts, strict=True))
                in_box_hi = tuple(b - s for b, s in zip(hi, starts, strict=True))
                src = _run(local_lo, local_hi, p.shape)
                dst = _run(in_box_lo, in_box_hi, box)
                n = 1
                for a, b in zip(lo, hi, strict=True):
                    n *= b - a
                if src is not None and dst is not None:
                    read_exact(self._fd(i), out[dst * w : (dst + n) * w], p.offset + src * w,
                               p.path)  # fmt: skip
                    continue
                if src is not None:
                    # One byte range of the piece (whole rows of a column shard):
                    # long rows read straight into their places, short ones read
                    # whole and spread over the box's rows.
                    run, row_at = _rows(box, in_box_lo, in_box_hi, w)
                    if row_at:
                        parts = [out[a : a + run] for a in row_at]
                        read_scattered(self._fd(i), parts, p.offset + src * w, p.path)
                        continue
                    if n * w <= READ_SIZE:
                        at = p.offset + src * w
                        got = read_exact(self._fd(i), buffer(4)[: n * w], at, p.path)
                        _spread(out, got, box, in_box_lo, in_box_hi, w)
                        continue
                import numpy as np

                m = self._map(i)
                base = p.offset - p.offset % PAGE
                touched.append((i, 0, len(m)))
                cells = np.frombuffer(m, dtype=np.uint8, count=p.size, offset=p.offset - base)
                source = cells.reshape(*p.shape, w)
                target = np.frombuffer(out, dtype=np.uint8).reshape(*box, w)
                put = tuple(slice(a, b) for a, b in zip(in_box_lo, in_box_hi, strict=True))
                take = tuple(slice(a, b) for a, b in zip(local_lo, local_hi, strict=True))
                target[put] = source[take]
                del cells, source, target
            done += count * w
        if _DONTNEED is not None:
            # The pages mapped stay in the page cache, not in this process.
            for i, at, length in touched:
                start = at - at % mmap.PAGESIZE
                self._maps[i].madvise(_DONTNEED, start, at + length - start)
        return into

    def finish(self) -> None:
        pass

    def close(self, check: bool = True) -> None:
        """Unmap and close every piece's file; ``check``: each file read is
        first checked to be the one listed (FileChanged)."""
        try:
            if check:
                for i, fd in self._fds.items():
                    check_unchanged(fd, self.codec.pieces[i])  # type: ignore[arg-type]
        finally:
            for m in self._maps.values():
                try:  # noqa: SIM105 - a consumer may still hold a view
                    m.close()
                except BufferError:
                    pass
            self._maps.clear()
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()


class _Held:
    """The bytes of an ``Inline`` buffer, held since the file was listed."""

    __slots__ = ("data",)

    def __init__(self, f: BufferRef) -> None:
        assert isinstance(f.codec, Inline)
        self.data = memoryview(f.codec.data)

    def read_into(self, into: memoryview, offset: int) -> memoryview:
        if offset + len(into) > len(self.data):
            raise ValueError(f"read past the end of a held buffer: {offset + len(into)} bytes")
        into[:] = self.data[offset : offset + len(into)]
        return into

    def finish(self) -> None:
        pass


def decoder(fd: int, f: BufferRef) -> _Inflater | _Gather | _Held | _Assemble:
    """The decoder of a buffer with a codec."""
    if isinstance(f.codec, Pieces):
        return _Assemble(f)
    if isinstance(f.codec, Deflate):
        return _Inflater(fd, f)
    if isinstance(f.codec, Strided):
        return _Gather(fd, f)
    if isinstance(f.codec, Inline):
        return _Held(f)
    raise TypeError(f"no decoder for {f.codec!r}")


def runs_of(f: BufferRef) -> list[tuple[int, BufferRef]] | None:
    """A buffer of several files whose pieces each hold consecutive elements
    of the global order (rows of a row-sharded tensor, a replicated one):
    ``(where each piece starts in the buffer, the piece as a plain byte
    range of its file)``, in order; None for any other."""
    c = f.codec
    assert isinstance(c, Pieces)
    out = []
    for p in c.pieces:
        at = _run(p.start, tuple(s + n for s, n in zip(p.start, p.shape, strict=True)), c.shape)
        if at is None:
            return None
        ref = BufferRef(p.path, f.step, f.name, p.size, p.dev, p.ino, p.mtime_ns, p.ctime_ns,
                        offset=p.offset, file_size=p.file_size)  # fmt: skip
        out.append((at * c.itemsize, ref))
    out.sort(key=lambda item: item[0])
    return out


def _run_views(runs: list[tuple[int, BufferRef]], start: int, end: int) -> Iterator[memoryview]:
    """Views of bytes ``start:end`` of a buffer of consecutive pieces
    (``runs_of``), straight from each piece's file (``reader.views``: memory
    maps, no copy), each file checked when opened and after use."""
    for at, ref in runs:
        lo, hi = max(start, at), min(end, at + ref.size)
        if lo >= hi:
            continue
        with open_dump(ref) as piece_fd:
            yield from views(piece_fd, ref, lo - at, hi - at)


def decoded_views(fd: int, f: BufferRef, start: int, end: int) -> Iterator[memoryview]:
    """Views of the decoded bytes ``start:end`` of a buffer with a codec, in
    pieces of ``READ_SIZE`` in this thread's buffer 0 (each valid until the
    next); a whole buffer read is checked to its end (``finish``)."""
    if isinstance(f.codec, Pieces) and (runs := runs_of(f)) is not None:
        yield from _run_views(runs, start, end)
        check_unchanged(fd, f)
        return
    dec = decoder(fd, f)
    ok = False
    try:
        into = buffer(0)
        pos = start
        # Whole elements per piece, for a buffer of several files.
        size = READ_SIZE - READ_SIZE % f.codec.itemsize if isinstance(dec, _Assemble) else READ_SIZE
        while pos < end:
            n = min(size, end - pos)
            yield dec.read_into(into[:n], pos)
            pos += n
        if start == 0 and end == f.size:
            dec.finish()
        ok = True
    finally:
        if isinstance(dec, _Gather):
            dec.close()
        elif isinstance(dec, _Assemble):
            dec.close(check=ok)
    check_unchanged(fd, f)


class BufferReader:
    """Reads a buffer of an open file at offsets counted from the buffer's
    start (``read_into``, ``read_at``); for a plain byte range a ``preadv``
    at the buffer's offset, else its codec's decoder (above)."""

    __slots__ = ("_decoder", "f", "fd")

    def __init__(self, fd: int, f: BufferRef) -> None:
        self.fd = fd
        self.f = f
        self._decoder = None if f.codec is None else decoder(fd, f)

    def read_into(self, into: memoryview, offset: int) -> memoryview:
        """Fill ``into`` with the buffer's bytes from ``offset``."""
        if self._decoder is not None:
            return self._decoder.read_into(into, offset)
        return read_exact(self.fd, into, self.f.offset + offset, self.f.path)

    def read_at(self, offset: int, n: int) -> bytes:
        """A few bytes (one element) of the buffer at ``offset``."""
        if self._decoder is not None:
            return bytes(self._decoder.read_into(memoryview(bytearray(n)), offset))
        return read_at(self.fd, self.f.offset + offset, n, self.f.path)


class open_buffer:  # used as a function: ``with open_buffer(f) as reader``
    """A ``BufferReader`` of a buffer's file, opened read-only and checked
    when opened and after use (``open_dump``)."""

    __slots__ = ("dump", "reader")

    def __init__(self, f: BufferRef) -> None:
        self.dump = open_dump(f)
        self.reader: BufferReader | None = None

    def __enter__(self) -> BufferReader:
        self.reader = BufferReader(self.dump.__enter__(), self.dump.f)
        return self.reader

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        dec = None if self.reader is None else self.reader._decoder
        try:
            if isinstance(dec, _Assemble):  # its pieces' files, checked too
                dec.close(check=exc_type is None)
        finally:
            self.dump.__exit__(exc_type, exc, tb)


def buffer_views(
    fd: int, f: BufferRef, start: int, end: int, use_mmap: bool = True
) -> Iterator[memoryview]:
    """Consecutive views of bytes ``start:end`` of any open buffer, counted
    from its start (``reader.views`` for a plain byte range, else decoded
    piece by piece); each valid until the next is asked for."""
    if f.codec is None:
        return views(fd, f, start, end, use_mmap)
    return decoded_views(fd, f, start, end)
