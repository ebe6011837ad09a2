"""Renderers of ``fastdiff bench``: pure functions from a ``model.bench.BenchResult``
to text or JSON, and the words of a bench plan's notes.

``render_bench_text`` is the method, in sentences, then a markdown table;
``render_bench_json`` one object with every sample (``bench_dict``; its
version is ``model.bench.BENCH_SCHEMA_VERSION``). ``note_text`` says a note
of ``BenchNoteKind`` in one line (the CLI prints it on stderr at the start,
and the report repeats it).
"""

from __future__ import annotations

import json

from ..model.bench import BENCH_SCHEMA_VERSION, LADDER_DTYPE, BenchNoteKind, BenchShape
from ..textkit.fmt import format_bytes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..model.bench import BenchPlan, BenchResult, Measurement
    from ..model.findings import Note

__all__ = [
    "ALIKE",
    "FLOOR",
    "GBS",
    "LATE",
    "METHOD",
    "STATISTIC",
    "bench_dict",
    "format_seconds",
    "format_size",
    "jobs_label",
    "measurement_dict",
    "note_text",
    "plan_dict",
    "render_bench_json",
    "render_bench_text",
]

METHOD = (
    "fastdiff: one in-process library call per sample, "
    "fastdiff.compare.compare_runs(A, B, CompareOptions(executor=..., jobs=N)), without "
    "the digest cache; not counted: the interpreter start and the imports that a CLI run "
    "pays once (numpy and numba load only when a pair differs)"
)
FLOOR = (
    "floor: the faster (lower median) of two ways of reading both runs once, timed in the "
    "same rounds: readinto, a plain readinto loop into a reused page-aligned 1 MiB buffer, "
    "one thread; mmap+xxh3, xxh3_64 over a memory map of each file, the files dealt out to "
    "as many threads as the largest jobs value"
)
STATISTIC = (
    "per case: a check run, a calibration (a sample of a quick call times a loop of calls), "
    "{warmup} untimed round(s), then the median of {repeat} samples taken in interleaved "
    "rounds (each floor and each jobs value once per round)"
)
GBS = "GB/s: 10^9 bytes of both runs (A + B) per second; x floor: fastdiff time / floor time"
ALIKE = (
    "one row per way fastdiff ran: jobs values that ran alike, in this thread (executor auto "
    "below {threshold} to hash in all, or one job), were timed once, as one row (jobs 1-2, "
    "serial)"
)
LATE = (
    "late-diff: one element of B has its lowest bit flipped 4 KiB before the end of "
    "the file (the last element below 8 KiB); on a like run, in the last step's largest file"
)


def format_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.0f} µs"


def format_size(n: int) -> str:
    """``4 KiB``, ``1.5 MiB``: binary units, no trailing ``.0``."""
    return format_bytes(n).replace(".0 ", " ")


def jobs_label(m: Measurement) -> str:
    """``2``, or ``1-4`` for jobs values 1, 2 and 4 that ran alike."""
    first, last = m.jobs_values[0], m.jobs_values[-1]
    return str(first) if first == last else f"{first}-{last}"


# --- notes -------------------------------------------------------------------


def _room(n: Note) -> str:
    """The room a pair must fit in half of: memory (when known) and disk."""
    memory = n["memory"]
    return (
        f"{format_bytes(memory)} of memory available and " if memory is not None else ""
    ) + f"{format_bytes(n['disk'])} free in {n['folder']}"


def _scale_lowered(n: Note) -> str:
    return (
        f"--scale lowered from {n['requested']:g} to {n['scale']:g}: a pair of runs like "
        f"{n['like']} ({format_bytes(n['bytes'])}) must fit in half of {_room(n)}"
    )


def _max_size_rounded(n: Note) -> str:
    return f"--max-size {n['requested']} rounded down to {n['size']} bytes"


def _max_size_lowered(n: Note) -> str:
    return (
        f"--max-size lowered from {format_bytes(n['requested'])} to {format_bytes(n['size'])}: "
        f"a pair of files must fit in half of {_room(n)}"
        + (" (with --keep, every rung's pair stays on disk)" if n["keep"] else "")
    )


def _noisy_load(n: Note) -> str:
    return (
        f"load average {n['load']:.2f} on {n['cpus']} CPUs: other work is running, "
        "timings will be noisy"
    )


def _serial_one_job(_n: Note) -> str:
    return "--executor serial runs one job: measuring jobs 1 only"


NOTE_TEXT: dict[BenchNoteKind, Callable[[Note], str]] = {
    BenchNoteKind.SCALE_LOWERED: _scale_lowered,
    BenchNoteKind.MAX_SIZE_ROUNDED: _max_size_rounded,
    BenchNoteKind.MAX_SIZE_LOWERED: _max_size_lowered,
    BenchNoteKind.NOISY_LOAD: _noisy_load,
    BenchNoteKind.SERIAL_ONE_JOB: _serial_one_job,
}


def note_text(note: Note) -> str:
    """A note of a bench plan in one line (without ``note:``)."""
    return NOTE_TEXT[note.kind](note)  # type: ignore[index]


# --- JSON --------------------------------------------------------------------


