"""In-process timing, and the floors a comparison is measured against.

:func:`time_calls` times in-process calls (a library function timed
without a process start): median-ready samples after warm-up calls,
interleaved across the calls compared (:func:`interleaved`: round ``r``
calls every function once, the first one rotating from round to round, so
slow patches of machine noise hit all alike). A call too quick for the
clock is timed in loops of back-to-back calls (:func:`autorange`), each
sample being the loop's time over its length.

Page cache: this kind of VM evicts files left idle for about a minute, so
call :func:`read_once` on a workload's inputs right before timing it.
:func:`read_once` (readinto) and :func:`hash_once` (xxh3 over mmap) are
also the floors a comparison is measured against.

What ``fastdiff bench`` uses; the timing of whole commands, side by side,
and the interpreters the scripts of ``benchmarks/`` time them with, are in
``benchmarks/harness.py``.
"""

from __future__ import annotations

import math
import mmap
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

_READ_CHUNK = 1 << 20


def median(values: Iterable[float]) -> float:
    """Median of the timings (ValueError when there are none)."""
    return statistics.median(values)


def interleaved(
    names: list[str], run: Callable[[str], float], repeat: int, warmup: int
) -> dict[str, list[float]]:
    """``warmup`` untimed rounds, then ``repeat`` timed rounds; each round runs
    every name once, starting one name later than the round before."""
    if repeat < 1 or warmup < 0:
        raise ValueError(f"repeat must be >= 1 and warmup >= 0, got {repeat}, {warmup}")
    for _ in range(warmup):
        for name in names:
            run(name)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(repeat):
        shift = round_index % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            times[name].append(run(name))
    return times


def time_loop(fn: Callable[[], object], loops: int = 1) -> float:
    """Seconds per call of ``fn``, over ``loops`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def autorange(fn: Callable[[], object], min_time: float = 0.01, max_loops: int = 10_000) -> int:
    """How many back-to-back calls of ``fn`` make a sample of ``min_time`` seconds.

    Grows the loop from 1 call by what the last try took; every try is a
    warm-up call too. A call that alone takes ``min_time`` gives 1.
    """
    loops = 1
    while True:
        per_call = time_loop(fn, loops)
        if per_call * loops >= min_time or loops >= max_loops:
            return loops
        want = math.ceil(1.2 * min_time / per_call) if per_call > 0 else 2 * loops
        loops = min(max_loops, max(2 * loops, want))


def time_calls(
    calls: Mapping[str, Callable[[], object]],
    repeat: int = 5,
    warmup: int = 1,
    loops: int | Mapping[str, int] = 1,
) -> dict[str, list[float]]:
    """Time in-process calls ``repeat`` times each, interleaved; return seconds per call.

    ``warmup`` untimed rounds first, then rounds that call every function
    once, rotating which goes first (:func:`interleaved`). A sample is
    ``loops`` back-to-back calls (an int for all, or per name, missing
    names 1; see :func:`autorange`) divided by ``loops``. Exceptions
    propagate: check a call's result before timing it.
    """

    def run(name: str) -> float:
        n = loops if isinstance(loops, int) else loops.get(name, 1)
        return time_loop(calls[name], n)

    if isinstance(loops, int) and loops < 1:
        raise ValueError(f"loops must be >= 1, got {loops}")
    return interleaved(list(calls), run, repeat, warmup)


def _files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(c for c in p.iterdir() if c.is_file()))
        else:
            files.append(p)
    return files


def read_once(paths: Iterable[str | os.PathLike[str]], buffer: memoryview | None = None) -> int:
    """Read files in full once so they sit in the page cache; return bytes read.

    A directory stands for the regular files directly in it. Reads go into
    one page-aligned buffer (an unaligned one reads several times slower on
    this machine): ``buffer`` if given (see :func:`aligned_buffer`; reuse one
    when timing this as the floor of reading the files), else a fresh one.
    """
    if buffer is not None:
        return _read_into(_files(paths), buffer)
    with mmap.mmap(-1, _READ_CHUNK) as buf, memoryview(buf) as view:
        return _read_into(_files(paths), view)


def aligned_buffer(size: int = _READ_CHUNK) -> memoryview:
    """A page-aligned buffer of ``size`` bytes (private anonymous memory), pages touched."""
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    view = memoryview(buf)
    view[:] = bytes(size)  # fault the pages in now, not in the first timed read
    return view


def _read_into(files: list[Path], view: memoryview) -> int:
    total = 0
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(view):
                total += n
    return total


def hash_once(paths: Iterable[str | os.PathLike[str]], threads: int = 1) -> int:
    """Hash files in full with xxh3_64 over a read-only memory map; return bytes hashed.

    The other floor of comparing runs, next to :func:`read_once`: no copy
    into a buffer, the hash reads the mapped page cache directly. With
    ``threads`` > 1 the files are dealt out in turn to that many threads
    (xxhash releases the GIL), so a pair of files is hashed side by side.
    A directory stands for the regular files directly in it.
    """
    import xxhash

    files = _files(paths)
    totals = [0] * max(1, min(threads, len(files)))

    def work(share: int) -> None:
        for path in files[share :: len(totals)]:
            with open(path, "rb", buffering=0) as f:
                size = os.fstat(f.fileno()).st_size
                if size:  # an empty file cannot be mapped
                    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                        xxhash.xxh3_64_intdigest(m)
                totals[share] += size

    if len(totals) == 1:
        work(0)
        return totals[0]
    errors: list[BaseException] = []

    def guarded(share: int) -> None:
        try:
            work(share)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    workers = [threading.Thread(target=guarded, args=(i,)) for i in range(len(totals))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return sum(totals)
