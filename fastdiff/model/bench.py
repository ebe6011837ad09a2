"""``fastdiff bench``'s plan and results: values, and the kinds they hold.

``BenchPlan`` is what ``bench.run.plan_bench`` made of a request, fitted to
this machine (the ladder of sizes, the jobs values, a run shaped like a
real one, ``LikeShape``, and ``notes`` on what was lowered, and why);
``BenchResult`` is what ``bench.run.run_bench`` measured: a ``Measurement``
per case and way fastdiff ran (``Timing``\\ s of fastdiff and of the floor),
on a ``Machine``. ``render.bench`` puts them into words and JSON.

The kinds are enum-like members (``statuses.Member``: each one the string
the JSON writes): ``BenchShape`` (what was timed), ``BenchCase`` (identical,
or with a late difference), ``FloorKind`` (which way of reading both runs
was the faster) and ``BenchNoteKind``. A note is a ``findings.Note`` whose
kind is a ``BenchNoteKind``; its fields are named where each kind is made.
"""

from __future__ import annotations

from .statuses import Member
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar

    from .findings import Note

__all__ = [
    "BENCH_SCHEMA_VERSION",
    "LADDER_DTYPE",
    "LADDER_NAME",
    "NOISY_LOAD_PER_CPU",
    "BenchCase",
    "BenchNoteKind",
    "BenchPlan",
    "BenchResult",
    "BenchShape",
    "FloorKind",
    "LikeFile",
    "LikeShape",
    "Machine",
    "Measurement",
    "Timing",
    "noisy_load",
]

#: 3: jobs values that run alike are one result (``jobs_values``); 2: the floor
#: is the faster of two ways to read the runs (``floor_kind``,
#: ``floor_candidates``); version 1's was the readinto loop alone.
BENCH_SCHEMA_VERSION = 3

#: Element type and buffer name of the ladder's dumps (one file per run).
LADDER_DTYPE = "f32"
LADDER_NAME = "buffer"

#: A load average above this per CPU means other work is running: timings are noisy.
NOISY_LOAD_PER_CPU = 0.5


def noisy_load(load: float | None, cpus: int | None) -> bool:
    """Whether a load average says other work is running (over
    ``NOISY_LOAD_PER_CPU`` per CPU): timings taken now are noisy."""
    return load is not None and load > NOISY_LOAD_PER_CPU * (cpus or 1)


class BenchShape(Member):
    """What a measurement timed."""

    __slots__ = ()
    LADDER: ClassVar[BenchShape]
    LIKE: ClassVar[BenchShape]
    CHECKPOINT: ClassVar[BenchShape]


BenchShape.LADDER = BenchShape("ladder")  # one buffer per run, a rung of the ladder of sizes
BenchShape.LIKE = BenchShape("like")  # the files of a real run (--like), scaled
BenchShape.CHECKPOINT = BenchShape("checkpoint")  # a synthetic safetensors checkpoint


class BenchCase(Member):
    """The pair of runs a measurement compared."""

    __slots__ = ()
    IDENTICAL: ClassVar[BenchCase]
    LATE_DIFF: ClassVar[BenchCase]


BenchCase.IDENTICAL = BenchCase("identical")
BenchCase.LATE_DIFF = BenchCase("late-diff")  # one element of B flipped near the end


class FloorKind(Member):
    """A way of reading both runs once: the floor a comparison is measured against."""

    __slots__ = ()
    READINTO: ClassVar[FloorKind]
    MMAP_XXH3: ClassVar[FloorKind]


FloorKind.READINTO = FloorKind("readinto")  # a readinto loop into a reused aligned buffer
FloorKind.MMAP_XXH3 = FloorKind("mmap+xxh3")  # xxh3 over a memory map, files dealt to threads


class BenchNoteKind(Member):
    """What a note of a bench plan says (``BenchPlan.notes``; its words are
    ``render.bench``'s)."""

    __slots__ = ()
    SCALE_LOWERED: ClassVar[BenchNoteKind]
    MAX_SIZE_ROUNDED: ClassVar[BenchNoteKind]
    MAX_SIZE_LOWERED: ClassVar[BenchNoteKind]
    NOISY_LOAD: ClassVar[BenchNoteKind]
    SERIAL_ONE_JOB: ClassVar[BenchNoteKind]


# The room a note names: memory (None: unknown), disk, folder, in bytes and a path.
# requested, scale, like, bytes (of the pair at the requested scale), memory, disk, folder
BenchNoteKind.SCALE_LOWERED = BenchNoteKind("scale_lowered")
BenchNoteKind.MAX_SIZE_ROUNDED = BenchNoteKind("max_size_rounded")  # requested, size
# requested, size, memory, disk, folder, keep
BenchNoteKind.MAX_SIZE_LOWERED = BenchNoteKind("max_size_lowered")
BenchNoteKind.NOISY_LOAD = BenchNoteKind("noisy_load")  # load, cpus
BenchNoteKind.SERIAL_ONE_JOB = BenchNoteKind("serial_one_job")  # (no fields)


# --- the plan ----------------------------------------------------------------


class LikeFile(Value):
    """One file of a run shaped like a real one."""

    __slots__ = ("dtype", "name", "size", "step")

    def __init__(self, step: int, name: str, dtype: str, size: int) -> None:
        self.step = step
        self.name = name
        self.dtype = dtype
        self.size = size


class LikeShape(Value):
    """A run's file list, sizes scaled (and rounded down to whole elements)."""

    __slots__ = ("files", "run", "scale", "source_bytes")

    def __init__(
        self, run: str, files: tuple[LikeFile, ...], scale: float, source_bytes: int
    ) -> None:
        self.run = run
        self.files = files
        self.scale = scale
        self.source_bytes = source_bytes  # the real run's bytes

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


