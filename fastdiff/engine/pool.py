"""Fan-out: batches of work, run in this thread or over any executor.

The scheduler hands tasks to a runner, at most ``capacity`` at a time (it
keeps the rest itself, so it can put urgent tasks first and drop work it no
longer needs), and takes finished ones back one at a time (``next``);
``cancel`` drops what has not started. ``SerialRunner`` runs each task in
this thread when it is taken, without importing ``concurrent.futures`` or
``threading`` at all (small comparisons start faster); ``ThreadRunner``
runs them on threads of its own, without those imports either;
``PoolRunner`` wraps
any ``concurrent.futures.Executor`` the caller owns (a thread pool, a
process pool, a Dask client's executor) and calls only ``submit`` on it and
``add_done_callback`` on its futures. Tasks are module-level functions over
batches, so they pickle; small files are batched together because a task
costs tens of microseconds of overhead (more in a process pool) while a
small file hashes in a few. Results are keyed by what they are about, never
by completion order, so every executor gives the same report.
``gc_paused`` keeps the cyclic garbage collector off during a bulk job.
"""

from __future__ import annotations

import gc
import os

from ..options import EXECUTORS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from concurrent.futures import Executor, Future
    from queue import SimpleQueue
    from types import TracebackType
    from typing import Any, TypeVar

    T = TypeVar("T")
    #: (tag, result, exception): what a runner gives back for each finished task.
    Finished = tuple[Any, Any, BaseException | None]


#: Below this many bytes to hash in total, work stays in this thread: a pool
#: costs more to start and feed than it saves. Measured in-process (fastdiff
#: bench): a pair of 64 MiB files takes 10.4 ms serial against 11.0 ms on two
#: threads, a pair of 256 MiB files 44 ms against 32 ms; a sweep of 16 runs
#: of 136 small files (37 MB) 80 ms serial against 96-124 ms threaded.
SERIAL_MAX_BYTES = 128 << 20
#: A batch of small files is closed once it holds this many bytes or files.
BATCH_BYTES = 16 << 20
BATCH_FILES = 256


class SerialRunner:
    """Runs each task in this thread, in submission order, when ``next`` takes it."""

    __slots__ = ("_head", "_tasks", "capacity", "kind")

    def __init__(self, kind: str = "serial") -> None:
        #: The executor kind reports name (``Work.executor``).
        self.kind = kind
        #: How many tasks to hand it at a time: one, the one it runs next.
        self.capacity: int | None = 1
        self._tasks: list[tuple[Any, Callable[..., Any], tuple[Any, ...]] | None] = []
        self._head = 0

    def submit(self, tag: Any, fn: Callable[..., Any], *args: Any) -> None:
        self._tasks.append((tag, fn, args))

    @property
    def busy(self) -> bool:
        """True while a task waits to run."""
        return self._head < len(self._tasks)

    @property
    def in_flight(self) -> int:
        """Tasks handed over and not taken back yet."""
        return len(self._tasks) - self._head

    def next(self, timeout: float | None = None) -> Finished | None:
        """Run the next task and return it; None when there is none. (A task
        here runs to its end: ``timeout`` is for the common interface.)"""
        tasks = self._tasks
        if self._head >= len(tasks):
            self.cancel()
            return None
        task = tasks[self._head]
        tasks[self._head] = None  # its arguments are not kept alive
        self._head += 1
        if self._head >= 1024 and self._head * 2 >= len(tasks):
            del tasks[: self._head]
            self._head = 0
        assert task is not None
        tag, fn, args = task
        try:
            result = fn(*args)
        except Exception as exc:
            return tag, None, exc
        return tag, result, None

    def cancel(self) -> None:
        """Forget every task not run yet."""
        self._tasks = []
        self._head = 0


