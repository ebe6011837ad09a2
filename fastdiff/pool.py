"""Fan-out: batches of work over any ``concurrent.futures.Executor``.

The pipeline only calls ``submit`` and ``as_completed``, so the caller can
hand in any executor it owns (a thread pool, a process pool, a Dask
client's executor). Tasks are module-level functions over batches, so they
pickle; small files are batched together because a task costs tens of
microseconds of overhead (more in a process pool) while a small file hashes
in a few. Results are keyed by what they are about, never by completion
order, so every executor gives the same report.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import (
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    as_completed,
)
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("auto", "serial", "thread", "process")

#: Below this many bytes to hash in total, work stays in this thread: a pool
#: costs more to start and feed than it saves (benchmarks/bench_pool.py).
SERIAL_MAX_BYTES = 8 << 20
#: A batch of small files is closed once it holds this many bytes or files.
BATCH_BYTES = 16 << 20
BATCH_FILES = 256


class SerialExecutor(Executor):
    """Runs each task at once, in the calling thread."""

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        fut: Future[R] = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except Exception as exc:
            fut.set_exception(exc)
        return fut


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def resolve_executor_kind(kind: str, total_bytes: int) -> str:
    """``auto``: serial for small totals, else threads (xxhash and the
    kernels release the GIL, and threads start in microseconds)."""
    if kind != "auto":
        return kind
    return "serial" if total_bytes < SERIAL_MAX_BYTES else "thread"


@contextmanager
def open_executor(kind: str, jobs: int) -> Iterator[Executor]:
    if kind == "serial" or (jobs <= 1 and kind != "process"):
        yield SerialExecutor()
        return
    ex: Executor
    if kind == "thread":
        ex = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fastdiff")
    elif kind == "process":
        # fork is the cheapest start (18 ms for two workers, against 120 ms
        # for forkserver) but unsafe once other threads run.
        method = "fork" if threading.active_count() == 1 else "forkserver"
        ex = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method))
    else:
        raise ValueError(f"unknown executor {kind!r} (valid: {' '.join(EXECUTORS)})")
    try:
        yield ex
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def batches(items: Sequence[T], weight: Callable[[T], int], parts: int) -> list[list[T]]:
    """Split ``items`` into batches: big items alone, small ones packed.

    A batch closes at BATCH_BYTES, BATCH_FILES, or its share of the total
    when there are few items, so ``parts`` workers all get some work.
    """
    total = sum(weight(i) for i in items)
    cap = max(1, min(BATCH_BYTES, total // max(1, parts)))
    out: list[list[T]] = []
    cur: list[T] = []
    cur_bytes = 0
    for item in items:
        cur.append(item)
        cur_bytes += weight(item)
        if cur_bytes >= cap or len(cur) >= BATCH_FILES:
            out.append(cur)
            cur, cur_bytes = [], 0
    if cur:
        out.append(cur)
    return out


def fan_out(
    executor: Executor,
    fn: Callable[..., list[R]],
    groups: Sequence[Sequence[T]],
    *args: Any,
    on_failure: Callable[[Sequence[T], BaseException], list[R]],
) -> list[R]:
    """Run ``fn(batch, *args)`` for every batch; a batch whose task fails
    (a crashed worker, say) is turned into results by ``on_failure``."""
    futures = {executor.submit(fn, list(g), *args): g for g in groups}
    out: list[R] = []
    for fut in as_completed(futures):
        try:
            out.extend(fut.result())
        except Exception as exc:
            out.extend(on_failure(futures[fut], exc))
    return out
