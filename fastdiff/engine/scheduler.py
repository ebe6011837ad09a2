"""The scheduler: drives the stages over run pairs, and takes more while it runs.

A ``Plan`` is a run pair to compare, or a part of one (one step of two runs
still being written): two ``RunSource``s and the schema to read them with.
``Scheduler.submit`` takes a plan at any time, before ``drain`` or while it
runs (from a callback). For each plan, pair (stage 2) and size (stage 3)
decide what they can at once; every file that still needs a digest is
hashed once (stage 4) per chunk size its pairs need (a manifest's, else the
options'), however many pending plans it belongs to, unless a manifest or
the digest cache already knows it; a plan whose files are all hashed is
decided by digest (``stages.digest.decide``), and only its differing chunks
are scanned (stage 5); a plan whose scans are done gets its report (stage 6,
``stages.report.plan_report``), with the ``Work`` it took, and its
``on_done(plan, report)`` is called.

``drain(runner)`` runs tasks until every plan submitted is reported (or a
timeout passes); ``stop()`` ends early: nothing more is started or reported.
Callbacks are called from ``drain`` only, never from ``submit``, one at a
time, in the order the plans complete. A digest is kept only while a
pending plan needs it, and keyed by the very ``BufferRef`` a listing holds
(or the buffer whose bytes it shares: its ``span``):
a plan submitted again, from sources listed afresh (``Plan.reopened``),
reads its files again.

The scheduler only schedules: which run pairs to compare, with which
schema, and how the ranks of runs of several combine is the compare use
case's (``fastdiff.compare.compare_pairs``: a compare, a sweep, reports in
input order); ``watch`` submits one plan per step; ``hashrun.write_manifest``
asks for digests alone (``Scheduler.request_digests``).

Work goes through any ``concurrent.futures.Executor`` (only ``submit`` is
called on it) or in this thread; hashing is submitted run by run, so the
first pairs finish first.
"""

from __future__ import annotations

import time

from ..model.results import BufferResult, Problem, Report, Work
from ..options import CompareOptions, tolerance_dict
from ..sources import reopen
from ..stages.digest import decide, pair_sizes
from ..stages.hash import hash_batch
from ..stages.prepare import prepare
from ..stages.report import plan_report
from .pool import batches, default_jobs, open_runner, resolve_executor_kind

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from concurrent.futures import Executor

    from ..model.findings import Note
    from ..schema import Schema
    from ..sources import RunSource
    from ..sources.buffers import BufferDigest, BufferRef
    from ..stages.pair import Pair
    from ..stages.scan import ScanJob, ScanOutcome
    from .cache import DigestCache
    from .pool import Finished, Runner
    from .progress import Progress

    #: A digest is of a file (as listed) at a chunk size.
    _Key = tuple[BufferRef, int]
    OnDone = Callable[["Plan", Report], None]
    OnDigests = Callable[[list[BufferDigest | Problem]], None]

# --- plans -----------------------------------------------------------------------


class Plan:
    """A run pair (or a part of one, e.g. one step of two live runs) to compare.

    ``schema`` reads both sides; ``on_done(plan, report)`` is called once the
    plan's report is ready; ``tag`` is the caller's (the scheduler never
    reads it); ``errors`` are problems known before comparing (besides the
    sources' listing errors, which every report includes); with ``paired``
    False nothing is paired (a side whose buffers are unknown: an empty run).
    An immutable value: the same plan may be submitted again.
    """

    __slots__ = ("errors", "notes", "on_done", "paired", "rank", "schema", "src_a", "src_b", "tag")

    src_a: RunSource
    src_b: RunSource
    schema: Schema
    on_done: OnDone | None
    tag: object
    errors: tuple[Problem, ...]
    paired: bool
    notes: tuple[Note, ...]
    rank: int | None

    def __init__(
        self,
        src_a: RunSource,
        src_b: RunSource,
        schema: Schema,
        on_done: OnDone | None = None,
        tag: object = None,
        errors: Iterable[Problem] = (),
        paired: bool = True,
        notes: Iterable[Note] = (),
        rank: int | None = None,
    ) -> None:
        self.src_a = src_a
        self.src_b = src_b
        self.schema = schema
        self.on_done = on_done
        self.tag = tag
        self.errors = tuple(errors)
        self.paired = paired
        #: Remarks on how the runs are read (the schema chosen): into the report.
        self.notes = tuple(notes)
        #: The rank both sources are of (runs of several ranks): on every result.
        self.rank = rank

    def __repr__(self) -> str:
        return f"Plan({self.src_a.spec!r}, {self.src_b.spec!r}, tag={self.tag!r})"

    def reopened(self) -> Plan:
        """The same plan over its runs listed afresh (same step filters): to
        compare again files that changed while they were read."""
        return Plan(
            reopen(self.src_a), reopen(self.src_b), self.schema, self.on_done, self.tag,
            self.errors, self.paired, self.notes, self.rank,
        )  # fmt: skip


