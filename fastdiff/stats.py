"""How big a run's dumps are: per step and group, totals, largest buffers, gaps.

``run_stats`` is a pure function from a run listing (a folder's, or a
manifest's) and a schema to a ``RunStats``: nothing is opened or read, only
the sizes that discovery saw. ``render_stats_text`` and ``render_stats_json``
are pure functions from a ``RunStats`` to text, like ``render``'s. Neither
numpy nor numba is imported here.

A file whose size is not a whole number of its dtype's elements is counted
in files and bytes, listed under ``malformed``, and adds no elements.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from .dtypes import DTYPES, get_dtype
from .errors import FastdiffError
from .render import path_record, plural
from .results import Problem, Skipped
from .schema import OTHER_GROUP, Schema
from .sources import open_run
from .sources.schemas import choose_schema
from .stages.discover import DumpFile, RunListing, display_path

STATS_SCHEMA_VERSION = 1
DEFAULT_TOP = 10

_DTYPE_ORDER = {name: i for i, name in enumerate(DTYPES)}


@dataclass(frozen=True)
class Tally:
    """Files, elements and bytes of a set of dumps, and their dtypes."""

    files: int = 0
    elements: int = 0
    bytes: int = 0
    dtypes: tuple[str, ...] = ()  # in the order of dtypes.DTYPES
    malformed: int = 0  # files counted in bytes but not in elements


@dataclass(frozen=True)
class StepStats:
    step: int
    total: Tally
    groups: tuple[tuple[str, Tally], ...]  # (group key, tally), pipeline order, groups present


@dataclass(frozen=True)
class GroupStats:
    """One group over every step."""

    key: str
    title: str
    total: Tally
    buffers: int  # distinct buffer names
    steps: int  # steps holding at least one of its buffers


@dataclass(frozen=True)
class BufferStats:
    """One buffer name over every step."""

    name: str
    group: str
    dtype: str
    bytes: int  # its largest file
    elements: int | None  # elements of that file (None if it is malformed)
    steps: int  # steps it is dumped at
    total_bytes: int  # over every step


@dataclass(frozen=True)
class MissingBuffer:
    """A buffer dumped at some steps of the run but not at others."""

    name: str
    group: str
    missing_steps: tuple[int, ...]
    present_steps: int


@dataclass(frozen=True)
class Malformed:
    step: int
    name: str
    group: str
    dtype: str
    bytes: int
    message: str


@dataclass(frozen=True)
class RunStats:
    run: str
    source: Literal["folder", "manifest"]
    schema: str
    total: Tally
    n_steps: int
    n_buffers: int
    steps: tuple[StepStats, ...]
    groups: tuple[GroupStats, ...]
    largest: tuple[BufferStats, ...]
    missing: tuple[MissingBuffer, ...]
    malformed: tuple[Malformed, ...]
    skipped: tuple[Skipped, ...]
    errors: tuple[Problem, ...]
    #: About the schema used, for stderr (``note: ...``/``warning: ...``):
    #: see ``runschema.choose_schema``. Not part of the JSON.
    notes: tuple[str, ...] = ()


# --- computing ---------------------------------------------------------------


def malformed_message(size: int, itemsize: int, dtype: str) -> str:
    return (
        f"size {size} bytes is not a whole number of {itemsize}-byte {dtype} elements "
        "(truncated dump, or wrong dtype in the schema?)"
    )


def _tally(files: Iterable[tuple[DumpFile, str]]) -> Tally:
    """Tally of (file, dtype) pairs."""
    n = elements = size = bad = 0
    dtypes: set[str] = set()
    for f, dtype in files:
        itemsize = get_dtype(dtype).itemsize
        n += 1
        size += f.size
        dtypes.add(dtype)
        if f.size % itemsize:
            bad += 1
        else:
            elements += f.size // itemsize
    return Tally(n, elements, size, tuple(sorted(dtypes, key=_DTYPE_ORDER.__getitem__)), bad)


def run_stats(
    listing: RunListing,
    schema: Schema,
    top: int = DEFAULT_TOP,
    source: Literal["folder", "manifest"] = "folder",
) -> RunStats:
    """Sizes of a run's dumps as the listing saw them (nothing is read).

    ``top``: how many buffers to list as the largest, by their largest file
    (ties: more bytes over all steps first, then pipeline order and name).
    """
    if top < 0:
        raise ValueError(f"--top must be >= 0, got {top}")
    order = schema.order
    classified = [(f, *schema.classify(f.name)) for f in listing.files]

    def sort_key(key: str, name: str = "") -> tuple[int, str]:
        return order[key], name

    by_step: dict[int, list[tuple[DumpFile, str, str]]] = {}
    by_group: dict[str, list[tuple[DumpFile, str, str]]] = {}
    by_name: dict[str, list[tuple[DumpFile, str, str]]] = {}
    for item in classified:
        f, group, _ = item
        by_step.setdefault(f.step, []).append(item)
        by_group.setdefault(group, []).append(item)
        by_name.setdefault(f.name, []).append(item)

    steps = []
    for step in sorted(by_step):
        items = by_step[step]
        keys = sorted({g for _, g, _ in items}, key=sort_key)
        groups = tuple((k, _tally((f, d) for f, g, d in items if g == k)) for k in keys)
        steps.append(StepStats(step, _tally((f, d) for f, _, d in items), groups))

    titles = {g.key: g.title for g in (*schema.groups, OTHER_GROUP)}
    groups_total = tuple(
        GroupStats(
            key,
            titles[key],
            _tally((f, d) for f, _, d in by_group[key]),
            len({f.name for f, _, _ in by_group[key]}),
            len({f.step for f, _, _ in by_group[key]}),
        )
        for key in sorted(by_group, key=sort_key)
    )

    all_steps = set(by_step)
    buffers = []
    missing = []
    for name, items in by_name.items():
        _, group, dtype = items[0]
        itemsize = get_dtype(dtype).itemsize
        biggest = max(f.size for f, _, _ in items)
        buffers.append(
            BufferStats(
                name,
                group,
                dtype,
                biggest,
                None if biggest % itemsize else biggest // itemsize,
                len(items),
                sum(f.size for f, _, _ in items),
            )
        )
        present = {f.step for f, _, _ in items}
        if present != all_steps:
            missing.append(
                MissingBuffer(name, group, tuple(sorted(all_steps - present)), len(present))
            )
    buffers.sort(key=lambda b: (-b.bytes, -b.total_bytes, order[b.group], b.name))
    missing.sort(key=lambda m: sort_key(m.group, m.name))

    malformed = []
    for f, group, dtype in sorted(classified, key=lambda c: (c[0].step, order[c[1]], c[0].name)):
        itemsize = get_dtype(dtype).itemsize
        if f.size % itemsize:
            message = malformed_message(f.size, itemsize, dtype)
            malformed.append(Malformed(f.step, f.name, group, dtype, f.size, message))

    return RunStats(
        run=listing.root,
        source=source,
        schema=schema.name,
        total=_tally((f, d) for f, _, d in classified),
        n_steps=len(by_step),
        n_buffers=len(by_name),
        steps=tuple(steps),
        groups=groups_total,
        largest=tuple(buffers[:top]),
        missing=tuple(missing),
        malformed=tuple(malformed),
        skipped=listing.skipped,
        errors=listing.errors,
    )


def stats_for(
    run: str | os.PathLike[str], schema: Schema | None = None, top: int = DEFAULT_TOP
) -> RunStats:
    """``run_stats`` of a run folder or a manifest written by ``fastdiff hash``.

    ``schema``: None reads a manifest with the schema it records (a folder,
    or a manifest that records none, with rl-state); a schema given wins,
    and ``RunStats.notes`` names the buffers whose recorded dtype it changes.
    Raises FastdiffError when the run cannot be listed at all, or holds no
    dumps; problems with single entries are kept in ``RunStats.errors``.
    """
    src = open_run(run)
    if not src.listing.readable:
        problem = src.listing.errors[0]
        raise FastdiffError(f"{problem.path}: {problem.message}")
    if not src.listing.files and not src.listing.errors:
        raise FastdiffError(
            f"{src.spec}: no step_<N>_<name>.bin dumps in it; give the folder that holds "
            "the dumps, or a manifest written by 'fastdiff hash'"
        )
    chosen, notes = choose_schema((src,), schema)
    stats = run_stats(src.listing, chosen, top, "manifest" if src.is_manifest else "folder")
    return replace(stats, notes=notes)


# --- JSON --------------------------------------------------------------------


def tally_dict(t: Tally) -> dict[str, Any]:
    return {
        "files": t.files,
        "elements": t.elements,
        "bytes": t.bytes,
        "dtypes": list(t.dtypes),
        "malformed": t.malformed,
    }


def stats_dict(s: RunStats) -> dict[str, Any]:
    per_step = [st.total.bytes for st in s.steps]
    return {
        "schema_version": STATS_SCHEMA_VERSION,
        "run": s.run,
        "source": s.source,
        "schema": s.schema,
        "totals": {
            "steps": s.n_steps,
            "buffers": s.n_buffers,
            **tally_dict(s.total),
            "bytes_per_step": {"min": min(per_step, default=0), "max": max(per_step, default=0)},
        },
        "steps": [
            {
                "step": st.step,
                **tally_dict(st.total),
                "groups": [{"group": k, **tally_dict(t)} for k, t in st.groups],
            }
            for st in s.steps
        ],
        "groups": [
            {
                "group": g.key,
                "title": g.title,
                "buffers": g.buffers,
                "steps": g.steps,
                **tally_dict(g.total),
            }
            for g in s.groups
        ],
        "largest": [
            {
                "name": b.name,
                "group": b.group,
                "dtype": b.dtype,
                "bytes": b.bytes,
                "elements": b.elements,
                "steps": b.steps,
                "total_bytes": b.total_bytes,
            }
            for b in s.largest
        ],
        "missing": [
            {
                "name": m.name,
                "group": m.group,
                "missing_steps": list(m.missing_steps),
                "present_steps": m.present_steps,
            }
            for m in s.missing
        ],
        "malformed": [
            {
                "step": m.step,
                "name": m.name,
                "group": m.group,
                "dtype": m.dtype,
                "bytes": m.bytes,
                "message": m.message,
            }
            for m in s.malformed
        ],
        "skipped": [path_record(k.path, "reason", k.reason) for k in s.skipped],
        "errors": [path_record(e.path, "message", e.message) for e in s.errors],
    }


def render_stats_json(s: RunStats, indent: int | None = 2) -> str:
    return json.dumps(stats_dict(s), indent=indent, allow_nan=False) + "\n"


# --- text --------------------------------------------------------------------


def format_bytes(n: float) -> str:
    """Binary units: ``64 B``, ``2.9 KiB``, ``1.0 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def format_steps(steps: Iterable[int]) -> str:
    """``0-7, 12``: sorted step numbers as ranges."""
    out: list[str] = []
    run: list[int] = []
    for s in sorted(steps):
        if run and s == run[-1] + 1:
            run.append(s)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [s]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(out)


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _cells(t: Tally) -> list[str]:
    """files, elements, bytes, dtypes: table cells."""
    return [f"{t.files:,}", f"{t.elements:,}", format_bytes(t.bytes), " ".join(t.dtypes)]


