"""The scheduler that drives the stages over one or many run pairs.

For every run pair: pair (stage 2) and size (stage 3) decide what they can;
every file that still needs a digest is hashed once (stage 4) per chunk size
its pairs need (a manifest's, else the options'), however many pairs it
belongs to, unless a manifest or the digest cache already knows it; a pair
whose files are all hashed is decided by digest, and only its differing
chunks are scanned (stage 5); a pair whose scans are done gets its verdict
(stage 6) and is handed to ``on_report`` at once, in input order, so a long
sweep loses nothing that finished.

Work goes through any ``concurrent.futures.Executor`` (only ``submit`` is
called on it); hashing is submitted run by run, so the first pairs finish
first.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..dtypes import get_dtype
from ..options import CompareOptions, tolerance_dict
from ..results import COUNT_FIELDS, BufferResult, Problem, Report, Work
from ..schema import RL_STATE, Schema
from ..sources.schemas import choose_schema
from ..stages.discover import (
    DumpFile,
    RunSource,
    dump_subfolder,
    holds_no_dumps,
    no_dumps_problem,
    open_run,
)
from ..stages.hash import (
    FileDigest,
    differing_ranges,
    hash_batch,
)
from ..stages.pair import Pair, pair_runs
from ..stages.scan import ScanJob, ScanOutcome, outcome_result, scan_batch
from ..stages.size import size_stage
from ..stages.verdict import build_report
from .pool import Runner, batches, default_jobs, open_runner, resolve_executor_kind
from .progress import Progress

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from .cache import DigestCache

NOTHING_TO_COMPARE = (
    "nothing to compare: neither run holds step_<N>_<name>.bin files; "
    "check that these are the dump folders"
)


# --- per-pair decisions ------------------------------------------------------


def by_digest(p: Pair, da: FileDigest, db: FileDigest, data: bool) -> BufferResult | ScanJob:
    """Decide a pair from its chunk digests; a ScanJob when only a scan can tell.

    ``data``: both files can be read. Without data (a manifest on one side)
    a differing pair is reported with its first differing chunk instead.
    """
    assert p.a is not None and p.b is not None
    itemsize = get_dtype(p.dtype).itemsize
    n_a, n_b = p.a.size // itemsize, p.b.size // itemsize
    if da.chunk_size != db.chunk_size:
        return p.result(
            "error",
            n_elements_a=n_a,
            n_elements_b=n_b,
            message=f"digests of different chunk sizes ({da.chunk_size} and {db.chunk_size}) "
            "cannot be compared; hash both with the same --chunk-size",
        )
    ranges, mismatched = differing_ranges(da, db)
    if ranges and data:
        return ScanJob(p, ranges, mismatched)
    status = "length_mismatch" if n_a != n_b else "diverged" if mismatched else "equal"
    fields: dict[str, object] = {"n_elements_a": n_a, "n_elements_b": n_b}
    if not ranges:
        # Digests decided the whole common prefix equal: every count is 0,
        # wherever the shorter file ends relative to the chunks.
        fields.update(dict.fromkeys(COUNT_FIELDS, 0))
    if mismatched:
        start = next(s for s, _ in ranges)
        k = start // da.chunk_size
        while da.chunks[k] == db.chunks[k]:
            k += 1
        lo = k * da.chunk_size
        fields["first_divergent_chunk"] = (lo, min(lo + da.chunk_size, min(da.size, db.size)))
    if not data:
        fields["message"] = "compared by digests only (a manifest holds no data)"
    return p.result(status, **fields)  # type: ignore[arg-type]


# --- the scheduler ----------------------------------------------------------------


#: A digest is of a file at a chunk size: (path, chunk size).
_Key = tuple[str, int]


@dataclass
class _Plan:
    """One run pair on its way through the stages."""

    index: int
    src_a: RunSource
    src_b: RunSource
    results: list[BufferResult]
    errors: list[Problem]
    to_hash: list[Pair]
    waiting: set[_Key] = field(default_factory=set)  # digests it still needs
    scans_left: int = 0
    work: Work = field(default_factory=Work)
    schema: Schema = RL_STATE  # the schema this pair is read with


def pair_chunk_size(src_a: RunSource, src_b: RunSource, opts: CompareOptions) -> int:
    """The chunk size a pair's local files are hashed at: a manifest's (run A's
    when both are manifests), else the options'. The same for the pair in a
    sweep as for it alone."""
    for src in (src_a, src_b):
        if src.chunk_size is not None:
            return src.chunk_size
    return opts.chunk_size


class _Scheduler:
    """Feeds hash and scan tasks to a runner and finishes plans as they complete.

    Digests are keyed by (path, chunk size): a file paired against manifests
    of different chunk sizes is hashed once at each of them, and never more.
    """

    def __init__(
        self,
        plans: list[_Plan],
        opts: CompareOptions,
        jobs: int,
        cache: DigestCache | None,
        on_report: Callable[[int, Report], None] | None,
        progress: Progress | None,
    ) -> None:
        self.plans = plans
        self.opts = opts
        self.jobs = jobs
        self.cache = cache
        self.on_report = on_report
        self.progress = progress
        self.digests: dict[_Key, FileDigest] = {}
        self.failed: dict[_Key, Problem] = {}
        self.needed: dict[_Key, tuple[DumpFile, str]] = {}  # key -> (file, run spec)
        self.waiters: dict[_Key, list[_Plan]] = {}
        self.reports: dict[int, Report] = {}
        self.next_emit = 0
        self.kind = "serial"
        self.t0 = time.perf_counter()
        self._collect_needed()

    def _key(self, plan: _Plan, f: DumpFile, src: RunSource) -> _Key:
        """Where a file of this plan finds its digest: a manifest's own chunk
        size, else the chunk size of the pair."""
        if src.chunk_size is not None:
            return f.path, src.chunk_size
        return f.path, pair_chunk_size(plan.src_a, plan.src_b, self.opts)

    def _collect_needed(self) -> None:
        """Which files need a digest at which chunk size; manifests and the
        cache supply the rest."""
        for plan in self.plans:
            for p in plan.to_hash:
                for f, src in ((p.a, plan.src_a), (p.b, plan.src_b)):
                    assert f is not None
                    key = self._key(plan, f, src)
                    if f.path in src.digests:
                        self.digests[key] = src.digests[f.path]
                    elif key not in self.needed:
                        self.needed[key] = (f, src.spec)
                    plan.waiting.add(key)
        if self.cache is not None:
            by_size: dict[int, list[DumpFile]] = {}
            for (_, size), (f, _) in self.needed.items():
                by_size.setdefault(size, []).append(f)
            for size, files in by_size.items():
                for path, hit in self.cache.get_many(files, size).items():
                    self.digests[(path, size)] = hit
                    del self.needed[(path, size)]
        for plan in self.plans:
            plan.waiting -= self.digests.keys()
            for key in plan.waiting:
                self.waiters.setdefault(key, []).append(plan)

    @property
    def bytes_to_hash(self) -> int:
        return sum(f.size for f, _ in self.needed.values())

    def run(self, runner: Runner, kind: str) -> list[Report]:
        self.kind = kind
        if self.progress is not None:
            self.progress.start(len(self.needed), self.bytes_to_hash, len(self.plans))
        for plan in self.plans:
            if not plan.waiting:
                self._decide(plan, runner)
        by_run: dict[tuple[str, int], list[DumpFile]] = {}
        for (_, size), (f, spec) in self.needed.items():
            by_run.setdefault((spec, size), []).append(f)
        # Run by run, so that the first pairs are ready first.
        for (_, size), files in by_run.items():
            for group in batches(files, lambda f: f.size, self.jobs):
                runner.submit(("hash", group, size), hash_batch, group, size)
        for (what, *payload), result, exc in runner.results():
            if what == "hash":
                self._hashed(payload[0], payload[1], result, exc, runner)
            else:
                self._scanned(payload[0], payload[1], result, exc)
        if self.progress is not None:
            self.progress.close()
        return [self.reports[i] for i in range(len(self.plans))]

    def _hashed(
        self, group: list[DumpFile], size: int, result: list[FileDigest | Problem] | None,
        exc: BaseException | None, runner: Runner,
    ) -> None:  # fmt: skip
        if exc is not None or result is None:
            result = [Problem(f.path, f"worker failed while hashing: {exc!r}") for f in group]
        fresh = []
        for item in result:
            if isinstance(item, FileDigest):
                self.digests[(item.path, size)] = item
                fresh.append((self.needed[(item.path, size)][0], item))
            else:
                self.failed[(item.path, size)] = item
        if self.cache is not None:
            self.cache.put_many(fresh)
        if self.progress is not None:
            self.progress.files_done(len(group), sum(f.size for f in group))
        for f in group:
            for plan in self.waiters.pop((f.path, size), []):
                plan.waiting.discard((f.path, size))
                if not plan.waiting:
                    self._decide(plan, runner)

    def _decide(self, plan: _Plan, runner: Runner) -> None:
        """All digests are in: decide by digest, and scan what still differs."""
        data = not (plan.src_a.is_manifest or plan.src_b.is_manifest)
        scan_jobs: list[ScanJob] = []
        for p in plan.to_hash:
            assert p.a is not None and p.b is not None
            key_a, key_b = self._key(plan, p.a, plan.src_a), self._key(plan, p.b, plan.src_b)
            bad = [self.failed[k] for k in (key_a, key_b) if k in self.failed]
            if bad:
                plan.errors += bad
                plan.results.append(p.result("error", message=bad[0].message))
                continue
            decided = by_digest(p, self.digests[key_a], self.digests[key_b], data)
            if isinstance(decided, ScanJob):
                scan_jobs.append(decided)
            else:
                if decided.status == "error" and decided.message:
                    plan.errors.append(Problem(p.a.path, decided.message))
                plan.results.append(decided)
        hashed = [f for p in plan.to_hash for f in (p.a, p.b) if f is not None]
        plan.work = Work(files_hashed=len(hashed), bytes_hashed=sum(f.size for f in hashed))
        if not scan_jobs:
            self._finish(plan)
            return
        total = sum(j.n_bytes for j in scan_jobs)
        plan.work = plan.work.replace(pairs_scanned=len(scan_jobs), bytes_scanned=total)
        groups = batches(scan_jobs, lambda j: j.n_bytes, self.jobs)
        plan.scans_left = len(groups)
        for group in groups:
            runner.submit(
                ("scan", plan, group), scan_batch, group, self.opts.tolerance, self.opts.engine
            )

    def _scanned(
        self, plan: _Plan, group: list[ScanJob], result: list[ScanOutcome] | None,
        exc: BaseException | None,
    ) -> None:  # fmt: skip
        if exc is not None or result is None:
            result = []
            for j in group:
                path = j.pair.a.path if j.pair.a else "?"
                problem = Problem(path, f"worker failed while scanning: {exc!r}")
                result.append(ScanOutcome(j.pair.step, j.pair.name, problem=problem))
        by_key = {(o.step, o.name): o for o in result}
        engines = {e for e in (plan.work.engine or "").split(",") if e}
        for j in group:
            out = by_key[(j.pair.step, j.pair.name)]
            if out.problem is not None:
                plan.errors.append(out.problem)
            if out.engine:
                engines.add(out.engine)
            plan.results.append(outcome_result(j.pair, out))
        plan.work = plan.work.replace(engine=",".join(sorted(engines)) or None)
        plan.scans_left -= 1
        if plan.scans_left == 0:
            self._finish(plan)

    def _finish(self, plan: _Plan) -> None:
        work = plan.work.replace(executor=self.kind, jobs=self.jobs,
                                 elapsed_s=time.perf_counter() - self.t0)  # fmt: skip
        self.reports[plan.index] = build_report(
            plan.src_a.spec,
            plan.src_b.spec,
            plan.schema,
            plan.results,
            [*plan.src_a.listing.skipped, *plan.src_b.listing.skipped],
            plan.errors,
            tolerance=tolerance_dict(self.opts.tolerance),
            work=work,
        )
        if self.progress is not None:
            self.progress.pair_done()
        while self.next_emit in self.reports:
            if self.on_report is not None:
                self.on_report(self.next_emit, self.reports[self.next_emit])
            self.next_emit += 1


def _empty_sides(sa: RunSource, sb: RunSource, hints: dict[str, str | None]) -> list[Problem]:
    """A run side with no dumps at all is an error, never a divergence.
    ``hints``: each empty folder's subfolder that holds dumps, looked up once."""
    empty = [(side, s) for side, s in (("A", sa), ("B", sb)) if holds_no_dumps(s.listing)]
    for _, s in empty:
        if s.spec not in hints:
            hints[s.spec] = None if s.is_manifest else dump_subfolder(s.spec)
    if len(empty) < 2:
        return [no_dumps_problem(s, side, hints[s.spec]) for side, s in empty]
    subs = [sub for sub in dict.fromkeys(hints[s.spec] for _, s in empty) if sub]
    hint = f"; did you mean {' or '.join(subs)}?" if subs else ""
    where = f"{sa.spec} and {sb.spec}"
    return [Problem(where, NOTHING_TO_COMPARE + hint)]


