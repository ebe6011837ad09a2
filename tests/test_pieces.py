"""A buffer of several files (a distributed checkpoint's tensor) read in
global order: long rows of a piece read by the kernel into their places,
short ones read whole and spread; either way the bytes are the global
array's, checked against numpy on random shapes, tilings, element sizes
and ranges."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xxhash import xxh3_128_digest

from fastdiff.sources import access, reader
from fastdiff.sources.buffers import BufferRef, Piece, Pieces
from fastdiff.stages.hash import hash_buffer


def _grid(draw: st.DrawFn, shape: tuple[int, ...]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Boxes ``(start, shape)`` that tile ``shape``: a grid of random cuts."""
    cuts = []
    for n in shape:
        inner = draw(st.sets(st.integers(1, n - 1), max_size=3)) if n > 1 else set()
        edges = [0, *sorted(inner), n]
        cuts.append(list(itertools.pairwise(edges)))
    boxes: list[tuple[tuple[int, ...], tuple[int, ...]]] = [((), ())]
    for spans in cuts:
        boxes = [((*s, a), (*z, b - a)) for s, z in boxes for a, b in spans]
    return boxes


@st.composite
def layouts(draw: st.DrawFn) -> tuple[tuple[int, ...], int, list, bytes, int, int]:
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=1, max_size=4)))
    w = draw(st.sampled_from([1, 2, 4, 8]))
    boxes = _grid(draw, shape)
    total = int(np.prod(shape))
    data = draw(st.binary(min_size=total * w, max_size=total * w))
    lo = draw(st.integers(0, total))
    hi = draw(st.integers(lo, total))
    return shape, w, boxes, data, lo * w, hi * w


def _write(tmp: Path, shape: tuple[int, ...], w: int, boxes: list, data: bytes) -> BufferRef:
    """Each box in a file of its own, after some bytes of junk; the buffer
    ref as ``sources.dcp`` lists one."""
    tmp.mkdir(parents=True, exist_ok=True)
    whole = np.frombuffer(data, dtype=np.uint8).reshape(*shape, w)
    pieces = []
    for k, (start, size) in enumerate(boxes):
        path = tmp / f"__{k}_0.distcp"
        junk = bytes([0xA5]) * (k * 37 % 101)
        body = whole[tuple(slice(a, a + n) for a, n in zip(start, size, strict=True))].tobytes()
        path.write_bytes(junk + body + b"tail")
        s = path.stat()
        piece = Piece(str(path), s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns,
                      len(junk), len(body), start, size)  # fmt: skip
        pieces.append(piece)
    meta = tmp / ".metadata"
    meta.write_bytes(b"m")
    s = meta.stat()
    return BufferRef(
        str(meta), 0, "w", len(data), s.st_dev, s.st_ino, s.st_mtime_ns, s.st_ctime_ns,
        offset=0, file_size=s.st_size, dtype="uint8", shape=shape,
        codec=Pieces(w, shape, tuple(pieces)),
    )  # fmt: skip


def _read(f: BufferRef, lo: int, hi: int) -> bytes:
    fd = os.open(f.path, os.O_RDONLY)
    try:
        out = bytearray()
        for view in access.decoded_views(fd, f, lo, hi):
            out += view
            view.release()
        return bytes(out)
    finally:
        os.close(fd)


@pytest.mark.parametrize("row_copy", [1, 2048])
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=layouts())
def test_any_range_in_global_order_is_the_arrays(
    tmp_path: Path, row_copy: int, case: tuple
) -> None:
    """Read by rows into place (every row long enough: ``_ROW_COPY`` 1) or
    spread through numpy (these rows are short), in preadv calls of a few
    buffers (``_IOV_MAX`` 3, so several a box)."""
    shape, w, boxes, data, lo, hi = case
    f = _write(tmp_path / str(abs(hash((shape, w, tuple(boxes), data)))), shape, w, boxes, data)
    with (
        mock.patch.object(access, "_ROW_COPY", row_copy),
        mock.patch.object(reader, "_IOV_MAX", 3),
    ):
        assert _read(f, lo, hi) == data[lo:hi]
        chunk = 3 * w
        want = tuple(xxh3_128_digest(data[i : i + chunk]) for i in range(0, len(data), chunk))
        assert hash_buffer(f, chunk).chunks == want


def test_a_short_read_goes_on_where_it_stopped(tmp_path: Path) -> None:
    """preadv may fill less than asked: the rest is read from there on."""
    shape = (6, 3072)
    boxes = [((0, 0), (6, 1024)), ((0, 1024), (6, 1024)), ((0, 2048), (6, 1024))]
    data = np.random.default_rng(3).integers(0, 255, 6 * 3072 * 4, dtype=np.uint8).tobytes()
    f = _write(tmp_path, shape, 4, boxes, data)
    real = os.preadv

    def short(fd: int, buffers: list, offset: int) -> int:  # at most 1,000 bytes a call
        want = 1000
        parts = []
        for b in buffers:
            parts.append(b[: min(len(b), want)])
            want -= len(parts[-1])
            if not want:
                break
        return real(fd, parts, offset)

    with mock.patch.object(reader.os, "preadv", short):
        assert _read(f, 0, len(data)) == data
