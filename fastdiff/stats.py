"""How big a run's dumps are: per step and group, totals, largest buffers, gaps.

``run_stats`` is a pure function from a run listing (a folder's, or a
manifest's) and a schema to a ``RunStats``: nothing is opened or read, only
the sizes that discovery saw. Its renderers are ``render.stats``. Neither
numpy nor numba is imported here.

A file whose size is not a whole number of its dtype's elements is counted
in files and bytes, listed under ``malformed``, and adds no elements.
"""

from __future__ import annotations

import os

from .dtypes import DTYPES, get_dtype
from .errors import FastdiffError
from .model.stats import (
    BufferStats,
    Disk,
    GroupStats,
    Malformed,
    MissingBuffer,
    RunStats,
    StepStats,
    Tally,
)
from .model.statuses import SourceKind
from .schema import OTHER_GROUP
from .sources import open_run
from .sources.schemas import choose_schema
from .stages.size import malformed_message

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from .schema import Schema
    from .sources.buffers import BufferRef, RunListing

__all__ = [
    "DEFAULT_TOP",
    "BufferStats",
    "Disk",
    "GroupStats",
    "Malformed",
    "MissingBuffer",
    "RunStats",
    "StepStats",
    "Tally",
    "run_stats",
    "stats_for",
]

DEFAULT_TOP = 10

_DTYPE_ORDER = {name: i for i, name in enumerate(DTYPES)}


def _disk(files: Iterable[BufferRef]) -> Disk:
    held: dict[tuple[int, ...], int] = {}
    n_digests = digest_bytes = 0
    for f in files:
        if f.has_data:
            held[f.file_key] = f.file_size
        else:
            n_digests += 1
            digest_bytes += f.size
    return Disk(len(held), sum(held.values()), n_digests, digest_bytes)


# --- computing ---------------------------------------------------------------


#: The dtypes of values beside the tensors (``sources.buffers.Value``).
_VALUES = ("value", "label")


def _tally(files: Iterable[tuple[BufferRef, str]]) -> Tally:
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
    source: str = SourceKind.FOLDER,
) -> RunStats:
    """Sizes of a run's dumps as the listing saw them (nothing is read).

    ``top``: how many buffers to list as the largest, by their largest file
    (ties: more bytes over all steps first, then pipeline order and name).
    """
    if top < 0:
        raise ValueError(f"--top must be >= 0, got {top}")
    order = schema.order
    classify = schema.classify
    classified = [
        (f, g, f.dtype or d)
        for f in listing.files
        if f.dtype not in _VALUES  # values beside the tensors hold no elements to count
        for g, d in (classify(f.name),)
    ]

    def sort_key(key: str, name: str = "") -> tuple[int, str]:
        return order[key], name

    by_step: dict[int, list[tuple[BufferRef, str, str]]] = {}
    by_group: dict[str, list[tuple[BufferRef, str, str]]] = {}
    by_name: dict[str, list[tuple[BufferRef, str, str]]] = {}
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
            message = malformed_message(f.size, itemsize, dtype, compared=False)
            malformed.append(Malformed(f.step, f.name, group, dtype, f.size, message, f.path))

    kind = SourceKind.of(source)
    return RunStats(
        run=listing.root,
        source=kind,
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
        disk=None if kind is SourceKind.MANIFEST else _disk(listing.files),
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
        from .sources import dump_subfolder, no_dumps_problem

        sub = None if src.is_manifest else dump_subfolder(src.spec)
        problem = no_dumps_problem(src, None, sub)
        raise FastdiffError(f"{problem.path}: {problem.message}")
    chosen, notes = choose_schema((src,), schema)
    kind = SourceKind.MANIFEST if src.is_manifest else SourceKind.FOLDER
    stats = run_stats(src.listing, chosen, top, kind)
    if chosen.has_unset:  # dtypes nobody set count the elements: say so, as compare does
        from .model.findings import Note, NoteKind

        unset = {f.name: chosen.classify(f.name)[1] for f in src.listing.files
                 if chosen.dtype_unset(f.name)}  # fmt: skip
        if unset:
            note = Note.of(NoteKind.DTYPE_UNSET, schema=chosen.name, unset=sorted(unset.items()))
            notes = (*notes, note)
    return stats.replace(notes=notes)