class PoolRunner:
    """Runs tasks on an executor; ``next`` returns them as they complete.

    With ``factory`` (an executor fastdiff created and owns), a pool broken by
    a dying worker process is replaced and each task it took down is run once
    more; a task whose second worker dies too is reported as failed. An
    executor the caller owns is never replaced.
    """

    __slots__ = ("_finished", "_pending", "capacity", "executor", "factory", "kind")

    def __init__(
        self,
        executor: Executor,
        factory: Callable[[], Executor] | None = None,
        kind: str = "external",
        capacity: int | None = None,
    ) -> None:
        from queue import SimpleQueue

        self.executor = executor
        self.factory = factory
        #: The executor kind reports name (``Work.executor``).
        self.kind = kind
        #: How many tasks to hand it at a time (None: all there are, for an
        #: executor whose size fastdiff does not know, e.g. a Dask cluster's).
        self.capacity = capacity
        self._pending: dict[Future[Any], tuple[Any, Callable[..., Any], tuple[Any, ...], int]] = {}
        #: Futures as they complete: their done callbacks put them here.
        self._finished: SimpleQueue[Future[Any]] = SimpleQueue()

    def submit(self, tag: Any, fn: Callable[..., Any], *args: Any) -> None:
        self._submit(tag, fn, args, 0)

    def _submit(self, tag: Any, fn: Callable[..., Any], args: tuple[Any, ...], tries: int) -> None:
        fut = self.executor.submit(fn, *args)
        self._pending[fut] = (tag, fn, args, tries)
        fut.add_done_callback(self._finished.put)

    @property
    def busy(self) -> bool:
        """True while a task runs or waits to run."""
        return bool(self._pending)

    @property
    def in_flight(self) -> int:
        """Tasks handed over and not taken back yet."""
        return len(self._pending)

    def _replace_broken(self) -> None:
        assert self.factory is not None
        old = self.executor
        self.executor = self.factory()
        stop_executor(old)

    def next(self, timeout: float | None = None) -> Finished | None:
        """The next task to complete; None when none is left, or when none
        completed within ``timeout`` seconds (``busy`` tells which)."""
        import time
        from concurrent.futures import BrokenExecutor
        from queue import Empty

        deadline = None if timeout is None else time.monotonic() + timeout
        while self._pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                fut = self._finished.get(timeout=wait)
            except Empty:
                return None
            entry = self._pending.pop(fut, None)
            if entry is None:
                continue  # cancelled: no longer ours
            tag, fn, args, tries = entry
            try:
                result = fut.result()
            except BrokenExecutor as exc:
                if self.factory is not None and tries == 0:
                    if getattr(self.executor, "_broken", False):
                        self._replace_broken()
                    self._submit(tag, fn, args, 1)
                    continue
                return tag, None, WorkerDied(f"a worker process died twice running it ({exc})")
            except Exception as exc:
                return tag, None, exc
            return tag, result, None
        return None

    def cancel(self) -> None:
        """Cancel every task not started yet; those running finish unheeded."""
        pending, self._pending = self._pending, {}
        for fut in pending:
            fut.cancel()


class ThreadRunner:
    """Runs tasks on ``jobs`` threads of its own; ``next`` returns them as they
    complete.

    Built on ``_thread`` and ``_queue`` (what ``threading`` and
    ``concurrent.futures`` are built on), so a comparison that fans out over
    threads does not import ``concurrent.futures``, ``threading`` or
    ``logging``: 10 to 25 ms of a 100 ms compare of a 512 MiB pair. xxhash and
    the kernels release the GIL, so the threads hash and scan side by side.
    """

    __slots__ = ("_done", "_finished", "_in_flight", "_stale", "_tasks", "capacity", "kind")

    def __init__(self, jobs: int, kind: str = "thread") -> None:
        import _thread
        from _queue import SimpleQueue

        self.kind = kind
        #: Two tasks per thread: one running, one ready to start.
        self.capacity: int | None = 2 * jobs
        self._tasks: SimpleQueue[tuple[Any, Callable[..., Any], tuple[Any, ...], int] | None]
        self._tasks = SimpleQueue()
        self._finished: SimpleQueue[tuple[int, Finished]] = SimpleQueue()
        self._in_flight = 0
        #: Tasks taken back by ``cancel`` carry an older generation: ignored.
        self._stale = 0
        #: One lock per thread, held while it runs: ``close`` waits on them.
        self._done = [_thread.allocate_lock() for _ in range(jobs)]
        for lock in self._done:
            lock.acquire()
            _thread.start_new_thread(self._work, (lock,))

    def _work(self, lock: Any) -> None:
        tasks, finished = self._tasks, self._finished
        try:
            while True:
                item = tasks.get()
                if item is None:
                    return
                tag, fn, args, generation = item
                try:
                    out: Finished = (tag, fn(*args), None)
                except BaseException as exc:  # reported to the scheduler, never lost
                    out = (tag, None, exc)
                finished.put((generation, out))
        finally:
            lock.release()

    def submit(self, tag: Any, fn: Callable[..., Any], *args: Any) -> None:
        self._in_flight += 1
        self._tasks.put((tag, fn, args, self._stale))

    @property
    def busy(self) -> bool:
        """True while a task runs or waits to run."""
        return self._in_flight > 0

    @property
    def in_flight(self) -> int:
        """Tasks handed over and not taken back yet."""
        return self._in_flight

    def next(self, timeout: float | None = None) -> Finished | None:
        """The next task to complete; None when none is left, or when none
        completed within ``timeout`` seconds (``busy`` tells which)."""
        from _queue import Empty

        while self._in_flight:
            try:
                if timeout is None:
                    generation, out = self._finished.get()
                else:
                    generation, out = self._finished.get(timeout=max(0.0, timeout))
            except Empty:
                return None
            if generation != self._stale:
                continue  # a task from before a cancel: no longer ours
            self._in_flight -= 1
            return out
        return None

    def cancel(self) -> None:
        """Drop every task not started yet; those running finish unheeded."""
        from _queue import Empty

        self._stale += 1
        self._in_flight = 0
        try:
            while True:
                self._tasks.get_nowait()
        except Empty:
            pass

    def close(self) -> None:
        """Stop the threads once their tasks are done, and wait for them."""
        for _ in self._done:
            self._tasks.put(None)
        for lock in self._done:
            lock.acquire()
            lock.release()