class BenchPlan(Value):
    """A request fitted to this machine.

    ``sizes``: the ladder's rungs, bytes per file (() without the ladder);
    ``workdir``: where the temporary folder is made; ``like``: the run
    shaped like a real one (None: none); ``checkpoint``: bytes of the
    synthetic safetensors checkpoint (0: none); ``schema``: the name of the
    schema that classifies and compares the like run; ``notes``: what was
    lowered, and why (``Note``\\ s of ``BenchNoteKind``);
    ``serial_max_bytes``: below this many bytes, executor auto hashes in
    this thread.
    """

    __slots__ = (
        "checkpoint",
        "chunk_size",
        "disk_free",
        "executor",
        "jobs",
        "keep",
        "like",
        "max_size",
        "max_size_requested",
        "memory_available",
        "notes",
        "repeat",
        "scale_requested",
        "schema",
        "serial_max_bytes",
        "sizes",
        "warmup",
        "workdir",
    )

    def __init__(
        self,
        sizes: tuple[int, ...],
        jobs: tuple[int, ...],
        executor: str,
        chunk_size: int,
        repeat: int,
        warmup: int,
        workdir: str,
        keep: bool,
        max_size_requested: int,
        max_size: int,
        like: LikeShape | None,
        checkpoint: int,
        scale_requested: float | None,
        schema: str,
        memory_available: int | None,
        disk_free: int,
        notes: tuple[Note, ...],
        serial_max_bytes: int,
    ) -> None:
        self.sizes = sizes
        self.jobs = jobs
        self.executor = executor
        self.chunk_size = chunk_size
        self.repeat = repeat
        self.warmup = warmup
        self.workdir = workdir
        self.keep = keep
        self.max_size_requested = max_size_requested
        self.max_size = max_size
        self.like = like
        self.checkpoint = checkpoint
        self.scale_requested = scale_requested
        self.schema = schema
        self.memory_available = memory_available
        self.disk_free = disk_free
        self.notes = notes
        self.serial_max_bytes = serial_max_bytes


# --- results -----------------------------------------------------------------


class Timing(Value):
    """The samples of one timed call: ``seconds``, their median, per call;
    ``times``, every sample, per call; ``loops``, calls per sample."""

    __slots__ = ("loops", "seconds", "times")

    def __init__(self, seconds: float, times: tuple[float, ...], loops: int) -> None:
        self.seconds = seconds
        self.times = times
        self.loops = loops


class Measurement(Value):
    """One case, timed one way fastdiff ran, against its floor.

    ``size``: bytes per run (one file per run on the ladder); ``files``:
    files per run; ``jobs``: the jobs value timed, the first of
    ``jobs_values``, the plan's jobs values that ran alike; ``executor``:
    what ``compare_runs`` ran on (serial, thread or process); ``floor``:
    the faster of ``floor_candidates`` ((kind, median s) of each), of kind
    ``floor_kind``.
    """

    __slots__ = (
        "case",
        "executor",
        "fastdiff",
        "files",
        "floor",
        "floor_candidates",
        "floor_kind",
        "jobs",
        "jobs_values",
        "shape",
        "size",
    )

    def __init__(
        self,
        shape: BenchShape,
        case: BenchCase,
        size: int,
        files: int,
        jobs: int,
        jobs_values: tuple[int, ...],
        executor: str,
        fastdiff: Timing,
        floor: Timing,
        floor_kind: FloorKind,
        floor_candidates: tuple[tuple[FloorKind, float], ...],
    ) -> None:
        self.shape = shape
        self.case = case
        self.size = size
        self.files = files
        self.jobs = jobs
        self.jobs_values = jobs_values
        self.executor = executor
        self.fastdiff = fastdiff
        self.floor = floor
        self.floor_kind = floor_kind
        self.floor_candidates = floor_candidates

    @property
    def bytes(self) -> int:
        """Both runs, A + B."""
        return 2 * self.size

    @property
    def gbs(self) -> float:
        return self.bytes / self.fastdiff.seconds / 1e9

    @property
    def floor_gbs(self) -> float:
        return self.bytes / self.floor.seconds / 1e9

    @property
    def ratio(self) -> float:
        """fastdiff time over the floor's: 1.0 is as fast as reading both runs."""
        return self.fastdiff.seconds / self.floor.seconds


class Machine(Value):
    """Where it ran: CPUs (None: unknown), the jobs this process may use,
    the interpreter, the platform, the load average at the start (None:
    unknown)."""

    __slots__ = ("cpus", "jobs_available", "load_average", "platform", "python")

    def __init__(
        self,
        cpus: int | None,
        jobs_available: int,
        python: str,
        platform: str,
        load_average: float | None,
    ) -> None:
        self.cpus = cpus
        self.jobs_available = jobs_available
        self.python = python
        self.platform = platform
        self.load_average = load_average


class BenchResult(Value):
    """A whole benchmark: its plan, the machine, every measurement,
    ``folder`` where the dumps were written (``kept`` or removed), and how
    long it took."""

    __slots__ = ("elapsed_s", "folder", "kept", "machine", "measurements", "plan")

    def __init__(
        self,
        plan: BenchPlan,
        machine: Machine,
        measurements: tuple[Measurement, ...],
        folder: str,
        kept: bool,
        elapsed_s: float,
    ) -> None:
        self.plan = plan
        self.machine = machine
        self.measurements = measurements
        self.folder = folder
        self.kept = kept
        self.elapsed_s = elapsed_s
