"""Stage 4: xxh3-128 digests of fixed-size chunks of each file.

Equal sizes and equal chunk digests decide that a pair is equal; only the
chunks whose digests differ are handed on to the kernel, so a single late
difference in a huge buffer costs one chunk's scan. A file's digest is the
xxh3-128 of its size and its chunk digests, so two files with equal file
digests hashed with the same chunk size are (barring a 128-bit collision)
identical.

Files are read in aligned 1 MiB pieces (``reader``) and each thread hashes
whole files: xxhash releases the GIL, so threads hash in parallel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import xxhash

from ..errors import problem_kind
from ..options import DEFAULT_CHUNK_SIZE
from ..results import Problem
from ..sources.reader import READ_SIZE, buffer, describe_os_error, open_dump, read_exact
from .discover import DumpFile


@dataclass(frozen=True)
class FileDigest:
    path: str
    size: int
    chunk_size: int
    chunks: tuple[bytes, ...]

    @property
    def digest(self) -> bytes:
        return xxhash.xxh3_128_digest(self.size.to_bytes(8, "little") + b"".join(self.chunks))


def hash_file(f: DumpFile, chunk_size: int = DEFAULT_CHUNK_SIZE) -> FileDigest:
    """Chunk digests of one file; raises OSError (FileChanged) on a torn read."""
    chunks: list[bytes] = []
    mv = buffer(0)
    with open_dump(f) as fd:
        pos = 0
        streaming: xxhash.xxh3_128 | None = None
        while pos < f.size:
            view = read_exact(fd, mv[: min(READ_SIZE, f.size - pos)], pos, f.path)
            i = 0
            while i < len(view):
                take = min(chunk_size - (pos + i) % chunk_size, len(view) - i)
                end = pos + i + take
                if streaming is None and take == chunk_size:
                    chunks.append(xxhash.xxh3_128_digest(view[i : i + take]))
                else:
                    if streaming is None:
                        streaming = xxhash.xxh3_128()
                    streaming.update(view[i : i + take])
                    if end % chunk_size == 0 or end == f.size:
                        chunks.append(streaming.digest())
                        streaming = None
                i += take
            pos += len(view)
    return FileDigest(f.path, f.size, chunk_size, tuple(chunks))


def hash_batch(files: Sequence[DumpFile], chunk_size: int) -> list[FileDigest | Problem]:
    """Hash several files (one pool task); a file that fails becomes a Problem."""
    out: list[FileDigest | Problem] = []
    for f in files:
        try:
            out.append(hash_file(f, chunk_size))
        except OSError as exc:
            out.append(Problem(f.path, describe_os_error(exc), kind=problem_kind(exc)))
    return out


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
        if ranges and ranges[-1][1] == start:
            ranges[-1][1] = end
        else:
            ranges.append([start, end])
    return tuple((s, e) for s, e in ranges), mismatched