def plan_dict(plan: BenchPlan) -> dict[str, Any]:
    like = plan.like
    return {
        "sizes": list(plan.sizes),
        "max_size_requested": plan.max_size_requested,
        "max_size": plan.max_size,
        "jobs": list(plan.jobs),
        "executor": plan.executor,
        "chunk_size": plan.chunk_size,
        "repeat": plan.repeat,
        "warmup": plan.warmup,
        "dtype": LADDER_DTYPE,
        "like": None
        if like is None
        else {
            "run": like.run,
            "files": len(like.files),
            "bytes": like.bytes,
            "source_bytes": like.source_bytes,
            "scale_requested": plan.scale_requested,
            "scale": like.scale,
            "schema": plan.schema,
        },
        "checkpoint": plan.checkpoint,
        "memory_available": plan.memory_available,
        "disk_free": plan.disk_free,
        "notes": [note_text(n) for n in plan.notes],
    }


def measurement_dict(m: Measurement) -> dict[str, Any]:
    return {
        "shape": m.shape,
        "case": m.case,
        "size": m.size,
        "files": m.files,
        "bytes": m.bytes,
        "jobs": m.jobs,
        "jobs_values": list(m.jobs_values),
        "executor": m.executor,
        "seconds": m.fastdiff.seconds,
        "gbs": m.gbs,
        "times": list(m.fastdiff.times),
        "loops": m.fastdiff.loops,
        "floor_seconds": m.floor.seconds,
        "floor_gbs": m.floor_gbs,
        "floor_times": list(m.floor.times),
        "floor_loops": m.floor.loops,
        "floor_kind": m.floor_kind,
        "floor_candidates": dict(m.floor_candidates),
        "ratio_to_floor": m.ratio,
    }


def bench_dict(r: BenchResult) -> dict[str, Any]:
    mc = r.machine
    return {
        "schema_version": BENCH_SCHEMA_VERSION,
        "machine": {
            "cpus": mc.cpus,
            "jobs_available": mc.jobs_available,
            "python": mc.python,
            "platform": mc.platform,
            "load_average": mc.load_average,
        },
        "method": {
            "fastdiff": METHOD,
            "floor": FLOOR,
            "statistic": STATISTIC.format(repeat=r.plan.repeat, warmup=r.plan.warmup),
            "gbs": GBS,
            "jobs": ALIKE.format(threshold=format_size(r.plan.serial_max_bytes)),
            "late_diff": LATE,
        },
        "plan": plan_dict(r.plan),
        "folder": r.folder,
        "kept": r.kept,
        "elapsed_s": r.elapsed_s,
        "results": [measurement_dict(m) for m in r.measurements],
    }


def render_bench_json(r: BenchResult, indent: int | None = 2) -> str:
    return json.dumps(bench_dict(r), indent=indent, allow_nan=False) + "\n"


# --- text --------------------------------------------------------------------


def _shape_label(m: Measurement, plan: BenchPlan) -> str:
    if m.shape is BenchShape.LADDER:
        return format_size(m.size)
    if m.shape is BenchShape.CHECKPOINT:
        return f"checkpoint {format_size(m.size)}"
    return f"like x{plan.like.scale:g}" if plan.like else "like"


def render_bench_text(r: BenchResult, notes: bool = True) -> str:
    """The text report; ``notes``: with the plan's notes (what was lowered,
    a noisy load), which the CLI leaves out when it has just printed them
    on the terminal the report goes to."""
    mc, plan = r.machine, r.plan
    load = f", load average {mc.load_average:.2f} at start" if mc.load_average is not None else ""
    lines = [
        f"fastdiff bench: {mc.python}, {mc.cpus} CPUs ({mc.jobs_available} usable){load}; "
        f"{r.elapsed_s:.0f} s",
        METHOD + ".",
        FLOOR + ".",
        STATISTIC.format(repeat=plan.repeat, warmup=plan.warmup) + ".",
        GBS + ".",
        ALIKE.format(threshold=format_size(plan.serial_max_bytes)) + ".",
        LATE + ".",
        f"executor {plan.executor}"
        + (
            f" (in-process below {format_bytes(plan.serial_max_bytes)} to hash in all, "
            "else threads)"
            if plan.executor == "auto"
            else ""
        )
        + f"; dumps in {r.folder} ({'kept' if r.kept else 'removed'}).",
    ]
    if plan.like is not None:
        like = plan.like
        lines.append(
            f"like: {like.run}, {len(like.files)} files per run, {format_bytes(like.bytes)} "
            f"per run (x{like.scale:g} of {format_bytes(like.source_bytes)})."
        )
    lines += [f"note: {note_text(n)}" for n in plan.notes] if notes else []
    rows = [
        [
            "size", "case", "jobs", "executor", "fastdiff", "GB/s",
            "floor", "floor GB/s", "floor kind", "x floor",
        ]
    ]  # fmt: skip
    for m in r.measurements:
        rows.append(
            [
                _shape_label(m, plan),
                m.case,
                jobs_label(m),
                m.executor,
                format_seconds(m.fastdiff.seconds),
                f"{m.gbs:.2f}",
                format_seconds(m.floor.seconds),
                f"{m.floor_gbs:.2f}",
                m.floor_kind,
                f"{m.ratio:.2f}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = {0, 2, 4, 5, 6, 7, 9}

    def line(cells: list[str]) -> str:
        padded = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = ["-" * (w - 1) + ":" if i in right else "-" * w for i, w in enumerate(widths)]
    lines += ["", line(rows[0]), "| " + " | ".join(rule) + " |"]
    lines += [line(row) for row in rows[1:]]
    return "\n".join(lines) + "\n"
