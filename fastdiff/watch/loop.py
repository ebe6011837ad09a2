"""The watch loop: poll both runs, compare each step once complete in both,
report steps in order, stop at the first divergence.

Each step is a plan of its own (``engine.scheduler.Plan``: one step of two
runs), submitted to one ``Scheduler`` that runs the whole time, with reads
only (``use_mmap=False``: a writer may truncate a file while it is read,
and a mapped page past the new end would kill the process).

Each step of a run folder is read as ``compare`` reads the folder
(``sources.folder.folder_source``: ``.npy`` headers, containers, a
recorder's digest log), and the schema is chosen as ``compare`` chooses it
(``Watch._choose_schema``), so both report the same buffers for the same
finished runs; the summary's report is put together from the steps' as
compare's would be (``stages.report.parts_report``: the same notes, the
work summed by ``model.results.total_work``).

A step is submitted once complete in both runs (``poll.RunPoller``), in
step order; a step present in one run only, once the other run has moved
past it (holds a later step), or is a manifest, or once both runs are idle
(nothing written for ``idle_timeout`` seconds). Steps are reported in the
order they were submitted, each as soon as it and all before it are done.

Never a torn verdict: before a step that is not all equal is reported,
every file of it is stat'ed again (and, for a buffer found in one run only,
the other run is looked at again); if anything changed since the step was
listed, or a file changed while it was read, the step is read again
``settle`` seconds later, once complete again. A step read ``MAX_READS``
times, changing each time, reports the buffers that changed as errors
("kept changing while fastdiff read it"), never as a divergence.

(With ``lag`` K, a step is complete once the run holds a step later than
N + K: for writers that begin a step before they finish the one before.
Without a lag given, a buffer that one run lacks, or holds shorter than
the other, while that run is still writing, is never a divergence: the
run may yet write it. The step waits: if the run writes it, the step is
read again; if the run writes other files first, the buffer is an error
that names ``--lag``; if it stops writing, what it lacks it lacks. With a
lag given, even 0, the caller has said how far a writer runs ahead, and it
is a divergence once the run is past it.)
A run's newest step is complete when the run has been quiet for ``settle``
seconds; a writer that merely paused mid-step would then look as if it
lacked buffers or wrote short files. So when a step is the newest of a run
and that run lacks a buffer of it, has a shorter file, or a size that is
not a whole number of elements, the result is held until the run moves
past the step (then it stands, if nothing changed) or both runs are idle:
then a missing buffer is a divergence, as in ``compare``, and a shorter
file in the last step a run wrote is an error ("may be incomplete"):
fastdiff cannot tell a writer that died mid-file from a real length
mismatch.
"""

from __future__ import annotations

import gc
import heapq
import os
import sys
import time
from collections import deque

from ..engine.pool import default_jobs, gc_paused, open_runner, resolve_executor_kind
from ..engine.scheduler import Plan, Scheduler
from ..model.results import BufferResult, Problem, Skipped, Work, total_work
from ..model.statuses import TROUBLE
from ..options import CompareOptions, tolerance_dict
from ..sources import RunSource, dump_subfolder, folder_format, open_run
from ..sources.buffers import RunListing
from ..sources.folder import awaiting_log, list_entries
from ..sources.names import DIGEST_LOG, DUMP_PATTERN
from ..sources.schemas import BY_NAME, choose_schema
from ..stages.report import caller_notes, parts_report
from ..stages.verdict import build_report
from ..textkit.escape import display_path
from ..textkit.fmt import plural
from .poll import ManifestSide, RunPoller, dump_stat, file_stat
from .results import StepReport, WatchSummary

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..engine.cache import DigestCache
    from ..engine.pool import Runner, _OpenRunner
    from ..model.findings import Note
    from ..model.results import Report
    from ..schema import Schema
    from ..sources.buffers import BufferRef
    from .poll import FileStat

    Side = RunPoller | ManifestSide

#: A step whose files changed during this many reads is reported with those
#: buffers as errors.
MAX_READS = 3

#: While the loop runs, a garbage collection runs at most this often.
GC_EVERY_S = 60.0

DEFAULT_POLL = 0.2
DEFAULT_SETTLE = 2.0
DEFAULT_IDLE_TIMEOUT = 60.0
#: How long a run folder that is missing or holds no dump is waited for: jobs
#: may take minutes to start (importing torch, loading data, a queue).
DEFAULT_START_TIMEOUT = 600.0


class _Step:
    """A step on its way: waiting for a recorder's log lines (``log``, see
    ``Watch._log_pending``), read (``reading``), to read again (``again``),
    held (``held``, see the module's docstring), or ``final``, waiting to be
    reported in order."""

    __slots__ = ("changes", "complete_at", "held_at", "holding", "log_since", "logs", "n",
                 "not_before", "plan", "reads", "report", "state", "waiting")  # fmt: skip

    def __init__(self, n: int) -> None:
        self.n = n
        self.state = "reading"
        self.reads = 0
        self.changes = 0
        self.complete_at = 0.0
        self.not_before = 0.0
        self.plan: Plan | None = None
        self.report: Report | None = None
        self.holding: tuple[Side, ...] = ()
        #: Without a lag: the runs still writing that lack (or hold shorter) a
        #: buffer of it, and since when it waits for them (``Watch._wait``).
        self.waiting: tuple[RunPoller, ...] = ()
        self.held_at = 0.0
        #: Waiting for log lines: since when, and each run's log as it was then.
        self.log_since = 0.0
        self.logs: tuple[tuple[RunPoller, FileStat | None], ...] = ()