def compare_pairs(
    pairs: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
    cache: DigestCache | None = None,
    on_report: Callable[[int, Report], None] | None = None,
    progress: Progress | None = None,
) -> list[Report]:
    """Compare run pairs (folders or manifests), hashing every file once per
    chunk size it is needed at.

    Reports come back in input order; ``on_report(i, report)`` is called for
    each as soon as it and all before it are done. ``executor``: any
    concurrent.futures executor the caller owns (only ``submit`` is called).
    Each pair is read with the schema ``runschema.choose_schema`` picks for
    it; what it says about the choice goes to stderr, once per line.
    """
    opts = options or CompareOptions()
    specs = [os.fspath(s) for pair in pairs for s in pair]
    sources = {s: open_run(s) for s in dict.fromkeys(specs)}

    plans: list[_Plan] = []
    hints: dict[str, str | None] = {}
    notes: dict[str, None] = {}
    for i, (ra, rb) in enumerate(pairs):
        sa, sb = sources[os.fspath(ra)], sources[os.fspath(rb)]
        schema, said = choose_schema((sa, sb), opts.schema)
        notes.update(dict.fromkeys(said))
        empty = _empty_sides(sa, sb, hints)
        errors = [*sa.listing.errors, *sb.listing.errors, *empty]
        # An unreadable or empty run's buffers are unknown, not absent: nothing
        # is paired against it (else every buffer of the other would diverge).
        both = sa.listing.readable and sb.listing.readable and not empty
        paired = pair_runs(sa.listing, sb.listing, schema) if both else ()
        decided, size_problems, to_hash = size_stage(paired)
        plans.append(_Plan(i, sa, sb, decided, errors + size_problems, to_hash, schema=schema))
    for note in notes:  # like the digest cache's warnings: once each, on stderr
        print(f"fastdiff: {note}", file=sys.stderr)

    jobs = opts.jobs or default_jobs()
    sched = _Scheduler(plans, opts, jobs, cache, on_report, progress)
    kind = "external" if executor is not None else resolve_executor_kind(
        opts.executor, sched.bytes_to_hash
    )  # fmt: skip
    with open_runner(kind, jobs, executor) as runner:
        return sched.run(runner, kind)
