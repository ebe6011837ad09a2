"""Stage 5: run the kernel over the byte ranges whose digests differ.

A scan job is one pair and the ranges of its common prefix to look at. The
ranges are read piece by piece into this thread's two aligned buffers and
scanned, and the pieces' stats are merged, so memory stays bounded whatever
the file size. The values at the first differing index are read back from
the files themselves. A buffer with named fields (``schema.Layout``) is
scanned in pieces cut at the fields' edges, so each field gets its own
stats besides the buffer's; one with a shape of 2 or more dimensions tells
the kernel its row size, so the rows holding differences are counted.

Choosing the engine (``auto``): a differing 4 MiB chunk often holds a single
changed element. So a region of moderate size is first narrowed to the 4 KiB
blocks whose bytes differ (an exact comparison, no numpy needed); a few such
blocks go to the pure-Python engine, which imports nothing; more go to
numpy (0.2 s to import); the largest regions go to numba (0.5 s more to
import and load, then the fastest loop). The thresholds are measured by
``benchmarks/bench_engines.py``.
"""

from __future__ import annotations

import sys

from ..dtypes import DType, bits_hex, decode, get_dtype
from ..kernels import scan_bytes
from ..model.facts import Context, ScanStats, first_index, result_facts, row_size
from ..model.results import BufferResult, Problem
from ..model.tolerance import DEFAULT_ROUNDING_ULP
from ..model.value import Value
from ..sources.access import open_buffer
from ..sources.reader import CHANGED, READ_SIZE, FileChanged, buffer, describe_os_error
from .digest import ScanJob, add_range

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..kernels.types import Engine
    from ..model.results import Number
    from ..model.tolerance import Tolerance
    from ..sources.access import BufferReader
    from .pair import Pair

#: Narrowing granularity: differing regions are cut into blocks this big.
BLOCK = 4096
#: Regions up to this size are narrowed to their differing blocks first.
NARROW_MAX_BYTES = 64 << 20
#: Differing blocks up to this many bytes are scanned by the Python engine.
#: Measured (benchmarks/bench_engines.py, cold CLI runs): with every element
#: of a 64 KiB region differing, auto (narrowed, then Python) takes 0.13 s
#: against 0.22 s for numpy; with 1 MiB, Python would take longer than
#: numpy's 0.2 s import.
PYTHON_MAX_BYTES = 64 << 10
#: Up to this many bytes numpy wins. numba costs about 1 s to import and load
#: its cached kernels here, against numpy's 0.2 s; with every element
#: differing numpy still wins at 64 MiB (0.96 s against 1.26 s) and loses at
#: 256 MiB (3.3 s against 1.56 s); with 1% differing it wins throughout.
NUMPY_MAX_BYTES = 64 << 20


class ScanOutcome(Value):
    """What scanning one pair found: the merged kernel facts (``stats``), those
    of each named field (``field_stats``, in the schema's order) and the
    values at the first differing index, or the problem that stopped it.
    ``rounding_ulp``: the tolerance's line between rounding and large."""

    __slots__ = (
        "a",
        "a_bits",
        "b",
        "b_bits",
        "engine",
        "field_stats",
        "name",
        "problem",
        "rounding_ulp",
        "stats",
        "step",
    )

    def __init__(
        self,
        step: int,
        name: str,
        stats: ScanStats | None = None,
        a: Number | None = None,
        b: Number | None = None,
        a_bits: str | None = None,
        b_bits: str | None = None,
        problem: Problem | None = None,
        engine: str | None = None,
        field_stats: tuple[ScanStats, ...] = (),
        rounding_ulp: int = DEFAULT_ROUNDING_ULP,
    ) -> None:
        self.step = step
        self.name = name
        self.stats = stats
        self.a = a
        self.b = b
        self.a_bits = a_bits
        self.b_bits = b_bits
        self.problem = problem
        self.engine = engine
        self.field_stats = field_stats
        self.rounding_ulp = rounding_ulp


def choose_engine(requested: str, total_bytes: int) -> Engine:
    """The engine for ``total_bytes`` of (narrowed) differing data."""
    if requested in ("numba", "numpy", "python"):
        return requested  # type: ignore[return-value]
    if total_bytes <= PYTHON_MAX_BYTES:
        return "python"
    if "numba" in sys.modules or total_bytes > NUMPY_MAX_BYTES:
        return "numba"
    return "numpy"


def narrow(
    fa: BufferReader, fb: BufferReader, job: ScanJob, buf_a: memoryview, buf_b: memoryview
) -> tuple[tuple[int, int], ...]:
    """The BLOCK-sized pieces of the job's ranges whose bytes differ, merged."""
    out: list[list[int]] = []
    for start, end in job.ranges:
        for off in range(start, end, READ_SIZE):
            n = min(READ_SIZE, end - off)
            va = fa.read_into(buf_a[:n], off)
            vb = fb.read_into(buf_b[:n], off)
            for i in range(0, n, BLOCK):
                j = min(i + BLOCK, n)
                if bytes(va[i:j]) != bytes(vb[i:j]):
                    add_range(out, off + i, off + j)
    return tuple((s, e) for s, e in out)