def render_stats_text(s: RunStats) -> str:
    t = s.total
    lines = [f"run: {display_path(s.run)} ({s.source}), schema {display_path(s.schema)}"]
    per_step = [st.total.bytes for st in s.steps]
    lines.append(
        f"total: {plural(s.n_steps, 'step')}, {plural(s.n_buffers, 'buffer')}, "
        f"{plural(t.files, 'file')}, {plural(t.elements, 'element')}, "
        f"{t.bytes:,} bytes ({format_bytes(t.bytes)}); dtypes {' '.join(t.dtypes) or '-'}"
    )
    if per_step:
        lo, hi = min(per_step), max(per_step)
        each = format_bytes(lo) if lo == hi else f"{format_bytes(lo)} to {format_bytes(hi)}"
        lines.append(f"per step: {each}")

    # Steps with the same content per group share one row.
    lines += ["", "per step and group:"]
    rows = [["steps", "group", "files", "elements", "bytes", "dtypes"]]
    runs: list[tuple[list[int], StepStats]] = []
    for st in s.steps:
        if runs and runs[-1][1].groups == st.groups:
            runs[-1][0].append(st.step)
        else:
            runs.append(([st.step], st))
    for steps, st in runs:
        label = format_steps(steps) + (f" ({len(steps)} steps)" if len(steps) > 1 else "")
        for i, (key, g) in enumerate(st.groups):
            rows.append([label if i == 0 else "", key, *_cells(g)])
        if len(st.groups) > 1:
            rows.append(["", "all", *_cells(st.total)])
    lines += _table(rows, {2, 3, 4})

    lines += ["", "per group, all steps:"]
    rows = [["group", "title", "buffers", "steps", "files", "elements", "bytes", "share", "dtypes"]]
    for g in s.groups:
        share = f"{100 * g.total.bytes / t.bytes:.1f}%" if t.bytes else "-"
        files, elements, size, dtypes = _cells(g.total)
        rows.append([g.key, g.title, str(g.buffers), str(g.steps), files, elements, size, share,
                     dtypes])  # fmt: skip
    lines += _table(rows, {2, 3, 4, 5, 6, 7})

    if s.largest:
        lines += ["", f"largest buffers (by their largest file; top {len(s.largest)}):"]
        rows = [["buffer", "group", "dtype", "elements", "bytes", "steps", "all steps"]]
        for b in s.largest:
            rows.append(
                [
                    display_path(b.name),
                    b.group,
                    b.dtype,
                    "-" if b.elements is None else f"{b.elements:,}",
                    format_bytes(b.bytes),
                    str(b.steps),
                    format_bytes(b.total_bytes),
                ]
            )
        lines += _table(rows, {3, 4, 5, 6})

    lines.append("")
    if s.missing:
        lines.append(f"missing at some steps ({plural(len(s.missing), 'buffer')}):")
        for m in s.missing:
            lines.append(
                f"  {display_path(m.name)} ({m.group}): missing at step"
                f"{'s' if len(m.missing_steps) > 1 else ''} {format_steps(m.missing_steps)} "
                f"(present at {m.present_steps} of {s.n_steps})"
            )
    else:
        lines.append("missing at some steps: none (every buffer is at every step)")
    if s.malformed:
        lines.append(f"malformed ({plural(len(s.malformed), 'file')}, no elements counted):")
        lines += [
            f"  step {m.step} {display_path(m.name)} [{m.dtype}]: {display_path(m.message)}"
            for m in s.malformed
        ]
    if s.skipped:
        lines.append(f"skipped ({plural(len(s.skipped), 'entry', 'entries')}):")
        lines += [f"  {display_path(k.path)}: {display_path(k.reason)}" for k in s.skipped]
    if s.errors:
        lines.append(f"{plural(len(s.errors), 'error')}:")
        lines += [f"  {display_path(e.path)}: {display_path(e.message)}" for e in s.errors]
    return "\n".join(lines) + "\n"