class _Need:
    """Something waiting for digests: a plan on its way, or a digest request."""

    __slots__ = ("found", "waiting")

    def __init__(self) -> None:
        #: The digests (or the problems hashing met) it has, by file and chunk size.
        self.found: dict[_Key, BufferDigest | Problem] = {}
        #: How many keys it still waits for.
        self.waiting = 0


class _Job(_Need):
    """A submitted plan on its way through the stages."""

    __slots__ = (
        "bytes_hashed", "bytes_scanned", "bytes_verified", "cs_a", "cs_b", "engines", "errors",
        "files_hashed", "files_verified", "notes", "pairs_scanned", "plan", "results",
        "scans_left", "to_hash",
    )  # fmt: skip

    def __init__(self, plan: Plan, opts: CompareOptions) -> None:
        super().__init__()
        self.plan = plan
        src_a, src_b = plan.src_a, plan.src_b
        ready = prepare(src_a, src_b, plan.schema, opts, plan.paired, plan.rank)
        self.cs_a, self.cs_b = ready.cs_a, ready.cs_b
        self.errors: list[Problem] = [*src_a.listing.errors, *src_b.listing.errors, *plan.errors]
        self.results: list[BufferResult] = ready.decided
        self.errors += ready.problems
        self.to_hash: list[Pair] = ready.to_hash
        self.notes = ready.notes
        self.scans_left = 0
        self.files_hashed = self.bytes_hashed = 0
        self.files_verified = self.bytes_verified = 0
        self.pairs_scanned = self.bytes_scanned = 0
        self.engines: set[str] = set()


class _Digests(_Need):
    """A request for the digests of some files (``Scheduler.request_digests``)."""

    __slots__ = ("chunk_size", "files", "on_done")

    def __init__(self, files: list[BufferRef], chunk_size: int, on_done: OnDigests) -> None:
        super().__init__()
        self.files = files
        self.chunk_size = chunk_size
        self.on_done = on_done


def _size(f: BufferRef) -> int:
    return f.size


def _scan_bytes(job: ScanJob) -> int:
    return job.n_bytes


# --- the scheduler -----------------------------------------------------------------