if TYPE_CHECKING:
    Runner = SerialRunner | PoolRunner | ThreadRunner


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
        import threading
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


class _OpenRunner:
    """``open_runner``'s context manager (a class: no ``contextlib`` to import)."""

    __slots__ = ("executor", "jobs", "kind", "owned", "runner")

    def __init__(self, kind: str, jobs: int, executor: Executor | None) -> None:
        self.kind = kind
        self.jobs = jobs
        self.executor = executor
        self.owned = False

    def __enter__(self) -> Runner:
        from ..sources import reader

        reader.CANCEL.clear()
        kind, jobs = self.kind, self.jobs
        runner: Runner
        if self.executor is not None:
            runner = PoolRunner(self.executor, kind=kind)
        elif kind == "serial" or (jobs <= 1 and kind != "process"):
            runner = SerialRunner(kind)
        elif kind == "thread":
            runner = ThreadRunner(jobs)
        else:
            # Two tasks per worker: one running, one ready to start.
            runner = PoolRunner(
                _make_executor(kind, jobs), lambda: _make_executor(kind, jobs), kind, 2 * jobs
            )
            self.owned = True
        self.runner = runner
        return runner

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        runner = self.runner
        if isinstance(runner, ThreadRunner):
            if exc_type is not None:
                from ..sources import reader

                reader.CANCEL.set()  # running tasks stop at their next piece
                runner.cancel()
            runner.close()
            return
        if not isinstance(runner, PoolRunner):
            return
        if exc_type is not None:
            from ..sources import reader

            reader.CANCEL.set()
            if self.owned:
                stop_executor(runner.executor, cancel=True)
        elif self.owned:
            stop_executor(runner.executor)


def open_runner(kind: str, jobs: int, executor: Executor | None = None) -> _OpenRunner:
    """``with open_runner(kind, jobs) as runner``: a runner for ``kind``; with
    ``executor`` given, over that one (the caller owns it).

    On an interrupt (Ctrl-C) running tasks are told to stop (``reader.cancel``)
    and fastdiff's own worker processes are terminated, so it exits promptly.
    """
    return _OpenRunner(kind, jobs, executor)


def batches(items: Sequence[T], weight: Callable[[T], int], parts: int) -> list[list[T]]:
    """Split ``items`` into batches: big items alone, small ones packed.

    A batch closes at BATCH_BYTES, BATCH_FILES, or its share of the total
    when there are few items, so ``parts`` workers all get some work.
    """
    weights = list(map(weight, items))
    cap = max(1, min(BATCH_BYTES, sum(weights) // max(1, parts)))
    out: list[list[T]] = []
    cur: list[T] = []
    cur_bytes = 0
    for item, w in zip(items, weights, strict=True):
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


class gc_paused:  # a lowercase name: used as ``with gc_paused():``
    """Pause Python's cyclic garbage collector for a bulk job, then restore it.

    A comparison builds a few objects per file (listing, pair, digest,
    result) and no reference cycles; the collector would walk them all again
    and again as they pile up: 1.35 of 3 s of a 2000-step run's bookkeeping
    (68,000 pairs) went there. Nested and concurrent pauses are fine: whoever
    found the collector on turns it back on.
    """

    __slots__ = ("was_on",)

    def __enter__(self) -> None:
        self.was_on = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_on:
            gc.enable()
