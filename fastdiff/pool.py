"""Fan-out: batches of work, run in this thread or over any executor.

The pipeline hands tasks to a runner and reads results back as they
complete. ``SerialRunner`` runs them in this thread, without importing
``concurrent.futures`` at all (small comparisons start faster);
``PoolRunner`` wraps any ``concurrent.futures.Executor`` the caller owns (a
thread pool, a process pool, a Dask client's executor) and calls only
``submit`` on it and ``as_completed`` on its futures. Tasks are module-level
functions over batches, so they pickle; small files are batched together
because a task costs tens of microseconds of overhead (more in a process
pool) while a small file hashes in a few. Results are keyed by what they
are about, never by completion order, so every executor gives the same
report.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

T = TypeVar("T")

EXECUTORS = ("auto", "serial", "thread", "process")

#: Below this many bytes to hash in total, work stays in this thread: a pool
#: costs more to start and feed than it saves (benchmarks/bench_pool.py).
SERIAL_MAX_BYTES = 8 << 20
#: A batch of small files is closed once it holds this many bytes or files.
BATCH_BYTES = 16 << 20
BATCH_FILES = 256

#: (tag, result, exception): what a runner yields for each finished task.
Finished = tuple[Any, Any, BaseException | None]


class SerialRunner:
    """Runs each task in this thread, in submission order, as results are read."""

    def __init__(self) -> None:
        self._queue: deque[tuple[Any, Callable[..., Any], tuple[Any, ...]]] = deque()

    def submit(self, tag: Any, fn: Callable[..., Any], *args: Any) -> None:
        self._queue.append((tag, fn, args))

    def results(self) -> Iterator[Finished]:
        while self._queue:
            tag, fn, args = self._queue.popleft()
            try:
                result = fn(*args)
            except Exception as exc:
                yield tag, None, exc
            else:
                yield tag, result, None


class PoolRunner:
    """Runs tasks on an executor; yields them as they complete."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._pending: dict[Future[Any], Any] = {}

    def submit(self, tag: Any, fn: Callable[..., Any], *args: Any) -> None:
        self._pending[self.executor.submit(fn, *args)] = tag

    def results(self) -> Iterator[Finished]:
        from concurrent.futures import as_completed

        # Tasks submitted while a round is read wait for the next round;
        # executors run tasks in submission order anyway.
        while self._pending:
            for fut in as_completed(list(self._pending)):
                tag = self._pending.pop(fut)
                try:
                    result = fut.result()
                except Exception as exc:
                    yield tag, None, exc
                else:
                    yield tag, result, None


Runner = SerialRunner | PoolRunner


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
def open_runner(kind: str, jobs: int, executor: Executor | None = None) -> Iterator[Runner]:
    """A runner for ``kind``; with ``executor`` given, that one (the caller owns it)."""
    if executor is not None:
        yield PoolRunner(executor)
        return
    if kind == "serial" or (jobs <= 1 and kind != "process"):
        yield SerialRunner()
        return
    ex: Executor
    if kind == "thread":
        from concurrent.futures import ThreadPoolExecutor

        ex = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fastdiff")
    elif kind == "process":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # fork is the cheapest start (18 ms for two workers, against 120 ms
        # for forkserver) but unsafe once other threads run.
        method = "fork" if threading.active_count() == 1 else "forkserver"
        ex = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method))
    else:
        raise ValueError(f"unknown executor {kind!r} (valid: {' '.join(EXECUTORS)})")
    try:
        yield PoolRunner(ex)
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