class Scheduler:
    """Feeds hash and scan tasks to a runner and reports plans as they complete.

    ``options``: chunk size, tolerance, engine, executor and jobs; ``cache``:
    a DigestCache to look digests up in and store them to; ``progress``: a
    status line to keep up to date; ``use_mmap=False``: files are read,
    never memory-mapped (runs still being written, which a writer may
    truncate: see ``sources.reader``). Use: ``submit`` plans, then ``run()``
    (picks the executor, drains to the end), or ``drain(runner)`` with a
    runner of your own (``pool.open_runner``), as often as you like, always
    the same runner.
    """

    def __init__(
        self,
        options: CompareOptions | None = None,
        cache: DigestCache | None = None,
        progress: Progress | None = None,
        use_mmap: bool = True,
    ) -> None:
        self.opts = options or CompareOptions()
        self.use_mmap = use_mmap
        self.jobs = self.opts.jobs or default_jobs()
        self.cache = cache
        self.progress = progress
        #: Keys being looked up or hashed, and who waits for each.
        self._waiters: dict[_Key, list[_Need]] = {}
        #: Keys new since the last cache lookup, and keys to hash: with the
        #: plan that first asked and the run's spec, to batch them by.
        self._unlooked: list[tuple[_Key, tuple[_Need, str]]] = []
        self._to_hash: list[tuple[_Key, tuple[_Need, str]]] = []
        #: Tasks not handed to the runner yet: scans go first (each finishes a
        #: plan), then hashing, in the order it was asked for.
        self._scans: list[tuple[object, Callable[..., object], tuple[object, ...]]] = []
        self._hashes: list[tuple[object, Callable[..., object], tuple[object, ...]]] = []
        self._hashes_head = 0
        #: Needs whose digests are all in (to decide), and those done (to report).
        self._ready: list[_Need] = []
        self._done: list[_Need] = []
        self._open = 0  # submitted, not yet reported
        self._open_plans = 0
        self._runner: Runner | None = None
        self._stopped = False
        self._progress_on = False
        self._t0 = time.perf_counter()

    # --- what callers see

    @property
    def pending(self) -> int:
        """Plans (and digest requests) submitted and not reported yet."""
        return self._open

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def bytes_to_hash(self) -> int:
        """Bytes that the plans submitted so far still need hashed (after the
        cache): what ``run`` picks the executor by."""
        self._lookup()
        return sum(key[0].size for key, _ in self._to_hash)

    def submit(self, plan: Plan) -> None:
        """Take a plan: pair and size decide at once; its hashing starts now
        when ``drain`` runs, else at the next ``drain``."""
        if self._stopped:
            raise RuntimeError("this scheduler was stopped; make a new one")
        job = _Job(plan, self.opts)
        spec_a, spec_b, cs_a, cs_b = plan.src_a.spec, plan.src_b.spec, job.cs_a, job.cs_b
        need, found = self._need, job.found
        for p in job.to_hash:
            fa, fb = p.a, p.b
            assert fa is not None and fb is not None
            at_a, at_b = pair_sizes(p, cs_a, cs_b)
            # A digest known in advance (a manifest's) is taken as it is.
            d = fa.digest
            if d is None or (fa.has_data and d.chunk_size != at_a):
                need(job, fa, spec_a, at_a)
            else:
                found[(fa.span or fa, at_a)] = d  # type: ignore[index]
            d = fb.digest
            if d is None or (fb.has_data and d.chunk_size != at_b):
                need(job, fb, spec_b, at_b)
            else:
                found[(fb.span or fb, at_b)] = d  # type: ignore[index]
        self._opened(job)
        self._open_plans += 1
        if self._progress_on:
            assert self.progress is not None
            self.progress.total_pairs += 1

    def request_digests(
        self, files: Iterable[BufferRef], chunk_size: int, on_done: OnDigests
    ) -> None:
        """Hash ``files`` at ``chunk_size`` (the cache first), and call
        ``on_done`` with a digest or a Problem for each, in their order."""
        if self._stopped:
            raise RuntimeError("this scheduler was stopped; make a new one")
        request = _Digests(list(files), chunk_size, on_done)
        for f in request.files:
            d = f.digest
            if d is not None and d.chunk_size == chunk_size:
                request.found[(f.span or f, chunk_size)] = d  # known in advance (a digest log)
            elif not f.has_data:
                request.found[(f.span or f, chunk_size)] = Problem(
                    f.path,
                    f"recorded as digests only at chunk size {d.chunk_size if d else '?'}: "
                    "nothing to hash at another (give that --chunk-size)",
                    kind="mismatch",
                )
            else:
                self._need(request, f, "", chunk_size)
        self._opened(request)

    def run(self, executor: Executor | None = None) -> bool:
        """Drain to the end on an executor of the options' kind (``auto``:
        serial for small totals), or on ``executor`` (the caller owns it)."""
        if executor is not None:
            kind = "external"
        else:
            kind = resolve_executor_kind(self.opts.executor, self.bytes_to_hash)
        try:
            with open_runner(kind, self.jobs, executor) as runner:
                return self.drain(runner)
        finally:
            self._runner = None  # closed: a later run opens another

    def drain(self, runner: Runner, timeout: float | None = None) -> bool:
        """Run tasks until every plan submitted (before or meanwhile) is
        reported, ``stop`` is called, or ``timeout`` seconds pass. True when
        nothing is left pending. Callbacks are called from here only."""
        if self._stopped:
            return False
        if self._runner is None:
            self._runner = runner
        elif runner is not self._runner:
            raise ValueError("drain with the runner of the earlier drains")
        if self.progress is not None and not self._progress_on:
            self._lookup()
            self.progress.start(
                len(self._to_hash), sum(k[0].size for k, _ in self._to_hash), self._open_plans
            )
            self._progress_on = True
        deadline = None if timeout is None else time.monotonic() + timeout
        self._flush()
        pump = self._pump
        while not self._stopped:
            if self._ready:
                ready, self._ready = self._ready, []
                for need in ready:
                    if isinstance(need, _Job):
                        self._decide(need)
                    else:
                        self._done.append(need)
                continue
            if self._done:
                done, self._done = self._done, []
                for k in range(len(done)):
                    if self._stopped:  # by a callback: the rest stay unreported
                        self._done = done[k:] + self._done
                        break
                    self._report(done[k])
                continue
            pump(runner)
            wait = None
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    break
            got = runner.next(wait)
            if got is None:
                if not runner.busy and self._open:
                    raise RuntimeError(f"scheduler idle with {self._open} plans pending")
                break
            self._finished(got)
        return self._open == 0 and not self._stopped

    def stop(self) -> None:
        """Stop early (e.g. from a callback, at the first divergent step):
        nothing more is started or reported; ``drain`` returns once the task
        at hand is handled. Final: a stopped scheduler takes no more plans."""
        self._stopped = True
        if self._runner is not None:
            self._runner.cancel()
        self._waiters.clear()
        self._unlooked, self._to_hash, self._ready = [], [], []
        self._scans, self._hashes, self._hashes_head = [], [], 0

    # --- digests

    def _need(self, need: _Need, f: BufferRef, spec: str, cs: int) -> None:
        """``need`` waits for the digest of ``f`` (of run ``spec``) at ``cs``
        (that of the buffer it shares its bytes with, if any)."""
        key = (f.span or f, cs)
        waiters = self._waiters.get(key)
        if waiters is None:
            self._waiters[key] = [need]
            self._unlooked.append((key, (need, spec)))
        elif waiters[-1] is need:
            return  # the same file twice in one plan (a run compared with itself)
        else:
            waiters.append(need)
        need.waiting += 1

    def _opened(self, need: _Need) -> None:
        self._open += 1
        if need.waiting == 0:
            self._ready.append(need)
        if self._runner is not None:
            self._flush()

    def _deliver(self, key: _Key, item: BufferDigest | Problem) -> None:
        for need in self._waiters.pop(key, ()):
            need.found[key] = item
            need.waiting -= 1
            if need.waiting == 0:
                self._ready.append(need)

    def _lookup(self) -> None:
        """Look the keys new since the last lookup up in the cache; the rest
        are to hash."""
        new, self._unlooked = self._unlooked, []
        if not new:
            return
        if self.cache is not None:
            by_cs: dict[int, list[BufferRef]] = {}
            for (f, cs), _ in new:
                by_cs.setdefault(cs, []).append(f)
            hits: dict[tuple[BufferRef, int], BufferDigest] = {}
            owners = None
            for cs, files in by_cs.items():
                for f, d in self.cache.get_many(files, cs).items():
                    hits[(f, cs)] = d
                for f in self.cache.last_verified:  # re-hashed to verify the cache: counted
                    if owners is None:
                        owners = dict(new)
                    need = owners[(f, cs)][0]
                    if isinstance(need, _Job):
                        need.files_verified += 1
                        need.bytes_verified += f.size
            if hits:
                rest = []
                for key, group in new:
                    d = hits.get(key)
                    if d is None:
                        rest.append((key, group))
                    else:
                        self._deliver(key, d)
                new = rest
        if self._progress_on and new:
            assert self.progress is not None
            self.progress.total_files += len(new)
            self.progress.total_bytes += sum(k[0].size for k, _ in new)
        self._to_hash += new

    def _flush(self) -> None:
        """Queue the keys to hash as tasks: batched plan by plan and run by
        run, in the order they were submitted, so the first plans finish first."""
        self._lookup()
        todo, self._to_hash = self._to_hash, []
        if not todo:
            return
        by_run: dict[tuple[_Need, str, int], list[BufferRef]] = {}
        for (f, cs), (need, spec) in todo:
            by_run.setdefault((need, spec, cs), []).append(f)
            if isinstance(need, _Job):  # the plan that first asked is the one that hashed it
                need.files_hashed += 1
                need.bytes_hashed += f.size
        queue = self._hashes.append
        reads = () if self.use_mmap else (False,)  # hash_batch's use_mmap
        for (_, _, cs), files in by_run.items():
            for group in batches(files, _size, self.jobs):
                queue((("hash", group, cs), hash_batch, (group, cs, *reads)))

    def _pump(self, runner: Runner) -> None:
        """Hand queued tasks to the runner, up to its capacity: scans first."""
        room = runner.capacity
        if room is not None:
            room -= runner.in_flight
        scans, hashes = self._scans, self._hashes
        while (room is None or room > 0) and (scans or self._hashes_head < len(hashes)):
            if scans:
                tag, fn, args = scans.pop(0)
            else:
                task = hashes[self._hashes_head]
                hashes[self._hashes_head] = None  # type: ignore[call-overload]
                self._hashes_head += 1
                assert task is not None
                tag, fn, args = task
            runner.submit(tag, fn, *args)
            if room is not None:
                room -= 1
        if self._hashes_head and self._hashes_head == len(hashes):
            self._hashes.clear()
            self._hashes_head = 0

    def _finished(self, got: Finished) -> None:
        (what, *payload), result, exc = got
        if what == "hash":
            self._hashed(payload[0], payload[1], result, exc)
        else:
            self._scanned(payload[0], payload[1], result, exc)

    def _hashed(
        self, group: list[BufferRef], cs: int, result: list[BufferDigest | Problem] | None,
        exc: BaseException | None,
    ) -> None:  # fmt: skip
        if exc is not None or result is None:
            message = f"worker failed while hashing: {exc!r}"
            result = [Problem(f.path, message, kind="worker") for f in group]
        fresh = []
        deliver = self._deliver
        for f, item in zip(group, result, strict=True):
            if not isinstance(item, Problem):
                fresh.append((f, item))
            deliver((f, cs), item)
        if self.cache is not None and fresh:
            self.cache.put_many(fresh)
        if self.progress is not None:
            self.progress.files_done(len(group), sum(f.size for f in group))

    # --- deciding and reporting a plan

    def _decide(self, job: _Job) -> None:
        """All digests are in: decide by digest (``stages.digest.decide``),
        and scan what still differs."""
        found = job.found
        results, errors = job.results, job.errors
        plan, tol = job.plan, self.opts.tolerance
        manifests = (plan.src_a.is_manifest, plan.src_b.is_manifest)
        scan_jobs: list[ScanJob] = []
        for p in job.to_hash:
            assert p.a is not None and p.b is not None
            at_a, at_b = pair_sizes(p, job.cs_a, job.cs_b)
            da = found[(p.a.span or p.a, at_a)]  # type: ignore[index]
            db = found[(p.b.span or p.b, at_b)]  # type: ignore[index]
            decided, problems = decide(p, da, db, tol, plan.schema, manifests)
            if problems:
                errors += problems
            if isinstance(decided, BufferResult):
                results.append(decided)
            else:
                scan_jobs.append(decided)
        job.found = {}  # the digests are not needed any more
        if not scan_jobs:
            self._done.append(job)
            return
        from ..stages.scan import scan_batch

        job.pairs_scanned = len(scan_jobs)
        job.bytes_scanned = sum(j.n_bytes for j in scan_jobs)
        groups = batches(scan_jobs, _scan_bytes, self.jobs)
        job.scans_left = len(groups)
        tol, engine = self.opts.tolerance, self.opts.engine
        for group in groups:
            self._scans.append((("scan", job, group), scan_batch, (group, tol, engine)))

    def _scanned(
        self, job: _Job, group: list[ScanJob], result: list[ScanOutcome] | None,
        exc: BaseException | None,
    ) -> None:  # fmt: skip
        if exc is not None or result is None:
            from ..stages.scan import ScanOutcome

            result = []
            for j in group:
                path = j.pair.a.path if j.pair.a else "?"
                problem = Problem(path, f"worker failed while scanning: {exc!r}", kind="worker")
                result.append(ScanOutcome(j.pair.step, j.pair.name, problem=problem))
        from ..stages.scan import outcome_result

        by_key = {(o.step, o.name): o for o in result}
        for j in group:
            out = by_key[(j.pair.step, j.pair.name)]
            if out.problem is not None:
                job.errors.append(out.problem)
            if out.engine:
                job.engines.add(out.engine)
            job.results.append(outcome_result(j.pair, out))
        job.scans_left -= 1
        if job.scans_left == 0:
            self._done.append(job)

    def _report(self, need: _Need) -> None:
        self._open -= 1
        if isinstance(need, _Digests):
            found, cs = need.found, need.chunk_size
            need.on_done([found[(f.span or f, cs)] for f in need.files])
            return
        assert isinstance(need, _Job) and self._runner is not None
        job, plan = need, need.plan
        self._open_plans -= 1
        work = Work(
            files_hashed=job.files_hashed,
            bytes_hashed=job.bytes_hashed,
            files_verified=job.files_verified,
            bytes_verified=job.bytes_verified,
            pairs_scanned=job.pairs_scanned,
            bytes_scanned=job.bytes_scanned,
            engine=",".join(sorted(job.engines)) or None,
            executor=self._runner.kind,
            jobs=self.jobs,
            elapsed_s=time.perf_counter() - self._t0,
        )
        report = plan_report(
            plan.src_a, plan.src_b, plan.schema, job.results, job.errors,
            tolerance_dict(self.opts.tolerance), work, (*plan.notes, *job.notes), plan.rank,
        )  # fmt: skip
        if self.progress is not None:
            self.progress.pair_done()
        if plan.on_done is not None:
            plan.on_done(plan, report)
