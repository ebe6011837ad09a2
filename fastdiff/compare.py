"""The library API: compare two runs through the staged pipeline.

discover -> pair -> size -> hash -> scan (kernel) -> verdict. Each stage
drops what it has decided, so the cheap tests (stat, then digests) settle
almost everything and only differing chunks reach the kernel.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from .discover import DumpFile, discover
from .dtypes import get_dtype
from .hash import DEFAULT_CHUNK_SIZE, FileDigest, check_chunk_size, differing_ranges, hash_batch
from .kernel import EXACT, Tolerance
from .pair import Pair, pair_runs
from .pool import batches, default_jobs, fan_out, open_executor, resolve_executor_kind
from .results import BufferResult, Problem, Report, Work
from .scan import ScanJob, ScanOutcome, choose_engine, scan_batch
from .schema import RL_STATE, Schema
from .size import size_stage
from .verdict import build_report

NOTHING_TO_COMPARE = (
    "nothing to compare: neither run folder holds step_<N>_<name>.bin files; "
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


def _hash_failed(files: Sequence[DumpFile], exc: BaseException) -> list[FileDigest | Problem]:
    return [Problem(f.path, f"worker failed while hashing: {exc!r}") for f in files]


def _scan_failed(jobs: Sequence[ScanJob], exc: BaseException) -> list[ScanOutcome]:
    return [
        ScanOutcome(
            j.pair.step,
            j.pair.name,
            problem=Problem(
                j.pair.a.path if j.pair.a else "?", f"worker failed while scanning: {exc!r}"
            ),
        )
        for j in jobs
    ]


def _outcome_result(p: Pair, out: ScanOutcome, itemsize: int) -> BufferResult:
    assert p.a is not None and p.b is not None
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


def _by_digest(p: Pair, da: FileDigest, db: FileDigest, itemsize: int) -> BufferResult | ScanJob:
    assert p.a is not None and p.b is not None
    ranges, mismatched = differing_ranges(da, db)
    if ranges:
        return ScanJob(p, ranges, mismatched)
    n_a, n_b = p.a.size // itemsize, p.b.size // itemsize
    if n_a == n_b:
        return p.result("equal", n_elements_a=n_a, n_elements_b=n_b, n_diff=0)
    # One file is a prefix of the other (or the shorter one is empty).
    return p.result("length_mismatch", n_elements_a=n_a, n_elements_b=n_b, n_diff=0)


def compare_runs(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
) -> Report:
    """Compare two run folders; the Report holds every buffer and every error.

    ``executor``: any concurrent.futures executor the caller owns (only
    ``submit`` is used); without one, fastdiff picks serial or a pool of its
    own per ``options.executor`` and ``options.jobs``.
    """
    opts = options or CompareOptions()
    t0 = time.perf_counter()
    listing_a, listing_b = discover(run_a), discover(run_b)
    errors: list[Problem] = [*listing_a.errors, *listing_b.errors]
    pairs = pair_runs(listing_a, listing_b, opts.schema)
    if not pairs and not errors:
        errors.append(Problem(f"{listing_a.root} and {listing_b.root}", NOTHING_TO_COMPARE))

    results, size_problems, to_hash = size_stage(pairs)
    errors += size_problems
    files = [f for p in to_hash for f in (p.a, p.b) if f is not None]
    total = sum(f.size for f in files)
    jobs = opts.jobs or default_jobs()
    kind = "external" if executor is not None else resolve_executor_kind(opts.executor, total)
    work = Work(files_hashed=len(files), bytes_hashed=total, executor=kind, jobs=jobs)

    ctx = nullcontext(executor) if executor is not None else open_executor(kind, jobs)
    with ctx as ex:
        assert ex is not None
        hashed = fan_out(
            ex,
            hash_batch,
            batches(files, lambda f: f.size, jobs),
            opts.chunk_size,
            on_failure=_hash_failed,
        )
        digests = {d.path: d for d in hashed if isinstance(d, FileDigest)}
        failed = {d.path: d for d in hashed if isinstance(d, Problem)}
        scan_jobs: list[ScanJob] = []
        for p in to_hash:
            assert p.a is not None and p.b is not None
            itemsize = get_dtype(p.dtype).itemsize
            bad = [failed[f.path] for f in (p.a, p.b) if f.path in failed]
            if bad:
                errors += bad
                results.append(p.result("error", message=bad[0].message))
                continue
            decided = _by_digest(p, digests[p.a.path], digests[p.b.path], itemsize)
            if isinstance(decided, ScanJob):
                scan_jobs.append(decided)
            else:
                results.append(decided)

        if scan_jobs:
            scan_total = sum(j.n_bytes for j in scan_jobs)
            engine = choose_engine(opts.engine, scan_total)
            work = replace(
                work, pairs_scanned=len(scan_jobs), bytes_scanned=scan_total, engine=engine
            )
            outcomes = fan_out(
                ex,
                scan_batch,
                batches(scan_jobs, lambda j: j.n_bytes, jobs),
                opts.tolerance,
                engine,
                on_failure=_scan_failed,
            )
            by_key = {(o.step, o.name): o for o in outcomes}
            for j in scan_jobs:
                p = j.pair
                out = by_key[(p.step, p.name)]
                r = _outcome_result(p, out, get_dtype(p.dtype).itemsize)
                if out.problem is not None:
                    errors.append(out.problem)
                results.append(r)

    work = replace(work, elapsed_s=time.perf_counter() - t0)
    return build_report(
        os.fspath(run_a),
        os.fspath(run_b),
        opts.schema,
        results,
        [*listing_a.skipped, *listing_b.skipped],
        errors,
        tolerance=tolerance_dict(opts.tolerance),
        work=work,
    )


def tolerance_dict(tol: Tolerance) -> dict[str, object]:
    return {"atol": tol.atol, "rtol": tol.rtol, "ulp": tol.ulp, "nan_equal": tol.nan_equal}
