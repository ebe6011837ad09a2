"""How fast this machine compares dumps: a ladder of sizes, timed in-process.

``plan_bench`` turns a request into a plan (``model.bench.BenchPlan``): the
ladder of buffer sizes (4 KiB, x4 at each rung, up to the largest size that
free memory and disk allow), the ``jobs`` values (1, 2, 4, ... up to the
cores), and optionally a run shaped like a real one (``like_shape``: same
file names, dtypes and sizes, scaled). ``run_bench`` writes synthetic dumps
(``synth``) into a temporary folder, one rung at a time, and times with
``timing.time_calls``:

- fastdiff: one library call ``compare_runs(A, B, CompareOptions(...))``
  per sample, in this process, so neither the interpreter start nor the
  imports are counted (a CLI run pays those once);
- the floor: the faster (lower median) of two ways to read both runs once,
  each timed in the same rounds, interleaved: a plain ``readinto`` loop into
  a reused page-aligned buffer, and xxh3 over a memory map of each file,
  the files dealt out to as many threads as the largest ``jobs`` value
  (``floor_kind`` says which won).

Each rung is measured twice: the runs identical, then with one element of
B flipped near the end (``synth.late_offset``). Inputs are read once right
before timing, since this kind of VM drops files idle for a minute from the
page cache. The plan and the results are values of ``model.bench``;
``render.bench`` says them in text and JSON (``plot`` draws them).
"""

from __future__ import annotations

import math
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..dtypes import get_dtype
from ..engine.pool import SERIAL_MAX_BYTES
from ..errors import FastdiffError
from ..model.bench import (
    LADDER_DTYPE,
    LADDER_NAME,
    BenchCase,
    BenchNoteKind,
    BenchPlan,
    BenchResult,
    BenchShape,
    FloorKind,
    LikeFile,
    LikeShape,
    Machine,
    Measurement,
    Timing,
    noisy_load,
)
from ..model.findings import Note
from ..model.statuses import Verdict
from ..presets import DEFAULT_PRESET, preset
from ..schema import Schema
from ..sources import open_run
from ..textkit.fmt import format_bytes
from . import synth, timing

if TYPE_CHECKING:
    from ..compare import CompareOptions

MIN_SIZE = 4 << 10
DEFAULT_MAX_SIZE = 1 << 30
LADDER_FACTOR = 4
LADDER_SCHEMA = Schema("bench", (), default_dtype=LADDER_DTYPE)
#: A sample of a quick call loops it until the sample takes this long.
MIN_SAMPLE_S = 0.01
#: Of free memory and of free disk, at most this share is used for dumps.
BUDGET_SHARE = 0.5


# --- the plan ----------------------------------------------------------------


def ladder(max_size: int, min_size: int = MIN_SIZE, factor: int = LADDER_FACTOR) -> tuple[int, ...]:
    """4 KiB, 16 KiB, ... below ``max_size``, then ``max_size`` itself."""
    if max_size < min_size:
        return ()
    sizes = []
    size = min_size
    while size < max_size:
        sizes.append(size)
        size *= factor
    sizes.append(max_size)
    return tuple(sizes)


def jobs_ladder(max_jobs: int) -> tuple[int, ...]:
    """1, 2, 4, ... below ``max_jobs``, then ``max_jobs``."""
    out = []
    j = 1
    while j < max_jobs:
        out.append(j)
        j *= 2
    out.append(max_jobs)
    return tuple(out)


