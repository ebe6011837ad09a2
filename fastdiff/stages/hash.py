"""Stage 4: xxh3-128 digests of fixed-size chunks of each buffer.

Equal sizes and equal chunk digests decide that a pair is equal
(``digest``); only the chunks whose digests differ are handed on to the
kernel, so a single late difference in a huge buffer costs one chunk's
scan. Chunks are counted from the start of each buffer, wherever it lies
in its file. A buffer's digest (``sources.buffers.BufferDigest``) is the
xxh3-128 of its size and its chunk digests.

A small buffer is read whole in one ``preadv`` into this thread's aligned
buffer; one of ``reader.MAP_MIN`` bytes or more is hashed straight from the
page cache through memory-mapped windows, without a copy (or read in 1 MiB
pieces where it cannot be mapped, or when the caller asks for reads:
``use_mmap=False``); a compressed or strided one is decoded piece by piece
(``sources.access``). Either way the file is checked after it is read: one
that changed is an error, never a digest. Each thread hashes whole
buffers: xxhash releases the GIL, so threads hash in parallel.
"""

from __future__ import annotations

import os

from xxhash import xxh3_128, xxh3_128_digest

from ..errors import problem_kind
from ..model.results import Problem
from ..options import DEFAULT_CHUNK_SIZE
from ..sources.buffers import BufferDigest
from ..sources.reader import (
    MAP_MIN,
    READ_SIZE,
    buffer,
    check_unchanged,
    describe_os_error,
    open_fd,
    read_exact,
    views,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..sources.buffers import BufferRef


def chunk_digests(pieces: Iterable[memoryview], chunk_size: int) -> tuple[bytes, ...]:
    """The xxh3-128 digest of each ``chunk_size`` bytes (the last may be
    shorter) of the bytes that ``pieces`` hold in order, whatever their
    lengths: a chunk split between pieces is hashed in a stream, which gives
    the same digest as hashing it whole. Each piece is released once hashed
    (so a mapped window can be unmapped at once): pass views made for this."""
    chunks: list[bytes] = []
    partial = xxh3_128()
    fill = 0  # bytes of the current chunk already in ``partial``
    for piece in pieces:
        n = len(piece)
        i = 0
        if fill:
            i = min(chunk_size - fill, n)
            partial.update(piece[:i])
            fill += i
            if fill == chunk_size:
                chunks.append(partial.digest())
                partial.reset()
                fill = 0
        while n - i >= chunk_size:
            chunks.append(xxh3_128_digest(piece[i : i + chunk_size]))
            i += chunk_size
        if i < n:
            partial.update(piece[i:])
            fill += n - i
        piece.release()  # a mapped window is unmapped as soon as it is done
    if fill:
        chunks.append(partial.digest())
    return tuple(chunks)


def hash_buffer(
    f: BufferRef, chunk_size: int = DEFAULT_CHUNK_SIZE, use_mmap: bool = True
) -> BufferDigest:
    """Chunk digests of one buffer; raises OSError (FileChanged) on a torn read.

    ``use_mmap=False``: read the file, never map it (for files that a
    writer may truncate while they are read: see ``reader``).
    """
    size = f.size
    fd = open_fd(f.path)
    try:
        if f.codec is not None:  # compressed or strided: decoded piece by piece
            from ..sources.access import decoded_views

            chunks = chunk_digests(decoded_views(fd, f, 0, size), chunk_size)
        elif (use_mmap and size >= MAP_MIN) or size > READ_SIZE:
            chunks = chunk_digests(views(fd, f, 0, size, use_mmap), chunk_size)
        elif size:
            # One read, then one fstat: the file is what the listing saw, and
            # did not change while it was read.
            view = read_exact(fd, buffer(0)[:size], f.offset, f.path)
            if size <= chunk_size:
                chunks = (xxh3_128_digest(view),)
            else:
                chunks = chunk_digests((view,), chunk_size)
            check_unchanged(fd, f)
        else:
            check_unchanged(fd, f)
            chunks = ()
    except OSError:
        # A file swapped for a folder or a FIFO fails to read: say that it changed.
        check_unchanged(fd, f)
        raise
    finally:
        os.close(fd)
    return BufferDigest(f.path, size, chunk_size, chunks)


def hash_batch(
    files: Sequence[BufferRef], chunk_size: int, use_mmap: bool = True
) -> list[BufferDigest | Problem]:
    """Hash several buffers (one pool task); a buffer that fails becomes a Problem."""
    out: list[BufferDigest | Problem] = []
    for f in files:
        try:
            # Called with two arguments unless reads are asked for: tests wrap it.
            d = (
                hash_buffer(f, chunk_size)
                if use_mmap
                else hash_buffer(f, chunk_size, use_mmap=False)
            )
        except OSError as exc:
            out.append(Problem(f.path, describe_os_error(exc), kind=problem_kind(exc)))
        else:
            out.append(d)
    return out
