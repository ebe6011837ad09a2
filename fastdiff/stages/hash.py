"""Stage 4: xxh3-128 digests of fixed-size chunks of each file.

Equal sizes and equal chunk digests decide that a pair is equal; only the
chunks whose digests differ are handed on to the kernel, so a single late
difference in a huge buffer costs one chunk's scan. A file's digest is the
xxh3-128 of its size and its chunk digests, so two files with equal file
digests hashed with the same chunk size are (barring a 128-bit collision)
identical.

A small file is read whole in one ``preadv`` into this thread's aligned
buffer; a file of ``reader.MAP_MIN`` bytes or more is hashed straight from
the page cache through memory-mapped windows, without a copy (or read in
1 MiB pieces where it cannot be mapped, or when the caller asks for reads:
``use_mmap=False``). Either way the file is checked after it is read: one
that changed is an error, never a digest. Each thread hashes whole files:
xxhash releases the GIL, so threads hash in parallel.
"""

from __future__ import annotations

import os

from xxhash import xxh3_128, xxh3_128_digest

from ..errors import problem_kind
from ..options import DEFAULT_CHUNK_SIZE
from ..results import Problem
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

    from .discover import DumpFile


class FileDigest:
    """The chunk digests of one file (an immutable value)."""

    __slots__ = ("chunk_size", "chunks", "path", "size")

    def __init__(self, path: str, size: int, chunk_size: int, chunks: tuple[bytes, ...]) -> None:
        self.path = path
        self.size = size
        self.chunk_size = chunk_size
        self.chunks = chunks

    @property
    def digest(self) -> bytes:
        return xxh3_128_digest(self.size.to_bytes(8, "little") + b"".join(self.chunks))

    def _fields(self) -> tuple[str, int, int, tuple[bytes, ...]]:
        return (self.path, self.size, self.chunk_size, self.chunks)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not FileDigest:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"FileDigest(path={self.path!r}, size={self.size}, "
            f"chunk_size={self.chunk_size}, chunks=<{len(self.chunks)} digests>)"
        )

    def __reduce__(self) -> tuple[type[FileDigest], tuple[str, int, int, tuple[bytes, ...]]]:
        return (FileDigest, self._fields())


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


def hash_file(
    f: DumpFile, chunk_size: int = DEFAULT_CHUNK_SIZE, use_mmap: bool = True
) -> FileDigest:
    """Chunk digests of one file; raises OSError (FileChanged) on a torn read.

    ``use_mmap=False``: read the file, never map it (for files that a
    writer may truncate while they are read: see ``reader``).
    """
    size = f.size
    fd = open_fd(f.path)
    try:
        if (use_mmap and size >= MAP_MIN) or size > READ_SIZE:
            chunks = chunk_digests(views(fd, f, 0, size, use_mmap), chunk_size)
        elif size:
            # One read, then one fstat: the file is what discovery saw, and
            # did not change while it was read.
            view = read_exact(fd, buffer(0)[:size], 0, f.path)
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
    return FileDigest(f.path, size, chunk_size, chunks)


def hash_batch(
    files: Sequence[DumpFile], chunk_size: int, use_mmap: bool = True
) -> list[FileDigest | Problem]:
    """Hash several files (one pool task); a file that fails becomes a Problem."""
    out: list[FileDigest | Problem] = []
    for f in files:
        try:
            # Called with two arguments unless reads are asked for: tests wrap it.
            d = hash_file(f, chunk_size) if use_mmap else hash_file(f, chunk_size, use_mmap=False)
        except OSError as exc:
            out.append(Problem(f.path, describe_os_error(exc), kind=problem_kind(exc)))
        else:
            out.append(d)
    return out


def add_range(ranges: list[list[int]], start: int, end: int) -> None:
    """Append the byte range [start, end) to ``ranges`` (ascending), merged
    with the last one when they touch."""
    if ranges and ranges[-1][1] == start:
        ranges[-1][1] = end
    else:
        ranges.append([start, end])


def differing_ranges(a: FileDigest, b: FileDigest) -> tuple[tuple[tuple[int, int], ...], bool]:
    """Byte ranges of the common prefix to scan, merged, and whether any
    chunk's digests disagreed.

    A chunk that is whole in both files is compared by digest; the chunk
    where the shorter file ends is always scanned (its digests cover
    different lengths), which alone does not mean anything differs.
    """
    common = min(a.size, b.size)
    cs = a.chunk_size
    ranges: list[list[int]] = []
    mismatched = False
    for k in range((common + cs - 1) // cs):
        start, end = k * cs, min((k + 1) * cs, common)
        whole = end - start == cs or a.size == b.size
        if whole:
            if a.chunks[k] == b.chunks[k]:
                continue
            mismatched = True
        add_range(ranges, start, end)
    return tuple((s, e) for s, e in ranges), mismatched