class Watch:
    """Compare two runs while they are written (``watch_runs`` is the function form).

    ``lag``: a step is complete once a run holds a step more than ``lag``
    later (default None: any later step, as 0, but a buffer that a run
    still writing lacks or holds shorter is an error, not a divergence;
    see the module's docstring).
    ``run()`` polls until the first divergent step (unless ``keep_going``),
    until both runs are idle for ``idle_timeout`` seconds, until trouble (a
    folder that vanishes or cannot be read, a folder that stays missing or
    empty for ``start_timeout`` seconds from the start), or until Ctrl-C, and
    returns the ``WatchSummary``.

    Callbacks: ``on_step(StepReport)`` for each step, in order, as soon as
    it is reported; ``on_problem(Problem)`` for problems that belong to no
    step (trouble, unusable names, a file that appeared in or changed after
    a step already compared); ``on_note(text)`` for notes (the schema chosen);
    ``on_status(text)``: a one-line state after each poll (for a progress line).
    """

    def __init__(
        self,
        run_a: str | os.PathLike[str],
        run_b: str | os.PathLike[str],
        options: CompareOptions | None = None,
        *,
        poll: float = DEFAULT_POLL,
        settle: float = DEFAULT_SETTLE,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        keep_going: bool = False,
        lag: int | None = None,
        cache: DigestCache | None = None,
        on_step: Callable[[StepReport], None] | None = None,
        on_problem: Callable[[Problem], None] | None = None,
        on_note: Callable[[Note], None] | None = None,
        on_status: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not poll > 0:
            raise ValueError(f"poll must be > 0 seconds, got {poll}")
        if not settle >= 0:
            raise ValueError(f"settle must be >= 0 seconds, got {settle}")
        if not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be > 0 seconds, got {idle_timeout}")
        if not start_timeout > 0:
            raise ValueError(f"start_timeout must be > 0 seconds, got {start_timeout}")
        if lag is not None and (isinstance(lag, bool) or not isinstance(lag, int) or lag < 0):
            raise ValueError(f"lag must be a whole number of steps >= 0, got {lag!r}")
        self.spec_a, self.spec_b = os.fspath(run_a), os.fspath(run_b)
        for spec in (self.spec_a, self.spec_b):
            _refuse_ranks(spec)
        self.opts = options or CompareOptions()
        self.poll, self.settle, self.idle_timeout = poll, settle, idle_timeout
        self.start_timeout = start_timeout
        self.keep_going = keep_going
        self.lag = lag
        self.cache = cache
        self.on_step, self.on_problem = on_step, on_problem
        self.on_note, self.on_status = on_note, on_status
        self.clock = clock
        self.jobs = self.opts.jobs or default_jobs()
        self._sched = Scheduler(self.opts, cache, use_mmap=False)
        self._queue: list[int] = []  # steps seen, not yet submitted (a heap)
        self._queued: set[int] = set()
        self._steps: dict[int, _Step] = {}  # submitted, not yet reported
        self._order: deque[int] = deque()  # submitted steps, in report order
        self._closing = False  # both runs idle: compare what is left, then end
        #: A run that stopped writing while the other went on (its label, it,
        #: the other run), and how the watch then ends: its steps up to its
        #: newest are compared, the other run's later steps are not (``_dropped``).
        self._ran_out: tuple[str, RunPoller, Side] | None = None
        self._end = "idle"
        self._dropped: list[int] = []
        self._stopped: str | None = None
        self._buffers: list[BufferResult] = []
        #: The step compared last and its buffers (the roles' ``@prev``).
        self._prev: tuple[int, tuple[BufferResult, ...]] | None = None
        self._errors: list[Problem] = []
        self._n_steps = 0
        self._first: tuple[int, float] | None = None
        #: The work of the steps read so far (every read), summed as compare sums it.
        self._work = Work()
        self._executor = "serial"
        self._runner: Runner | None = None
        self._runner_ctx: _OpenRunner | None = None
        self.a: Side
        self.b: Side
        #: The schema, chosen at the first step read (``_choose_schema``), and
        #: the buffers of each run folder by name, first seen (what it is chosen by).
        self._schema: Schema | None = None
        self._names: tuple[dict[str, BufferRef], dict[str, BufferRef]] = ({}, {})
        #: The notes said so far (the schema chosen, how the runs are read), once each.
        self._notes: dict[Note, None] = {}
        #: The notes of the steps' reports (headers that overrule the schema, ...).
        self._step_notes: dict[Note, None] = {}

    # --- running

    def run(self) -> WatchSummary:
        """Watch until the end (see the class); never raises for bad input or
        Ctrl-C: both end in the summary (``stopped``: ``error``, ``interrupted``)."""
        t0 = self.clock()
        stopped = "error"
        try:
            try:
                self.a = self._open_side(self.spec_a, t0)
                self.b = self._open_side(self.spec_b, t0)
                for side in (self.a, self.b):
                    if isinstance(side, ManifestSide):
                        self._note_all(side.src.notes)
                with gc_paused():  # see _loop
                    stopped = self._loop()
                if stopped == "idle":
                    self._recheck()
            finally:
                if self._runner_ctx is not None:
                    self._runner_ctx.__exit__(*sys.exc_info())
        except KeyboardInterrupt:
            stopped = "interrupted"
            self._sched.stop()
        elapsed = self.clock() - t0
        return self._summary(stopped, elapsed)

    def _open_runner(self) -> Runner:
        """The runner, opened with the first steps to read: in this thread
        while what they hold is small (``auto``), as compare chooses."""
        kind = resolve_executor_kind(self.opts.executor, self._sched.bytes_to_hash)
        self._executor = kind
        self._runner_ctx = open_runner(kind, self.jobs)
        self._runner = self._runner_ctx.__enter__()
        return self._runner

    def _open_side(self, spec: str, now: float) -> Side:
        """A file (a manifest, a checkpoint) or a checkpoint folder, read once;
        or a run folder to poll (which may not exist yet)."""
        if os.path.isfile(spec) or (os.path.isdir(spec) and folder_format(spec) != "folder"):
            src = open_run(spec)
            side = ManifestSide(src, now)
            if not src.listing.readable:
                side.trouble = src.listing.errors[0]
                side.problems = []
            return side
        return RunPoller(spec, self.settle, self.idle_timeout, now, self.lag or 0)

    @property
    def schema(self) -> Schema:
        """The schema the runs are read with (``_choose_schema``)."""
        return self._schema if self._schema is not None else self._choose_schema()

    def _choose_schema(self, step: tuple[RunSource, RunSource] | None = None) -> Schema:
        """The schema, chosen as ``compare`` chooses it for the whole runs
        (``sources.schemas.choose_schema``: the one given, else a manifest's,
        else by name for runs whose every buffer's file gives its dtype and
        none of whose names rl-state knows, else rl-state), from what the
        runs held so far: a manifest's or checkpoint's every buffer, and the
        buffers each run folder held at the steps read (``step``: the sources
        of the step about to be read). Chosen once, at the first step read;
        a schema by name then grows a group for each new first part of a
        name that a later step holds (in the order they appear, as
        ``compare`` orders them)."""
        new = False
        if step is not None:
            for names, src in zip(self._names, step, strict=True):
                for f in src.listing.buffers:
                    if f.name not in names:
                        names[f.name] = f
                        new = True
        chosen = self._schema
        if chosen is not None and not (new and chosen.name == BY_NAME):
            return chosen
        seen = []
        for side, names in zip((self.a, self.b), self._names, strict=True):
            if isinstance(side, ManifestSide):
                seen.append(side.src)
            else:
                listing = RunListing(side.root, tuple(names.values()), (), ())
                seen.append(RunSource(side.spec, listing))
        schema, said = choose_schema(seen, self.opts.schema)
        self._note_all(said)
        if step is None:
            return schema  # nothing read: for the summary of a watch that read no step
        if chosen is None or schema.name == BY_NAME:
            self._schema = chosen = schema
        return chosen

    def _note_all(self, notes: Iterable[Note]) -> None:
        for note in notes:
            if note not in self._notes:
                self._notes[note] = None
                self._note(note)

    def _note(self, note: Note) -> None:
        if self.on_note is not None:
            self.on_note(note)

    def _problem(self, problem: Problem) -> None:
        self._errors.append(problem)
        if self.on_problem is not None:
            self.on_problem(problem)

    def _loop(self) -> str:
        """Poll, submit, read, report, until the end. The cyclic garbage
        collector is paused (as ``compare`` pauses it: the bookkeeping makes
        no cycles, and the collector would walk it again and again); a
        collection runs now and then while nothing is pending."""
        clock, sched = self.clock, self._sched
        runner = self._runner
        next_poll = clock()
        next_collect = next_poll + GC_EVERY_S
        while True:
            now = clock()
            if now >= next_poll:
                next_poll = now + self.poll
                # Once both runs are idle, what they hold is what is compared.
                trouble = None if self._closing else self._poll(now)
                if trouble is not None:
                    return trouble
                self._advance(now)
                if self.on_status is not None:
                    self.on_status(self._status())
            if self._stopped is not None:
                return self._stopped
            if self._closing and not self._queue and not self._steps:
                if self._ran_out is not None:
                    self._problem(self._ran_out_problem())
                return self._end
            if sched.pending:
                if runner is None:
                    runner = self._open_runner()
                sched.drain(runner, timeout=max(0.005, next_poll - clock()))
                if self._stopped is not None:
                    return self._stopped
            else:
                if now >= next_collect:
                    gc.collect()
                    next_collect = clock() + GC_EVERY_S
                time.sleep(max(0.0, next_poll - clock()))

    def _poll(self, now: float) -> str | None:
        """Poll both runs; the reason to stop (``error``) on trouble."""
        for side in (self.a, self.b):
            side.poll(now)
            self._take_problems(side)
            if side.trouble is not None:
                self._problem(side.trouble)
                return "error"
            for step in side.new_steps:
                if step not in self._queued and step not in self._steps:
                    self._queued.add(step)
                    heapq.heappush(self._queue, step)
            side.new_steps.clear()
        empty = [
            (label, side)
            for label, side in (("A", self.a), ("B", self.b))
            if not side.had_dumps and (side.final or now - side.started >= self.start_timeout)
        ]
        if empty:
            for label, side in empty:
                self._problem(self._stayed_empty(label, side))
            return "error"
        if not self._closing:
            both_idle = self.a.idle(now) and self.b.idle(now)
            self._ran_out = self._run_that_stopped(now, both_idle)
            if both_idle or self._ran_out is not None:
                self._closing = True
                self._end = "idle" if both_idle else "error"
        return None

    def _run_that_stopped(self, now: float, both_idle: bool) -> tuple[str, RunPoller, Side] | None:
        """The run folder that stopped writing while the other run went on:
        idle for ``idle_timeout`` while the other holds a later step than its
        newest (and, while the other still writes, is past that step: holds
        one more than ``lag`` later). None if there is none."""
        for label, side, other in (("A", self.a, self.b), ("B", self.b, self.a)):
            if not isinstance(side, RunPoller) or side.newest is None or not side.idle(now):
                continue
            if other.newest is None or other.newest <= side.newest:
                continue
            if both_idle or other.passed(side.newest) is not None:
                return label, side, other
        return None

    def _ran_out_problem(self) -> Problem:
        """A run stopped writing while the other went on: an error naming the
        step it stopped after, never a divergence of the steps it did not write."""
        assert self._ran_out is not None
        label, side, other = self._ran_out
        other_label = "B" if label == "A" else "A"
        n = len(self._dropped)
        those = "that step was" if n == 1 else f"those {n:,} steps were"
        return Problem(
            side.spec,
            f"run {label} stopped writing after step {side.newest}: it wrote nothing for "
            f"{self.idle_timeout:g} s (--idle-timeout) while run {other_label} holds later "
            f"steps (up to step {other.newest}); {those} not compared, and a run that stopped "
            f"is not a divergence: see why run {label}'s job stopped (if it is only slow, "
            "watch again with a longer --idle-timeout)",
            kind="missing",
        )

    def _take_problems(self, side: Side) -> None:
        for problem in side.problems:
            self._problem(problem)
        side.problems.clear()

    def _stayed_empty(self, label: str, side: Side) -> Problem:
        wait = f"{self.start_timeout:g} s (--start-timeout)"
        if isinstance(side, ManifestSide):
            return Problem(
                side.spec,
                f"run {label} is a manifest that lists no dumps; nothing can be compared "
                "against it: hash the run folder that holds them with 'fastdiff hash RUN -o FILE'",
                kind="no_dumps",
            )
        if not side.exists:
            return Problem(
                side.spec,
                f"run {label} folder does not exist, and did not appear within {wait}; "
                "check the path",
                kind="missing",
            )
        sub = dump_subfolder(side.spec)
        hint = f"did you mean {sub}?" if sub else "is the job writing there?"
        return Problem(
            side.spec,
            f"run {label} stayed empty: no {DUMP_PATTERN} dump appeared within {wait}; " + hint,
            kind="no_dumps",
        )

    def _status(self) -> str:
        parts = []
        for label, side in (("A", self.a), ("B", self.b)):
            if isinstance(side, ManifestSide):
                parts.append(f"{label}: manifest")
            elif not side.exists:
                parts.append(f"{label}: waiting for the folder")
            elif side.newest is None:
                parts.append(f"{label}: no dumps yet")
            else:
                parts.append(f"{label}: step {side.newest}")
        if self._ran_out is not None:
            label, side = self._ran_out[:2]
            state = f"run {label} stopped after step {side.newest}, comparing the rest"
        else:
            state = "both idle, comparing the rest" if self._closing else "watching"
        return f"{state}; {', '.join(parts)}; {plural(self._n_steps, 'step')} compared"

    # --- deciding what to read

    def _ready(self, n: int, now: float) -> float | None:
        """When step ``n`` became complete in both runs (or, for a step one
        run lacks, when that run moved past it); None if it is not yet."""
        times = []
        for side in (self.a, self.b):
            t = side.complete_at(n, now) if side.has(n) else side.passed(n)
            if t is None:
                return None
            times.append(t)
        return max(times)

    def _advance(self, now: float) -> None:
        """Submit the steps now ready, in step order; read again, or settle,
        the steps waiting for it."""
        queue = self._queue
        last = None if self._ran_out is None else self._ran_out[1].newest
        ready: list[tuple[_Step, float]] = []
        while queue:
            n = queue[0]
            if last is not None and n > last:  # after the last step of a run that stopped
                heapq.heappop(queue)
                self._queued.discard(n)
                self._dropped.append(n)
                continue
            present = self.a.has(n) or self.b.has(n)
            t = self._ready(n, now) if present else now
            if t is None:
                if not self._closing:
                    break
                t = now
            heapq.heappop(queue)
            self._queued.discard(n)
            if not present:
                continue  # its files vanished from both runs
            step = self._steps[n] = _Step(n)
            self._order.append(n)
            ready.append((step, t))
        if ready:  # listed together: a recorder's digest log is read once for them
            steps = [step.n for step, _ in ready]
            by_a, by_b = self.a.sources(steps), self.b.sources(steps)
            for step, t in ready:
                self._submit(step, t, (by_a[step.n], by_b[step.n]))
        for step in [s for s in self._steps.values() if s.state in ("again", "held", "log")]:
            if step.state == "log":
                if (
                    self._closing
                    or any(
                        side.idle(now) or file_stat(side.root_path(DIGEST_LOG)) != seen
                        for side, seen in step.logs
                    )
                    or now - step.log_since >= self.idle_timeout
                ):
                    self._submit(step, step.complete_at)
                continue
            if step.state == "held":
                self._check_held(step, now)
            if step.state != "again":
                continue
            t = self._ready(step.n, now)
            if self._closing:
                self._submit(step, now if t is None else t)
            elif t is not None and now >= step.not_before:
                self._submit(step, max(t, step.not_before))
        lows = [queue[0]] if queue else []
        if self._order:
            lows.append(self._order[0])
        if lows:
            self.a.forget_before(min(lows))
            self.b.forget_before(min(lows))
        self._emit()

    def _submit(
        self,
        step: _Step,
        complete_at: float,
        sources: tuple[RunSource, RunSource] | None = None,
    ) -> None:
        """Read step ``step`` (``sources``: its sources, listed just now; else
        listed here), unless it waits for a recorder's log lines."""
        n = step.n
        src_a, src_b = sources if sources is not None else (self.a.source(n), self.b.source(n))
        step.complete_at = complete_at
        if self._log_pending(step, (src_a, src_b)):
            return
        step.reads += 1
        step.state = "reading"
        step.report = None
        step.holding, step.waiting = (), ()
        self._note_all((*src_a.notes, *src_b.notes))
        schema = self._choose_schema((src_a, src_b))
        step.plan = Plan(src_a, src_b, schema, self._on_report, n)
        self._sched.submit(step.plan)

    def _log_pending(self, step: _Step, sources: tuple[RunSource, RunSource]) -> bool:
        """A recorder writes a dump's line in the run's digest log shortly
        after the dump (in batches, at a later dump or at close), and only
        that line says the type of an ``.npy`` of raw bytes (bfloat16, an
        8-bit float): while a run still writes, a step holding such a dump
        that the log does not describe yet waits for the line (listed again
        whenever the log changes), for ``idle_timeout`` seconds at most; then,
        or once the run is idle, it is read as it is, as ``compare`` would
        read it. True if the step waits."""
        now = self.clock()
        if self._closing or (step.state == "log" and now - step.log_since >= self.idle_timeout):
            return False
        logs = tuple(
            (side, file_stat(side.root_path(DIGEST_LOG)))
            for side, src in zip((self.a, self.b), sources, strict=True)
            if isinstance(side, RunPoller) and not side.idle(now) and awaiting_log(src)
        )
        if not logs:
            return False
        if step.state != "log":
            step.state, step.log_since = "log", now
        step.logs = logs
        return True

    # --- a step's report

    def _on_report(self, plan: Plan, report: Report) -> None:
        """The scheduler read a step: check it, then hold, read again, or report it."""
        step = self._steps.get(plan.tag)  # type: ignore[arg-type]
        if step is None or step.plan is not plan or self._stopped is not None:
            return
        self._count_work(report)
        n = step.n
        changed = self._changed(plan, report)
        if changed:
            step.changes += 1
            if step.changes < MAX_READS:
                step.state = "again"
                step.not_before = self.clock() + self.settle
                self.a.watch_again(n)
                self.b.watch_again(n)
                return
            report = self._kept_changing(n, report, changed)
        if not self._closing:
            holding = self._holding(n, report)
            if holding:
                step.state, step.report, step.holding = "held", report, holding
                return
            if self._wait(step, report):
                return
        else:
            report = self._incomplete_at_end(n, report)
        step.state, step.report = "final", report
        self._emit()

    def _changed(self, plan: Plan, report: Report) -> set[str]:
        """The files of a step read that are not what was listed any more
        (paths), or that changed while read; and a buffer found in one run
        only whose file the other run now has."""
        n: int = plan.tag  # type: ignore[assignment]
        grown = {*self.a.grew(n), *self.b.grew(n)}
        if grown:
            return grown  # files of the step appeared since it was listed
        if all(b.status == "equal" for b in report.buffers) and not report.errors:
            return set()  # all equal, every file checked after it was read
        changed: set[str] = set()
        for side, src in ((self.a, plan.src_a), (self.b, plan.src_b)):
            if side.final:
                continue
            for f in src.listing.files:
                if f.has_data and file_stat(f.path) != dump_stat(f):
                    changed.add(f.path)
        for e in report.errors:
            if e.kind == "changed":
                changed.add(e.path)
        for b in report.buffers:
            if (
                b.status == "only_in_a"
                and b.path_a is not None
                and self.b.counterpart_exists(b.step, b.name, b.path_a)
            ):
                changed.add(b.path_a)
            elif (
                b.status == "only_in_b"
                and b.path_b is not None
                and self.a.counterpart_exists(b.step, b.name, b.path_b)
            ):
                changed.add(b.path_b)
        return changed

    def _holding(self, n: int, report: Report) -> tuple[Side, ...]:
        """The runs whose newest step ``n`` is, lacking a buffer of it or
        holding a short or malformed file: its result waits for them."""
        holding = []
        for side, absent, mine in ((self.a, "only_in_b", 0), (self.b, "only_in_a", 1)):
            if side.final or not side.provisional(n):
                continue
            for b in report.buffers:
                if b.status == absent or b.status == "malformed":
                    holding.append(side)
                    break
                if b.status == "length_mismatch":
                    sizes = (b.n_elements_a or 0, b.n_elements_b or 0)
                    if sizes[mine] < sizes[1 - mine]:
                        holding.append(side)
                        break
        return tuple(holding)

    def _check_held(self, step: _Step, now: float) -> None:
        assert step.plan is not None and step.report is not None
        if self._changed(step.plan, step.report):
            step.state, step.not_before = "again", now  # it was still being written
            return
        if self._closing:
            step.state, step.report = "final", self._incomplete_at_end(step.n, step.report)
            step.complete_at = max(step.complete_at, now)
            return
        if step.waiting:
            wrote = [side for side in step.waiting if side.last_activity > step.held_at]
            if wrote:  # it writes on, and not this buffer: it may come later still
                step.state = "final"
                step.report = self._still_writing(step.n, step.report, wrote)
            elif all(side.idle(now) for side in step.waiting):
                step.state = "final"  # it stopped writing: what it lacks, it lacks
            if step.state == "final":
                step.complete_at = max(step.complete_at, now)
            return
        if all(not side.provisional(step.n) for side in step.holding):
            # The run moved on: what it lacks, it lacks (with a lag given; else see _wait).
            passed = [t for side in step.holding if (t := side.passed(step.n)) is not None]
            step.complete_at = max([step.complete_at, *passed])
            step.holding = ()
            if not self._wait(step, step.report):
                step.state = "final"

    def _rebuilt(
        self, report: Report, buffers: list[BufferResult], errors: list[Problem]
    ) -> Report:
        return build_report(
            report.run_a, report.run_b, self.schema, buffers, report.skipped, errors,
            report.tolerance, report.work, caller_notes(report),
        )  # fmt: skip

    def _kept_changing(self, n: int, report: Report, changed: set[str]) -> Report:
        message = (
            f"kept changing while fastdiff read it (it changed during each of {MAX_READS} reads "
            f"of step {n}); is a job still writing it?"
        )
        buffers = []
        for b in report.buffers:
            if b.path_a in changed or b.path_b in changed:
                b = BufferResult(
                    b.step, b.name, b.group, b.dtype, "error", b.n_elements_a, b.n_elements_b,
                    b.path_a, b.path_b, message,
                )  # fmt: skip
            buffers.append(b)
        errors = [e for e in report.errors if not (e.kind == "changed" and e.path in changed)]
        errors += [Problem(path, message, kind="changed") for path in sorted(changed)]
        # (A file that appeared during the last read is among them: it was not compared.)
        return self._rebuilt(report, buffers, errors)

    def _lacking(self, report: Report) -> list[tuple[int, int, str]]:
        """The buffers of a step that a run lacks, or holds shorter than the
        other run (a length, or a malformed size): (index in ``report.buffers``,
        the run that lacks it: 0 A, 1 B, what it holds)."""
        out = []
        for i, b in enumerate(report.buffers):
            if b.status == "only_in_a":
                out.append((i, 1, "does not hold it"))
            elif b.status == "only_in_b":
                out.append((i, 0, "does not hold it"))
            elif b.status == "length_mismatch" or b.diverges:
                if b.status == "length_mismatch":
                    sizes, unit = (b.n_elements_a or 0, b.n_elements_b or 0), "elements"
                else:  # malformed, of another size than the other run's file
                    sizes, unit = (b.size_a or 0, b.size_b or 0), "bytes"
                if sizes[0] != sizes[1]:
                    short = 0 if sizes[0] < sizes[1] else 1
                    what = (
                        f"holds it shorter ({sizes[short]:,} {unit} against {sizes[1 - short]:,})"
                    )
                    out.append((i, short, what))
        return out

    def _wait(self, step: _Step, report: Report) -> bool:
        """Without a lag given, a buffer that a run still writing lacks (or
        holds shorter) may yet be written: the step waits (held) until that
        run writes it (the step is read again), writes something else (an
        error naming --lag: ``_still_writing``), or stops writing (then what
        it lacks, it lacks). With a lag given, the caller has said how far the
        writer runs ahead: no wait. True if the step waits."""
        if self.lag is not None:
            return False
        now = self.clock()
        sides = (self.a, self.b)
        waiting = {
            sides[k]
            for _, k, _ in self._lacking(report)
            if isinstance(sides[k], RunPoller) and not sides[k].idle(now)
        }
        if not waiting:
            return False
        step.state, step.report = "held", report
        step.waiting = tuple(side for side in sides if side in waiting)  # type: ignore[misc]
        step.held_at = now
        return True

    def _still_writing(self, n: int, report: Report, writing: list[RunPoller]) -> Report:
        """The buffers of step ``n`` that the runs in ``writing`` lack (or hold
        shorter), while those runs write other files: errors naming --lag,
        never a divergence."""
        labels, sides = ("A", "B"), (self.a, self.b)
        buffers, errors = list(report.buffers), list(report.errors)
        for i, k, what in self._lacking(report):
            side = sides[k]
            if side not in writing:
                continue
            b = buffers[i]
            mine, other = labels[k], labels[1 - k]
            at = f" (it is at step {side.newest})" if isinstance(side, RunPoller) else ""
            message = (
                f"run {other} holds buffer {b.name} of step {n}, run {mine} {what} and is "
                f"still writing{at}, so it may yet write it: not called a divergence. If "
                f"its writer finishes a step's files after beginning the next (asynchronous "
                "or per-rank checkpointing), give --lag 1 (or how many steps it runs ahead); "
                "if it finishes each step first, --lag 0 makes this a divergence"
            )
            path = b.path_b if k and b.path_b else b.path_a or b.path_b or self.spec_a
            buffers[i] = BufferResult(
                b.step, b.name, b.group, b.dtype, "error", b.n_elements_a, b.n_elements_b,
                b.path_a, b.path_b, message,
            )  # fmt: skip
            errors.append(Problem(path, message, kind="changed"))
        return self._rebuilt(report, buffers, errors)

    def _incomplete_at_end(self, n: int, report: Report) -> Report:
        """Both runs are idle: a file of the last step a run wrote that is
        shorter than its partner is an error, not a length mismatch."""
        labels = ((self.a, "A", "B", 0), (self.b, "B", "A", 1))
        buffers, errors = [], list(report.errors)
        touched = False
        for b in report.buffers:
            if b.status == "length_mismatch":
                sizes = (b.n_elements_a or 0, b.n_elements_b or 0)
                for side, mine, other, i in labels:
                    if side.final or not side.provisional(n) or sizes[i] >= sizes[1 - i]:
                        continue
                    message = (
                        f"step {n} of run {mine} may be incomplete: the run stopped writing "
                        f"while this file was shorter than run {other}'s ({sizes[i]} elements "
                        f"against {sizes[1 - i]}); compare again if run {mine} resumes"
                    )
                    path = b.path_a if i == 0 else b.path_b
                    b = BufferResult(
                        b.step, b.name, b.group, b.dtype, "error", b.n_elements_a,
                        b.n_elements_b, b.path_a, b.path_b, message,
                    )  # fmt: skip
                    errors.append(Problem(path or self.spec_a, message, kind="error"))
                    touched = True
                    break
            buffers.append(b)
        return self._rebuilt(report, buffers, errors) if touched else report

    def _count_work(self, report: Report) -> None:
        self._work = total_work((self._work, report.work))

    # --- reporting, in order

    def _emit(self) -> None:
        order, steps = self._order, self._steps
        while order and self._stopped is None:
            step = steps[order[0]]
            if step.state != "final":
                return
            order.popleft()
            del steps[step.n]
            plan, report = step.plan, step.report
            assert plan is not None and report is not None
            # What was compared, to check at the end (not a file that kept changing).
            unread = {e.path for e in report.errors if e.kind == "changed"}
            for side, src in ((self.a, plan.src_a), (self.b, plan.src_b)):
                read = (f for f in src.listing.files if f.has_data and f.path not in unread)
                side.release(step.n, tuple(read))
            latency = max(0.0, self.clock() - step.complete_at)
            divergent = any(b.diverges for b in report.buffers)
            trouble = bool(report.errors) or any(b.status in TROUBLE for b in report.buffers)
            status = "diverged" if divergent else "error" if trouble else "equal"
            groups = report.steps[0].diverged_groups if report.steps else ()
            buffers = report.buffers
            if divergent and self.schema.has_inputs:
                buffers = self._with_roles(step.n, buffers)
            self._prev = (step.n, buffers)
            record = StepReport(step.n, status, groups, buffers, report.errors, latency, step.reads)
            self._buffers += buffers
            self._errors += report.errors
            self._step_notes.update(dict.fromkeys(caller_notes(report)))
            self._n_steps += 1
            if self.on_step is not None:
                self.on_step(record)
            if divergent and self._first is None:
                self._first = (step.n, latency)
                if not self.keep_going:
                    self._stop("diverged")

    def _with_roles(self, n: int, buffers: tuple[BufferResult, ...]) -> tuple[BufferResult, ...]:
        """A step's buffers with their roles read against the step compared
        before it (its plan held this step alone: ``@prev`` needs the one
        before, the latest earlier step held, as compare reads it)."""
        from ..stages.roles import assign_roles

        before: tuple[BufferResult, ...] = ()
        steps = [n]
        if self._prev is not None:
            steps = [self._prev[0], n]
            before = self._prev[1]
        out, _ = assign_roles((*before, *buffers), steps, self.schema)
        return out[len(before) :]

    def _recheck(self) -> None:
        """Before an idle end (exit 0 if all was equal), never a verdict on
        files that are not what was read: a file that changed after its step
        was compared, or appeared in a compared step, is an error (compare
        again); so is a step that appeared while watch was ending (the run
        resumed). (Not at a divergence: that verdict stands, and on a
        network file system stat'ing every file compared would delay it.)"""
        now = self.clock()
        for label, side in (("A", self.a), ("B", self.b)):
            side.rescan(now)
            self._take_problems(side)
            if side.trouble is not None:
                if side.trouble.kind != "missing":  # a run deleted after it was compared
                    self._problem(side.trouble)
                continue
            for problem in side.changed_since_read():
                self._problem(problem)
            if side.new_steps:
                steps = sorted(side.new_steps)
                self._problem(
                    Problem(
                        side.spec,
                        f"run {label} wrote {plural(len(steps), 'new step')} (from step "
                        f"{steps[0]}) as watch ended, after {self.idle_timeout:g} s idle: not "
                        "compared; watch again with a longer --idle-timeout, or compare the "
                        "runs once they are written",
                        kind="changed",
                    )
                )
            side.new_steps.clear()

    def _stop(self, reason: str) -> None:
        self._stopped = reason
        self._sched.stop()

    # --- the end

    def _skipped(self) -> list[Skipped]:
        """What compare would list as skipped: the entries that are not dumps."""
        out: list[Skipped] = []
        for side in (getattr(self, "a", None), getattr(self, "b", None)):
            if isinstance(side, ManifestSide):
                out += side.src.listing.skipped
            elif isinstance(side, RunPoller) and side.exists and side.trouble is None:
                out += list_entries(side.root, sorted(side.others)).skipped
        return out

    def _summary(self, stopped: str, elapsed: float) -> WatchSummary:
        work = total_work((self._work,), self._executor, self.jobs, elapsed)
        schema = self._schema
        if schema is None:  # no step read: chosen from what the runs are (a manifest's)
            from ..presets import RL_STATE

            schema = self._choose_schema() if hasattr(self, "b") else RL_STATE
        report = parts_report(
            self.spec_a, self.spec_b, schema, self._buffers, self._skipped(), self._errors,
            tolerance_dict(self.opts.tolerance), work, self._notes, self._step_notes,
        )  # fmt: skip
        latency = None if self._first is None else self._first[1]
        return WatchSummary(report, self._n_steps, stopped, latency, self.idle_timeout)  # type: ignore[arg-type]


def _refuse_ranks(spec: str) -> None:
    """ValueError for a run of several ranks (``sources.ranks``): a watch
    compares the steps of one rank as they come."""
    from ..sources.ranks import rank_folders, split_ranks

    shown = display_path(spec)
    if os.path.isfile(spec):
        if split_ranks(open_run(spec)) is not None:
            raise ValueError(
                f"{shown} is the manifest of a run of several ranks; watch compares runs of "
                "one rank: compare it with 'fastdiff compare' instead"
            )
        return
    ranks = rank_folders(spec) if os.path.isdir(spec) else []
    if ranks:
        listed = ", ".join(ranks[:3]) + (", ..." if len(ranks) > 3 else "")
        raise ValueError(
            f"{shown} holds the dumps of several ranks ({listed}); watch compares runs of one "
            f"rank: watch each rank's folders ({shown}/{ranks[0]} against the other run's), or "
            "compare the whole runs once they are written"
        )


def watch_runs(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    options: CompareOptions | None = None,
    **settings: object,
) -> WatchSummary:
    """Compare two runs while they are written; see ``Watch`` for ``settings``
    (``poll``, ``settle``, ``idle_timeout``, ``start_timeout``, ``keep_going``, ``lag``, ``cache``,
    the callbacks)."""
    return Watch(run_a, run_b, options, **settings).run()  # type: ignore[arg-type]
