"""Hashing through memory maps and through reads (stages/hash.py, sources/reader.py).

Both paths must give the same chunk digests for every size and chunk size,
around window and chunk boundaries; a file that shrinks or changes is an
error (the process survives), never a digest; callers can forbid maps; a
file that cannot be mapped is read instead; and mapped windows are unmapped
as they go, so peak memory stays bounded for files larger than memory.
"""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

import fastdiff.sources.reader as reader
import fastdiff.stages.hash as hashing
from fastdiff.sources.buffers import BufferDigest, BufferRef
from fastdiff.sources.folder import discover
from fastdiff.sources.reader import FileChanged, open_fd, views
from fastdiff.stages.hash import chunk_digests, hash_batch, hash_buffer

REPO = Path(__file__).resolve().parents[1]
PAGE = reader.PAGE
#: Small windows, so that files of a few pages span several of them.
WINDOW = 4 * PAGE


@contextmanager
def small_windows(window: int = WINDOW, map_min: int = 1) -> Iterator[None]:
    """Windows of ``window`` bytes; every non-empty file mapped."""
    saved = reader.WINDOW, hashing.MAP_MIN
    reader.WINDOW, hashing.MAP_MIN = window, map_min
    try:
        yield
    finally:
        reader.WINDOW, hashing.MAP_MIN = saved


@contextmanager
def unmappable(after: int = 0) -> Iterator[list[int]]:
    """``map_window`` fails (as on a file system without mmap) after ``after`` maps."""
    real = reader.map_window
    calls: list[int] = []

    def map_window(fd: int, f: BufferRef, offset: int, length: int) -> object:
        calls.append(offset)
        if len(calls) > after:
            raise OSError(errno.ENODEV, "No such device")
        return real(fd, f, offset, length)

    reader.map_window = map_window  # type: ignore[assignment]
    try:
        yield calls
    finally:
        reader.map_window = real


def naive(data: bytes, chunk_size: int) -> list[bytes]:
    return [
        xxhash.xxh3_128_digest(data[i : i + chunk_size]) for i in range(0, len(data), chunk_size)
    ]


def one_dump(folder: Path, data: bytes) -> BufferRef:
    folder.mkdir(exist_ok=True)
    (folder / "step_0_x.bin").write_bytes(data)
    (f,) = discover(folder).files
    return f


def boundary_sizes() -> st.SearchStrategy[int]:
    near = [k * WINDOW + d for k in range(5) for d in (-PAGE, -8, -1, 0, 1, 8, PAGE)]
    return st.one_of(st.sampled_from([n for n in near if n >= 0]), st.integers(0, 5 * WINDOW))


