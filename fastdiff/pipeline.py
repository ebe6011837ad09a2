"""The scheduler that drives the stages over one or many run pairs.

For every run pair: pair (stage 2) and size (stage 3) decide what they can;
every file that still needs a digest is hashed once (stage 4), however many
pairs it belongs to, unless a manifest or the digest cache already knows
it; a pair whose files are all hashed is decided by digest, and only its
differing chunks are scanned (stage 5); a pair whose scans are done gets
its verdict (stage 6) and is handed to ``on_report`` at once, in input
order, so a long sweep loses nothing that finished.

Work goes through any ``concurrent.futures.Executor`` (only ``submit`` is
called on it); hashing is submitted run by run, so the first pairs finish
first.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from .cache import DigestCache
from .discover import DumpFile
from .dtypes import get_dtype
from .hash import DEFAULT_CHUNK_SIZE, FileDigest, check_chunk_size, differing_ranges, hash_batch
from .kernel import EXACT, Tolerance
from .manifest import RunSource, open_run
from .pair import Pair, pair_runs
from .pool import batches, default_jobs, open_executor, resolve_executor_kind
from .progress import Progress
from .results import BufferResult, Problem, Report, Work
from .scan import ScanJob, ScanOutcome, choose_engine, scan_batch
from .schema import RL_STATE, Schema
from .size import size_stage
from .verdict import build_report

NOTHING_TO_COMPARE = (
    "nothing to compare: neither run holds step_<N>_<name>.bin files; "
    "check that these are the dump folders"
)


@dataclass(frozen=True)
class CompareOptions:
    schema: Schema = field(default=RL_STATE)
    tolerance: Tolerance = EXACT
    chunk_size: int = DEFAULT_CHUNK_SIZE
    engine: str = "auto"  # auto | numba | numpy
    executor: str = "auto"  # auto | serial | thread | process
    jobs: int | None = None

    def __post_init__(self) -> None:
        check_chunk_size(self.chunk_size)
        if self.engine not in ("auto", "numba", "numpy"):
            raise ValueError(f"unknown engine {self.engine!r} (valid: auto numba numpy)")
        if self.jobs is not None and self.jobs < 1:
            raise ValueError(f"--jobs must be at least 1, got {self.jobs}")


def tolerance_dict(tol: Tolerance) -> dict[str, object]:
    return {"atol": tol.atol, "rtol": tol.rtol, "ulp": tol.ulp, "nan_equal": tol.nan_equal}


# --- per-pair decisions ------------------------------------------------------


def outcome_result(p: Pair, out: ScanOutcome) -> BufferResult:
    """A scanned pair's result (stage 5's outcome, as a BufferResult)."""
    assert p.a is not None and p.b is not None
    itemsize = get_dtype(p.dtype).itemsize
    n_a, n_b = p.a.size // itemsize, p.b.size // itemsize
    if out.problem is not None:
        return p.result("error", n_elements_a=n_a, n_elements_b=n_b, message=out.problem.message)
    s = out.stats
    assert s is not None
    first = s.first_diff if s.n_diff else s.first_any
    if n_a != n_b:
        status = "length_mismatch"
    elif s.n_diff:
        status = "diverged"
    else:
        status = "within_tolerance"
    return p.result(
        status,  # type: ignore[arg-type]
        n_elements_a=n_a,
        n_elements_b=n_b,
        n_diff=s.n_diff,
        n_within_tolerance=s.n_within,
        first_index=first if first >= 0 else None,
        a=out.a,
        b=out.b,
        a_bits=out.a_bits,
        b_bits=out.b_bits,
        max_abs_delta=s.max_delta,
        max_abs_delta_index=s.max_index if s.max_index >= 0 else None,
        n_nan_mismatch=s.n_nan,
        n_inf_mismatch=s.n_inf,
    )


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
    if not mismatched and (data or n_a == n_b):
        fields["n_diff"] = 0
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


@dataclass
class _Plan:
    index: int
    src_a: RunSource
    src_b: RunSource
    results: list[BufferResult]
    errors: list[Problem]
    to_hash: list[Pair]
    waiting: set[str]  # paths whose digests this plan still needs
    scans_left: int = 0
    scan_jobs: list[ScanJob] = field(default_factory=list)
    work: Work = field(default_factory=Work)
    t0: float = 0.0


def _hash_failed(files: Sequence[DumpFile], exc: BaseException) -> list[FileDigest | Problem]:
    return [Problem(f.path, f"worker failed while hashing: {exc!r}") for f in files]


def _scan_failed(jobs: Sequence[ScanJob], exc: BaseException) -> list[ScanOutcome]:
    out = []
    for j in jobs:
        path = j.pair.a.path if j.pair.a else "?"
        problem = Problem(path, f"worker failed while scanning: {exc!r}")
        out.append(ScanOutcome(j.pair.step, j.pair.name, problem=problem))
    return out


def compare_pairs(
    pairs: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
    cache: DigestCache | None = None,
    on_report: Callable[[int, Report], None] | None = None,
    progress: Progress | None = None,
) -> list[Report]:
    """Compare run pairs (folders or manifests), hashing every file once.

    Reports come back in input order; ``on_report(i, report)`` is called for
    each as soon as it and all before it are done.
    """
    opts = options or CompareOptions()
    specs = [os.fspath(s) for pair in pairs for s in pair]
    sources = {s: open_run(s) for s in dict.fromkeys(specs)}
    manifest_sizes = {src.chunk_size for src in sources.values() if src.chunk_size}
    chunk_size = min(manifest_sizes) if manifest_sizes else opts.chunk_size
    jobs = opts.jobs or default_jobs()

    plans: list[_Plan] = []
    for i, (ra, rb) in enumerate(pairs):
        sa, sb = sources[os.fspath(ra)], sources[os.fspath(rb)]
        errors = [*sa.listing.errors, *sb.listing.errors]
        both = sa.listing.readable and sb.listing.readable
        paired = pair_runs(sa.listing, sb.listing, opts.schema) if both else ()
        if not paired and not errors:
            errors.append(Problem(f"{sa.spec} and {sb.spec}", NOTHING_TO_COMPARE))
        decided, size_problems, to_hash = size_stage(paired)
        plans.append(_Plan(i, sa, sb, decided, errors + size_problems, to_hash, set()))

    # Which files need a digest, and which are known already.
    digests: dict[str, FileDigest] = {}
    failed: dict[str, Problem] = {}
    needed: dict[str, tuple[DumpFile, str]] = {}  # path -> (file, run spec)
    for plan in plans:
        for p in plan.to_hash:
            for f, src in ((p.a, plan.src_a), (p.b, plan.src_b)):
                assert f is not None
                plan.waiting.add(f.path)
                if f.path in src.digests:
                    digests[f.path] = src.digests[f.path]
                elif f.path not in needed:
                    needed[f.path] = (f, src.spec)
    if cache is not None:
        for path, (f, _) in list(needed.items()):
            hit = cache.get(f, chunk_size)
            if hit is not None:
                digests[path] = hit
                del needed[path]
    total_bytes = sum(f.size for f, _ in needed.values())
    kind = "external" if executor is not None else resolve_executor_kind(opts.executor, total_bytes)
    if progress is not None:
        progress.start(len(needed), total_bytes, len(plans))

    reports: dict[int, Report] = {}
    next_emit = 0

    def finish(plan: _Plan) -> None:
        nonlocal next_emit
        work = replace(plan.work, executor=kind, jobs=jobs,
                       elapsed_s=time.perf_counter() - t_start)  # fmt: skip
        reports[plan.index] = build_report(
            plan.src_a.spec,
            plan.src_b.spec,
            opts.schema,
            plan.results,
            [*plan.src_a.listing.skipped, *plan.src_b.listing.skipped],
            plan.errors,
            tolerance=tolerance_dict(opts.tolerance),
            work=work,
        )
        if progress is not None:
            progress.pair_done()
        while next_emit in reports:
            if on_report is not None:
                on_report(next_emit, reports[next_emit])
            next_emit += 1

    t_start = time.perf_counter()
    ctx = nullcontext(executor) if executor is not None else open_executor(kind, jobs)
    with ctx as ex:
        assert ex is not None
        pending: dict[Future[list[object]], tuple[str, object]] = {}

        def submit_scans(plan: _Plan) -> None:
            data = not (plan.src_a.is_manifest or plan.src_b.is_manifest)
            for p in plan.to_hash:
                assert p.a is not None and p.b is not None
                bad = [failed[f.path] for f in (p.a, p.b) if f.path in failed]
                if bad:
                    plan.errors += bad
                    plan.results.append(p.result("error", message=bad[0].message))
                    continue
                decided = by_digest(p, digests[p.a.path], digests[p.b.path], data)
                if isinstance(decided, ScanJob):
                    plan.scan_jobs.append(decided)
                else:
                    if decided.status == "error" and decided.message:
                        plan.errors.append(Problem(p.a.path, decided.message))
                    plan.results.append(decided)
            hashed = [f for p in plan.to_hash for f in (p.a, p.b) if f is not None]
            plan.work = Work(files_hashed=len(hashed), bytes_hashed=sum(f.size for f in hashed))
            if not plan.scan_jobs:
                finish(plan)
                return
            total = sum(j.n_bytes for j in plan.scan_jobs)
            engine = choose_engine(opts.engine, total)
            plan.work = replace(plan.work, pairs_scanned=len(plan.scan_jobs),
                                bytes_scanned=total, engine=engine)  # fmt: skip
            groups = batches(plan.scan_jobs, lambda j: j.n_bytes, jobs)
            plan.scans_left = len(groups)
            for g in groups:
                fut = ex.submit(scan_batch, g, opts.tolerance, engine)
                pending[fut] = ("scan", (plan, g))

        waiters: dict[str, list[_Plan]] = {}
        for plan in plans:
            plan.waiting = {p for p in plan.waiting if p not in digests}
            for path in plan.waiting:
                waiters.setdefault(path, []).append(plan)

        def file_done(path: str) -> None:
            for plan in waiters.pop(path, []):
                plan.waiting.discard(path)
                if not plan.waiting:
                    submit_scans(plan)

        # Plans needing no hashing at all are decided straight away.
        for plan in plans:
            if not plan.waiting:
                submit_scans(plan)
        by_run: dict[str, list[DumpFile]] = {}
        for f, spec in needed.values():
            by_run.setdefault(spec, []).append(f)
        for spec in sources:
            for g in batches(by_run.get(spec, []), lambda f: f.size, jobs):
                fut = ex.submit(hash_batch, g, chunk_size)
                pending[fut] = ("hash", g)

        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in done:
                what, payload = pending.pop(fut)
                if what == "hash":
                    group: list[DumpFile] = payload  # type: ignore[assignment]
                    try:
                        hashed = fut.result()
                    except Exception as exc:
                        hashed = _hash_failed(group, exc)  # type: ignore[assignment]
                    fresh = []
                    for item in hashed:
                        if isinstance(item, FileDigest):
                            digests[item.path] = item
                            fresh.append((needed[item.path][0], item))
                        else:
                            assert isinstance(item, Problem)
                            failed[item.path] = item
                    if cache is not None:
                        cache.put_many(fresh)
                    if progress is not None:
                        progress.files_done(len(group), sum(f.size for f in group))
                    for f in group:
                        file_done(f.path)
                else:
                    plan, jobs_done = payload  # type: ignore[misc]
                    try:
                        outcomes = fut.result()
                    except Exception as exc:
                        outcomes = _scan_failed(jobs_done, exc)  # type: ignore[assignment]
                    by_key = {(o.step, o.name): o for o in outcomes}  # type: ignore[attr-defined]
                    for j in jobs_done:
                        out = by_key[(j.pair.step, j.pair.name)]
                        if out.problem is not None:
                            plan.errors.append(out.problem)
                        plan.results.append(outcome_result(j.pair, out))
                    plan.scans_left -= 1
                    if plan.scans_left == 0:
                        finish(plan)
    if progress is not None:
        progress.close()
    return [reports[i] for i in range(len(plans))]