def memory_available(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable in bytes, or None where the kernel does not say."""
    try:
        with open(meminfo, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def like_shape(run: str, schema: Schema | None) -> tuple[LikeShape, Schema]:
    """The file list of a real run (folder or manifest), unscaled, and the
    schema that reads it: ``schema``, else the one a manifest records, else
    rl-state (as compare chooses)."""
    from ..sources.schemas import choose_schema

    src = open_run(run)
    if not src.listing.readable:
        problem = src.listing.errors[0]
        raise FastdiffError(f"--like {run}: {problem.message}")
    if not src.listing.files:
        raise FastdiffError(
            f"--like {run}: no step_<N>_<name>.bin dumps in it; give a run folder that holds "
            "dumps, or a manifest written by 'fastdiff hash'"
        )
    chosen, _ = choose_schema((src,), schema)
    files = tuple(
        LikeFile(f.step, f.name, chosen.classify(f.name)[1], f.size)
        for f in sorted(src.listing.files, key=lambda f: (f.step, f.name))
    )
    total = sum(f.size for f in files)
    return LikeShape(run, files, 1.0, total), chosen


def scale_shape(shape: LikeShape, scale: float) -> LikeShape:
    """Sizes times ``scale``, rounded down to whole elements (a non-empty file
    keeps at least one element)."""
    files = []
    for f in shape.files:
        itemsize = get_dtype(f.dtype).itemsize
        n = math.floor(f.size * scale) // itemsize * itemsize
        if f.size and not n:
            n = itemsize
        files.append(f.replace(size=n))
    return shape.replace(files=tuple(files), scale=scale)


_MIN_SCALE = 1e-9


def _round_down(n: int) -> int:
    """To a whole MiB above 1 MiB, else to 4 KiB."""
    unit = 1 << 20 if n >= 1 << 20 else 4 << 10
    return n // unit * unit


def plan_bench(
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    jobs: int | None = None,
    executor: str = "auto",
    chunk_size: int | None = None,
    repeat: int = 5,
    warmup: int = 1,
    workdir: str | None = None,
    keep: bool = False,
    like: str | None = None,
    scale: float = 1.0,
    ladder_on: bool = True,
    schema: Schema | None = None,
    checkpoint: int = 0,
    mem_available: int | Literal["probe"] | None = "probe",
    disk_free: int | None = None,
) -> tuple[BenchPlan, Schema]:
    """Check a request and fit it to this machine (raises FastdiffError);
    return the plan and the schema that reads the like run (``schema``,
    else the one a --like manifest records, else rl-state; the plan holds
    its name).

    A pair of runs must fit in half of the available memory (so both stay
    in the page cache) and in half of the free disk; with ``keep``, every
    rung's pair stays on disk. ``max_size`` and the like run's ``scale``
    are lowered until they fit, and ``notes`` says so.
    """
    from ..engine.pool import default_jobs
    from ..options import DEFAULT_CHUNK_SIZE, EXECUTORS, check_chunk_size

    if max_size < MIN_SIZE and ladder_on:
        raise FastdiffError(
            f"--max-size {max_size}: must be at least 4K, the smallest rung of the ladder"
        )
    if repeat < 1 or warmup < 0:
        raise FastdiffError(f"--repeat must be >= 1 and --warmup >= 0, got {repeat}, {warmup}")
    if not (scale > 0 and math.isfinite(scale)):
        raise FastdiffError(f"--scale must be a finite number > 0, got {scale}")
    if executor not in EXECUTORS:
        raise FastdiffError(f"--executor {executor!r}: use one of {', '.join(EXECUTORS)}")
    if jobs is not None and jobs < 1:
        raise FastdiffError(f"--jobs must be >= 1, got {jobs}")
    chunk = DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size
    try:
        check_chunk_size(chunk)
    except ValueError as exc:
        raise FastdiffError(str(exc)) from None
    if not ladder_on and like is None and not checkpoint:
        raise FastdiffError(
            "--no-ladder leaves nothing to measure; add --like RUN or --checkpoint BYTES"
        )
    if checkpoint < 0:
        raise FastdiffError(f"--checkpoint must be >= 0 bytes, got {checkpoint}")
    # Checked before anything is made: not even a temporary folder may appear
    # (and move the run folder's times) in a run folder. Without --workdir,
    # the variables tempfile reads are checked before gettempdir, which tries
    # each candidate by writing a file into it.
    from ..sources import refuse_run_folder

    fix = "give a --workdir outside it"
    runs = (like,) if like is not None else ()
    if not workdir:
        for var in ("TMPDIR", "TEMP", "TMP"):
            value = os.environ.get(var)
            if value:
                refuse_run_folder(value, f"{var}={value}", runs, fix)
    folder = workdir or tempfile.gettempdir()
    where_from = "--workdir" if workdir else "the temporary folder"
    # Any folder that holds dumps is a run folder, the --like run's or not.
    refuse_run_folder(folder, f"{where_from} {folder}", runs, fix)
    if not os.path.isdir(folder):
        raise FastdiffError(f"--workdir {folder}: not a folder; create it or give another")

    mem = memory_available() if mem_available == "probe" else mem_available
    disk = shutil.disk_usage(folder).free if disk_free is None else disk_free
    mem_budget = math.inf if mem is None else mem * BUDGET_SHARE
    disk_budget = disk * BUDGET_SHARE
    where = (
        f"{format_bytes(mem)} of memory available and " if mem is not None else ""
    ) + f"{format_bytes(disk)} free in {folder}"
    room_fields = {"memory": mem, "disk": disk, "folder": folder}
    notes: list[Note] = []

    shape = None
    if like is not None:
        shape, schema = like_shape(like, schema)
        scaled = scale_shape(shape, scale)
        budget = min(mem_budget, disk_budget)
        if 2 * scaled.bytes > budget:
            smallest = scale_shape(shape, _MIN_SCALE)  # one element per non-empty file
            if 2 * smallest.bytes > budget:
                raise FastdiffError(
                    f"--like {like}: even one element per file does not fit ({where})"
                )
            fit = float(f"{scale * budget / (2 * scaled.bytes):.3g}")
            while fit > _MIN_SCALE and 2 * scale_shape(shape, fit).bytes > budget:
                fit = float(f"{fit * 0.9:.3g}")
            fit = max(fit, _MIN_SCALE)
            notes.append(
                Note.of(
                    BenchNoteKind.SCALE_LOWERED,
                    requested=scale,
                    scale=fit,
                    like=like,
                    bytes=2 * scaled.bytes,
                    **room_fields,
                )
            )
            scaled = scale_shape(shape, fit)
        shape = scaled

    if checkpoint and 2 * checkpoint > min(mem_budget, disk_budget):
        raise FastdiffError(
            f"--checkpoint {format_bytes(checkpoint)}: a pair must fit in half of {where}"
        )

    sizes: tuple[int, ...] = ()
    size = _round_down(max_size) if max_size >= MIN_SIZE else 0
    if ladder_on:
        kept_like = 2 * shape.bytes if shape is not None and keep else 0

        def fits(s: int) -> bool:
            on_disk = 2 * (sum(ladder(s)) if keep else s) + kept_like
            return 2 * s <= mem_budget and on_disk <= disk_budget

        if size != max_size:
            notes.append(Note.of(BenchNoteKind.MAX_SIZE_ROUNDED, requested=max_size, size=size))
        room = min(mem_budget, disk_budget - kept_like) / 2
        lowered = size if fits(size) else _round_down(int(min(size, room)))
        while lowered >= MIN_SIZE and not fits(lowered):
            lowered = _round_down(int(lowered * 0.9))
        if lowered < MIN_SIZE:
            raise FastdiffError(
                f"not enough room for even a 4 KiB pair ({where}); free some, or use --workdir"
            )
        if lowered != size:
            notes.append(
                Note.of(
                    BenchNoteKind.MAX_SIZE_LOWERED,
                    requested=max_size,
                    size=lowered,
                    keep=keep,
                    **room_fields,
                )
            )
        size = lowered
        sizes = ladder(size)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    cpus = os.cpu_count()
    if load is not None and noisy_load(load, cpus):
        notes.append(Note.of(BenchNoteKind.NOISY_LOAD, load=load, cpus=cpus))
    jobs_list = jobs_ladder(jobs or default_jobs())
    if executor == "serial" and jobs_list != (1,):
        notes.append(Note.of(BenchNoteKind.SERIAL_ONE_JOB))
        jobs_list = (1,)
    chosen = schema if schema is not None else preset(DEFAULT_PRESET)
    plan = BenchPlan(
        sizes=sizes,
        jobs=jobs_list,
        executor=executor,
        chunk_size=chunk,
        repeat=repeat,
        warmup=warmup,
        workdir=folder,
        keep=keep,
        max_size_requested=max_size,
        max_size=size if ladder_on else 0,
        like=shape,
        checkpoint=checkpoint,
        scale_requested=scale if like is not None else None,
        schema=chosen.name,
        memory_available=mem,
        disk_free=disk,
        notes=tuple(notes),
        serial_max_bytes=SERIAL_MAX_BYTES,
    )
    return plan, chosen


# --- running -----------------------------------------------------------------


def _options(plan: BenchPlan, schema: Schema | None, jobs: int) -> CompareOptions:
    from ..compare import CompareOptions

    return CompareOptions(
        schema=schema, chunk_size=plan.chunk_size, executor=plan.executor, jobs=jobs
    )


def _measure(
    plan: BenchPlan,
    shape: BenchShape,
    case: BenchCase,
    run_a: Path,
    run_b: Path,
    paths: Sequence[Path],
    schema: Schema | None,
    buf: memoryview,
) -> list[Measurement]:
    """Check, then time fastdiff at every jobs value and both floors, interleaved."""
    from ..compare import compare_runs

    expected = Verdict.IDENTICAL if case is BenchCase.IDENTICAL else Verdict.DIVERGED
    total = sum(p.stat().st_size for p in paths)
    size, files = total // 2, len(paths) // 2
    threads = max(plan.jobs)
    floors: dict[FloorKind, Callable[[], int]] = {
        FloorKind.READINTO: lambda: timing.read_once(paths, buf),
        FloorKind.MMAP_XXH3: lambda: timing.hash_once(paths, threads),
    }
    for kind, floor_call in floors.items():  # the first also fills the page cache
        read = floor_call()
        if read != total:
            raise FastdiffError(
                f"bench: the {kind} floor read {read} bytes of {run_a} and {run_b}, not {total}"
            )
    calls: dict[str, Callable[[], object]] = {f"floor {k}": f for k, f in floors.items()}
    # jobs values that run alike are one configuration, timed once: (what ran, jobs) ->
    # the jobs values; in this thread, the jobs value makes no difference.
    alike: dict[tuple[str, int], list[int]] = {}
    for jobs in plan.jobs:
        opts = _options(plan, schema, jobs)
        report = compare_runs(run_a, run_b, opts)  # the check run, also a warm-up
        if report.verdict != expected:
            problems = "; ".join(f"{e.path}: {e.message}" for e in report.errors[:3])
            raise FastdiffError(
                f"bench: compare_runs said {report.verdict} on the {case} pair {run_a} "
                f"{run_b} (expected {expected}){': ' + problems if problems else ''}"
            )
        ran = ran_on(report.work.executor, jobs)
        key = (ran, 0 if ran == "serial" else jobs)
        if key in alike:
            alike[key].append(jobs)
            continue
        alike[key] = [jobs]
        calls[f"jobs {jobs}"] = partial(compare_runs, run_a, run_b, opts)
    loops = {name: timing.autorange(fn, MIN_SAMPLE_S) for name, fn in calls.items()}
    timing.read_once(paths, buf)
    times = timing.time_calls(calls, plan.repeat, plan.warmup, loops)

    def result(name: str) -> Timing:
        return Timing(timing.median(times[name]), tuple(times[name]), loops[name])

    candidates = tuple((k, timing.median(times[f"floor {k}"])) for k in floors)
    best = min(candidates, key=lambda c: c[1])[0]
    floor = result(f"floor {best}")
    return [
        Measurement(
            shape=shape,
            case=case,
            size=size,
            files=files,
            jobs=values[0],
            jobs_values=tuple(values),
            executor=ran,
            fastdiff=result(f"jobs {values[0]}"),
            floor=floor,
            floor_kind=best,
            floor_candidates=candidates,
        )
        for (ran, _), values in alike.items()
    ]


def ran_on(kind: str, jobs: int) -> str:
    """What a comparison ran on, from the executor kind it names (``Work.executor``):
    one job runs in this thread, unless in a process pool (as ``engine.pool.open_runner``)."""
    return "serial" if jobs <= 1 and kind == "thread" else kind


def _settle() -> None:
    """Write dirty pages out now, so that write-back does not run during timing."""
    if hasattr(os, "sync"):
        os.sync()


def probe_machine() -> Machine:
    """This machine: its CPUs, the jobs this process may use, the interpreter,
    the platform and the load average now."""
    from ..engine.pool import default_jobs

    try:
        load: float | None = os.getloadavg()[0]
    except OSError:  # pragma: no cover - not Unix
        load = None
    return Machine(
        cpus=os.cpu_count(),
        jobs_available=default_jobs(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        platform=platform.platform(),
        load_average=load,
    )


def run_bench(
    plan: BenchPlan, schema: Schema, progress: Callable[[str], None] | None = None
) -> BenchResult:
    """Write the dumps, time every case, remove the dumps (unless ``plan.keep``);
    ``schema`` reads the like run (``plan_bench`` chose it)."""
    say = progress or (lambda _msg: None)
    machine = probe_machine()
    t0 = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="fastdiff-bench-", dir=plan.workdir))
    out: list[Measurement] = []
    buf = timing.aligned_buffer()
    steps = len(plan.sizes) + (plan.like is not None) + bool(plan.checkpoint)
    try:
        for i, size in enumerate(plan.sizes, 1):
            folder = root / f"size-{size}"
            a, b = folder / "a", folder / "b"
            say(f"[{i}/{steps}] {format_bytes(size)}: writing a pair")
            pa, pb = synth.write_pair(a, b, LADDER_NAME, LADDER_DTYPE, size)
            _settle()
            say(f"[{i}/{steps}] {format_bytes(size)}: timing identical runs")
            out += _measure(
                plan, BenchShape.LADDER, BenchCase.IDENTICAL, a, b, [pa, pb], LADDER_SCHEMA, buf
            )
            itemsize = get_dtype(LADDER_DTYPE).itemsize
            synth.flip_element(pb, synth.late_offset(size, itemsize), LADDER_DTYPE)
            say(f"[{i}/{steps}] {format_bytes(size)}: timing a late difference")
            out += _measure(
                plan, BenchShape.LADDER, BenchCase.LATE_DIFF, a, b, [pa, pb], LADDER_SCHEMA, buf
            )
            if not plan.keep:
                shutil.rmtree(folder)
        if plan.like is not None:
            out += _bench_like(plan, schema, plan.like, root / "like", steps, say, buf)
        if plan.checkpoint:
            out += _bench_checkpoint(plan, root / "checkpoint", steps, say, buf)
    finally:
        if not plan.keep:
            shutil.rmtree(root, ignore_errors=True)
    return BenchResult(plan, machine, tuple(out), str(root), plan.keep, time.perf_counter() - t0)


def _bench_like(
    plan: BenchPlan,
    schema: Schema,
    shape: LikeShape,
    folder: Path,
    steps: int,
    say: Callable[[str], None],
    buf: memoryview,
) -> list[Measurement]:
    a, b = folder / "a", folder / "b"
    spec = [(f.step, f.name, f.dtype, f.size) for f in shape.files]
    label = f"[{steps}/{steps}] like {shape.run} x{shape.scale:g}"
    say(f"{label}: writing {len(spec)} files per run")
    paths_a = synth.write_files(a, spec)
    paths_b = synth.write_files(b, spec)
    _settle()
    paths = [*paths_a, *paths_b]
    say(f"{label}: timing identical runs")
    out = _measure(plan, BenchShape.LIKE, BenchCase.IDENTICAL, a, b, paths, schema, buf)
    # The difference goes near the end of the last step's largest file.
    last = max(shape.files, key=lambda f: (f.step, f.size))
    if last.size:
        itemsize = get_dtype(last.dtype).itemsize
        target = b / synth.dump_name(last.step, last.name)
        synth.flip_element(target, synth.late_offset(last.size, itemsize), last.dtype)
        say(f"{label}: timing a late difference")
        out += _measure(plan, BenchShape.LIKE, BenchCase.LATE_DIFF, a, b, paths, schema, buf)
    return out


def _bench_checkpoint(
    plan: BenchPlan, folder: Path, steps: int, say: Callable[[str], None], buf: memoryview
) -> list[Measurement]:
    """A synthetic safetensors checkpoint pair (``synth.write_checkpoint_pair``),
    identical, then with one element of its last tensor different."""
    label = f"[{steps}/{steps}] checkpoint {format_bytes(plan.checkpoint)}"
    say(f"{label}: writing a pair of model.safetensors")
    a, b = synth.write_checkpoint_pair(folder / "a", folder / "b", plan.checkpoint)
    _settle()
    say(f"{label}: timing identical checkpoints")
    out = _measure(plan, BenchShape.CHECKPOINT, BenchCase.IDENTICAL, a, b, [a, b], None, buf)
    synth.flip_element(b, synth.late_offset(os.path.getsize(b), 4), "f32")
    say(f"{label}: timing a late difference")
    out += _measure(plan, BenchShape.CHECKPOINT, BenchCase.LATE_DIFF, a, b, [a, b], None, buf)
    return out