def _split(lo: int, hi: int, spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """[lo, hi) cut at the edges of ``spans`` (sorted, disjoint ``(start, stop,
    field)`` byte ranges): ``(start, stop, field)`` pieces, field -1 outside any."""
    out = []
    pos = lo
    for start, stop, field in spans:
        if stop <= pos:
            continue
        if start >= hi:
            break
        if start > pos:
            out.append((pos, start, -1))
            pos = start
        end = min(stop, hi)
        out.append((pos, end, field))
        pos = end
        if pos >= hi:
            break
    if pos < hi:
        out.append((pos, hi, -1))
    return out


def scan_job(job: ScanJob, tol: Tolerance, requested: str = "auto") -> ScanOutcome:
    """Scan one job; ``requested``: an engine name, or ``auto``."""
    p = job.pair
    assert p.a is not None and p.b is not None
    dt: DType = get_dtype(p.dtype)
    w = dt.itemsize
    stats = ScanStats()
    layout = p.layout
    fields = layout.fields if layout is not None else ()
    field_stats = [ScanStats()] * len(fields)
    spans = sorted((f.start * w, f.stop * w, k) for k, f in enumerate(fields))
    shape = layout.resolve(min(p.a.size, p.b.size) // w) if layout is not None else None
    rows = row_size(shape)
    buf_a, buf_b = buffer(1), buffer(2)
    try:
        with open_buffer(p.a) as fa, open_buffer(p.b) as fb:
            ranges = job.ranges
            if requested == "auto" and job.n_bytes <= NARROW_MAX_BYTES:
                ranges = narrow(fa, fb, job, buf_a, buf_b)
            engine = choose_engine(requested, sum(e - s for s, e in ranges))
            for start, end in ranges:
                for off in range(start, end, READ_SIZE):
                    n = min(READ_SIZE, end - off)
                    va = fa.read_into(buf_a[:n], off)
                    vb = fb.read_into(buf_b[:n], off)
                    if not spans and not rows:
                        piece = scan_bytes(va, vb, dt, tol, engine)
                        stats = stats.merged(piece.shifted(off // w))
                        continue
                    for lo, hi, field in _split(off, off + n, spans):
                        piece = scan_bytes(
                            va[lo - off : hi - off], vb[lo - off : hi - off], dt, tol, engine,
                            row_size=rows, origin=lo // w,
                        ).shifted(lo // w)  # fmt: skip
                        stats = stats.merged(piece)
                        if field >= 0:
                            field_stats[field] = field_stats[field].merged(piece)
            first = first_index(stats)
            if first is None:
                if job.must_differ:
                    # The digests differed, yet the bytes now agree: the file
                    # moved under us between hashing and scanning.
                    raise FileChanged(CHANGED, p.a.path)
                return ScanOutcome(p.step, p.name, stats=stats, engine=engine)
            raw_a = fa.read_at(first * w, w)
            raw_b = fb.read_at(first * w, w)
    except OSError as exc:
        path = getattr(exc, "filename", None) or p.a.path
        kind = getattr(exc, "kind", None) or "unreadable"
        problem = Problem(path, describe_os_error(exc), kind)
        return ScanOutcome(p.step, p.name, problem=problem)
    return ScanOutcome(
        p.step,
        p.name,
        stats=stats,
        a=decode(dt, raw_a),
        b=decode(dt, raw_b),
        a_bits=bits_hex(dt, raw_a),
        b_bits=bits_hex(dt, raw_b),
        engine=engine,
        field_stats=tuple(field_stats),
        rounding_ulp=tol.rounding_ulp,
    )


def scan_batch(jobs: Sequence[ScanJob], tol: Tolerance, requested: str) -> list[ScanOutcome]:
    """Scan several jobs (one pool task)."""
    return [scan_job(j, j.tolerance or tol, requested) for j in jobs]


def outcome_result(p: Pair, out: ScanOutcome) -> BufferResult:
    """A scanned pair's result: its status and facts (``model.facts``)."""
    assert p.a is not None and p.b is not None
    dt = get_dtype(p.dtype)
    n_a, n_b = p.a.size // dt.itemsize, p.b.size // dt.itemsize
    if out.problem is not None:
        status = "malformed" if out.problem.kind == "malformed" else "error"
        return p.result(status, n_elements_a=n_a, n_elements_b=n_b, message=out.problem.message)
    s = out.stats
    assert s is not None
    if n_a != n_b:
        status = "length_mismatch"
    elif s.n_diff:
        status = "diverged"
    else:
        status = "within_tolerance"
    n = min(n_a, n_b)
    layout = p.layout
    context = Context(
        n,
        dt.kind,
        shape=layout.resolve(n) if layout is not None else None,
        fields=tuple((f.name, f.start, f.stop) for f in layout.fields) if layout else (),
        field_stats=out.field_stats,
        rounding_ulp=out.rounding_ulp,
    )
    facts = result_facts(s, context, a=out.a, b=out.b, a_bits=out.a_bits, b_bits=out.b_bits)
    return p.result(status, n_elements_a=n_a, n_elements_b=n_b, facts=facts)
