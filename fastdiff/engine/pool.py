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

from ..options import EXECUTORS

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

T = TypeVar("T")


#: Below this many bytes to hash in total, work stays in this thread: a pool
#: costs more to start and feed than it saves. Measured in-process (fastdiff
#: bench): a pair of 64 MiB files takes 10.4 ms serial against 11.0 ms on two
#: threads, a pair of 256 MiB files 44 ms against 32 ms; a sweep of 16 runs
#: of 136 small files (37 MB) 80 ms serial against 96-124 ms threaded.
SERIAL_MAX_BYTES = 128 << 20
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
    """Runs tasks on an executor; yields them as they complete.

    With ``factory`` (an executor fastdiff created and owns), a pool broken by
    a dying worker process is replaced and each task it took down is run once
    more; a task whose second worker dies too is reported as failed. An
    executor the caller owns is never replaced.
    """

    def __init__(self, executor: Executor, factory: Callable[[], Executor] | None = None) -> None:
        self.executor = executor
        self.factory = factory
        self._pending: dict[Future[Any], tuple[Any, Callable[..., Any], tuple[Any, ...], int]] = {}

    def submit(self, tag: Any, fn: Callable[..., Any], *args: Any) -> None:
        self._submit(tag, fn, args, 0)

    def _submit(self, tag: Any, fn: Callable[..., Any], args: tuple[Any, ...], tries: int) -> None:
        self._pending[self.executor.submit(fn, *args)] = (tag, fn, args, tries)

    def _replace_broken(self) -> None:
        assert self.factory is not None
        old = self.executor
        self.executor = self.factory()
        stop_executor(old)

    def results(self) -> Iterator[Finished]:
        from concurrent.futures import BrokenExecutor, as_completed

        # Tasks submitted while a round is read wait for the next round;
        # executors run tasks in submission order anyway.
        while self._pending:
            for fut in as_completed(list(self._pending)):
                tag, fn, args, tries = self._pending.pop(fut)
                try:
                    result = fut.result()
                except BrokenExecutor as exc:
                    if self.factory is not None and tries == 0:
                        if getattr(self.executor, "_broken", False):
                            self._replace_broken()
                        self._submit(tag, fn, args, 1)
                        continue
                    yield tag, None, WorkerDied(f"a worker process died twice running it ({exc})")
                except Exception as exc:
                    yield tag, None, exc
                else:
                    yield tag, result, None


class WorkerDied(RuntimeError):
    """The worker processes running a task died (killed, or crashed)."""


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what
    # to keep, and stops the workers itself.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_executor(ex: Executor, cancel: bool = False) -> None:
    """Shut a pool down: process workers are terminated at once when cancelling
    (or when the pool is broken), so no stray process outlives fastdiff."""
    processes = list((getattr(ex, "_processes", None) or {}).values())
    if cancel or getattr(ex, "_broken", False):
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in processes:
            proc.terminate()
        for proc in processes:
            proc.join(timeout=5)
            if proc.is_alive():  # pragma: no cover - a worker ignoring SIGTERM
                proc.kill()
                proc.join()
        ex.shutdown(wait=True)
    else:
        ex.shutdown(wait=True, cancel_futures=True)


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


def _make_executor(kind: str, jobs: int) -> Executor:
    if kind == "thread":
        from concurrent.futures import ThreadPoolExecutor

        return ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fastdiff")
    if kind == "process":
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # fork is the cheapest start (18 ms for two workers, against 120 ms
        # for forkserver) but unsafe once other threads run.
        method = "fork" if threading.active_count() == 1 else "forkserver"
        return ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context(method),
            initializer=_ignore_sigint,
        )
    raise ValueError(f"unknown executor {kind!r} (valid: {' '.join(EXECUTORS)})")


@contextmanager
def open_runner(kind: str, jobs: int, executor: Executor | None = None) -> Iterator[Runner]:
    """A runner for ``kind``; with ``executor`` given, that one (the caller owns it).

    On an interrupt (Ctrl-C) running tasks are told to stop (``reader.cancel``)
    and fastdiff's own worker processes are terminated, so it exits promptly.
    """
    from ..sources import reader

    reader.CANCEL.clear()
    if executor is not None:
        try:
            yield PoolRunner(executor)
        except BaseException:
            reader.CANCEL.set()
            raise
        return
    if kind == "serial" or (jobs <= 1 and kind != "process"):
        yield SerialRunner()
        return
    runner = PoolRunner(_make_executor(kind, jobs), factory=lambda: _make_executor(kind, jobs))
    try:
        yield runner
    except BaseException:
        reader.CANCEL.set()
        stop_executor(runner.executor, cancel=True)
        raise
    stop_executor(runner.executor)


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
        w = weight(item)
        if w >= cap and cur:  # a big item goes alone, not after small ones
            out.append(cur)
            cur, cur_bytes = [], 0
        cur.append(item)
        cur_bytes += w
        if cur_bytes >= cap or len(cur) >= BATCH_FILES:
            out.append(cur)
            cur, cur_bytes = [], 0
    if cur:
        out.append(cur)
    return out