CHUNK_SIZES = st.one_of(
    st.sampled_from([8, 24, PAGE, PAGE + 8, WINDOW - 8, WINDOW, WINDOW + 8, 3 * WINDOW]),
    st.integers(1, 3 * WINDOW // 8).map(lambda k: 8 * k),
)


@settings(max_examples=150, deadline=None)
@given(size=boundary_sizes(), chunk_size=CHUNK_SIZES, seed=st.integers(0, 2**32 - 1))
def test_mapped_and_read_paths_give_the_naive_digests(
    size: int, chunk_size: int, seed: int
) -> None:
    data = random.Random(seed).randbytes(size)
    with tempfile.TemporaryDirectory() as tmp:
        f = one_dump(Path(tmp), data)
        expect = naive(data, chunk_size)
        with small_windows():
            mapped = hash_buffer(f, chunk_size)
            read = hash_buffer(f, chunk_size, use_mmap=False)
            with unmappable(after=1):  # first window mapped, the rest read
                mixed = hash_buffer(f, chunk_size)
        assert list(mapped.chunks) == list(read.chunks) == list(mixed.chunks) == expect
        assert mapped == read == mixed
        assert mapped.digest == xxhash.xxh3_128_digest(
            size.to_bytes(8, "little") + b"".join(expect)
        )


@settings(max_examples=100, deadline=None)
@given(size=boundary_sizes(), data=st.data())
def test_views_cover_any_range_in_order(size: int, data: st.DataObject) -> None:
    """``views`` reads any range, mapped or read, in order."""
    start = data.draw(st.integers(0, size))
    end = data.draw(st.integers(start, size))
    content = os.urandom(size)
    with tempfile.TemporaryDirectory() as tmp:
        f = one_dump(Path(tmp), content)
        with small_windows():
            for use_mmap in (True, False):
                fd = open_fd(f.path)
                try:
                    got = b"".join(bytes(v) for v in views(fd, f, start, end, use_mmap))
                finally:
                    os.close(fd)
                assert got == content[start:end]


def test_chunk_digests_of_pieces_of_any_length() -> None:
    data = os.urandom(10_000)
    cuts = [0, 1, 7, 8, 100, 4096, 4097, 9_999, 10_000]
    for chunk_size in (8, 64, 4096, 10_000, 16_384):
        pieces = [memoryview(data[a:b]) for a, b in pairwise(cuts)]  # released as consumed
        assert list(chunk_digests(pieces, chunk_size)) == naive(data, chunk_size)


def test_big_files_are_mapped_small_ones_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = reader.map_window

    def map_window(fd: int, f: BufferRef, offset: int, length: int) -> object:
        calls.append(length)
        return real(fd, f, offset, length)

    monkeypatch.setattr(reader, "map_window", map_window)
    small = one_dump(tmp_path / "small", os.urandom(hashing.MAP_MIN - 8))
    hash_buffer(small)
    assert calls == []
    big = one_dump(tmp_path / "big", os.urandom(reader.WINDOW + hashing.MAP_MIN))
    d = hash_buffer(big)
    assert calls == [reader.WINDOW, hashing.MAP_MIN]
    assert d == hash_buffer(big, use_mmap=False)
    assert calls == [reader.WINDOW, hashing.MAP_MIN]  # use_mmap=False: no map at all


def test_a_small_file_costs_open_one_read_one_fstat_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lean path: discovery's stat plus one fstat after the read is the
    whole check (a write since discovery moved the ctime)."""
    f = one_dump(tmp_path, os.urandom(16 << 10))
    calls: list[str] = []
    for name in ("open", "fstat", "preadv", "pread", "read", "close"):
        real = getattr(os, name)

        def counting(*args: object, _name: str = name, _real: object = real) -> object:
            calls.append(_name)
            return _real(*args)  # type: ignore[operator]

        monkeypatch.setattr(os, name, counting)
    hash_buffer(f)
    monkeypatch.undo()
    assert calls == ["open", "preadv", "fstat", "close"]


def test_callers_can_forbid_maps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For files a writer may truncate (watch): reads only, in every path."""

    def no_map(*args: object) -> None:
        raise AssertionError("mapped a file although use_mmap=False")

    monkeypatch.setattr(reader, "map_window", no_map)
    sizes = (0, 100, hashing.MAP_MIN, 3 << 20)
    files = [one_dump(tmp_path / str(n), os.urandom(n)) for n in sizes]
    for f in files:
        (got,) = hash_batch([f], 1 << 20, use_mmap=False)
        assert isinstance(got, BufferDigest)
        assert list(got.chunks) == naive(Path(f.path).read_bytes(), 1 << 20)


def test_a_file_that_cannot_be_mapped_is_read(tmp_path: Path) -> None:
    data = os.urandom(3 * WINDOW + 100)
    f = one_dump(tmp_path, data)
    with small_windows(), unmappable() as calls:
        d = hash_buffer(f, PAGE)
    assert calls == [0]  # tried once, then read
    assert list(d.chunks) == naive(data, PAGE)


def test_file_digest_is_a_value() -> None:
    import pickle

    d = BufferDigest("p", 3, 8, (b"x" * 16,))
    assert d == BufferDigest("p", 3, 8, (b"x" * 16,)) and hash(d) == hash(
        BufferDigest("p", 3, 8, (b"x" * 16,))
    )
    assert d != BufferDigest("p", 3, 8, (b"y" * 16,))
    assert pickle.loads(pickle.dumps(d)) == d
    assert not hasattr(d, "__dict__")
    assert "chunk_size=8" in repr(d)


# --- files that change: an error, never a digest, and the process survives ---------


def _shrink_to(size: int) -> object:
    def change(path: str) -> None:
        os.truncate(path, size)

    return change


def _rewrite_same_size(path: str) -> None:
    time.sleep(0.01)
    with open(path, "r+b") as fh:
        fh.seek(PAGE)
        fh.write(b"\x01" * 8)


def _append(path: str) -> None:
    with open(path, "ab") as fh:
        fh.write(b"\0" * 8)


CHANGES = {
    "shrunk inside the first window": (0, _shrink_to(WINDOW // 2)),
    "shrunk to the end of the first window": (0, _shrink_to(WINDOW)),
    "shrunk before the second window": (1, _shrink_to(WINDOW + PAGE)),
    "emptied before the last window": (2, _shrink_to(0)),
    "rewritten, same size": (1, _rewrite_same_size),
    "grown": (1, _append),
}


def _hash_with_a_change_in_a_child(path: Path, before_map: int, change: str) -> str:
    """In a child process (a SIGBUS would kill it, not the test run): hash the
    file in small windows, applying ``change`` right before map number
    ``before_map`` is made (after its predecessors were hashed)."""
    code = f"""
import sys
sys.path.insert(0, {str(REPO / "tests")!r})
import test_hashing as t
from fastdiff.sources import reader
from fastdiff.sources.folder import discover
from fastdiff.stages.hash import hash_batch
(f,) = discover({str(path.parent)!r}).files
_, change = t.CHANGES[{change!r}]
real = reader.map_window
maps = []
def map_window(fd, f, offset, length):
    if len(maps) == {before_map}:
        change(f.path)
    maps.append(offset)
    return real(fd, f, offset, length)
reader.map_window = map_window
with t.small_windows():
    (got,) = hash_batch([f], t.PAGE)
print(type(got).__name__, getattr(got, "message", ""), maps)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                       timeout=60, check=False)  # fmt: skip
    assert r.returncode == 0, (r.returncode, r.stderr)
    return r.stdout


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_mapped_file_that_changes_is_an_error_and_the_process_survives(
    tmp_path: Path, change: str
) -> None:
    path = tmp_path / "step_0_x.bin"
    path.write_bytes(os.urandom(3 * WINDOW))
    before_map, _ = CHANGES[change]
    out = _hash_with_a_change_in_a_child(path, before_map, change)
    assert out.startswith("Problem changed while fastdiff was comparing it"), out


def test_a_file_swapped_for_another_kind_after_discovery(tmp_path: Path) -> None:
    """One fstat after the read (and none before) still names what happened."""
    for size in (100, 3 * WINDOW):
        d = tmp_path / f"run{size}"
        d.mkdir()
        f = one_dump(d, os.urandom(size))
        os.unlink(f.path)
        os.mkfifo(f.path)
        with small_windows(), pytest.raises(FileChanged, match="no longer a regular file"):
            hash_buffer(f, PAGE)
        os.unlink(f.path)
        os.mkdir(f.path)
        with small_windows(), pytest.raises(FileChanged, match="no longer a regular file"):
            hash_buffer(f, PAGE)


def test_a_file_truncated_while_a_window_is_hashed_kills_the_process_never_a_verdict(
    tmp_path: Path,
) -> None:
    """The residual risk the README states: a truncation DURING the hash of a
    mapped window raises SIGBUS, which Python cannot catch; the process dies
    (exit status 135 from a shell) and prints no verdict."""
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        run.mkdir()
        (run / "step_0_x.bin").write_bytes(bytes(3 << 20))
    code = f"""
import os, resource, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
import fastdiff.stages.hash as h
from fastdiff.cli import main
real = h.xxh3_128_digest
def truncating(view):
    for run in ({str(a)!r}, {str(b)!r}):  # a writer truncates the file under the map
        os.truncate(os.path.join(run, "step_0_x.bin"), 0)
    return real(view)
h.xxh3_128_digest = truncating
sys.exit(main(["compare", {str(a)!r}, {str(b)!r}, "--format", "json", "--chunk-size", "1048576"]))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                       timeout=60, check=False)  # fmt: skip
    assert r.returncode == -7, (r.returncode, r.stderr)  # SIGBUS
    assert r.stdout == ""


# --- bounded memory --------------------------------------------------------------------


def _peak_rss_kib(cmd: list[str]) -> tuple[int, str, int]:
    """Run ``cmd`` in a child; (exit code, stdout, its peak RSS in KiB)."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(p.returncode)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.stdout.write(p.stdout)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True,
                       cwd=REPO, timeout=600, check=False)  # fmt: skip
    rc, peak, out = r.stdout.split("\n", 2)
    return int(rc), out, int(peak)


def test_peak_memory_of_a_4_gib_identical_pair_stays_bounded(tmp_path: Path) -> None:
    """Mapped page-cache pages count in RSS: windows are unmapped as they go,
    so hashing two 4 GiB sparse files (in two threads) stays within 64 MiB
    of the same command on a tiny pair."""
    peaks = {}
    for name, size in (("tiny", 4096), ("huge", 4 << 30)):
        a, b = tmp_path / f"{name}_a", tmp_path / f"{name}_b"
        for run in (a, b):
            run.mkdir()
            with open(run / "step_0_x.bin", "wb") as fh:
                fh.truncate(size)
        cmd = [sys.executable, "-m", "fastdiff", "compare", str(a), str(b), "--format", "json",
               "--default-dtype", "f32"]  # fmt: skip
        rc, out, peaks[name] = _peak_rss_kib(cmd)
        assert rc == 0, out
        assert json.loads(out)["buffers"][0]["status"] == "equal"
    assert peaks["huge"] - peaks["tiny"] < 64 << 10, peaks  # KiB
