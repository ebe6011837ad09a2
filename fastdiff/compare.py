"""The compare use case: run pairs in, reports out.

discover -> pair -> size -> hash -> scan (kernel) -> verdict. Here: which
runs to compare and how each is listed (``list_runs``: once each, with its
ranks when it is a run of several), the schema each pair is read with, a
``Plan`` per pair (or per rank of two runs of several, combined into one
report: ``_RankedPair``), and the reports back in input order. The
``Scheduler`` (``engine.scheduler``) drives the stages over the plans; each
stage drops what it has decided, so the cheap tests (stat, then digests)
settle almost everything and only differing chunks reach the kernel.

``compare_runs`` compares one pair (the library's entry point);
``compare_pairs`` many at once, every file hashed once (``sweep`` is built
on it). ``watch`` submits plans of its own, a step at a time.
"""

from __future__ import annotations

import os

from .engine.pool import gc_paused
from .engine.scheduler import Plan, Scheduler
from .model.results import Problem, Report
from .model.selection import Selection
from .options import CompareOptions, tolerance_dict
from .sources import RunSource, dump_subfolder, holds_no_dumps, no_dumps_problem, open_run
from .sources.schemas import choose_schema
from .stages.report import PartNotes
from .stages.verdict import combine_ranks

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from concurrent.futures import Executor

    from .engine.cache import DigestCache
    from .engine.progress import Progress
    from .model.findings import Note
    from .schema import Schema
    from .sources.ranks import RankedRun

__all__ = [
    "CompareOptions",
    "Selection",
    "compare_pairs",
    "compare_runs",
    "holding",
    "list_runs",
    "tolerance_dict",
]

NOTHING_TO_COMPARE = (
    "nothing to compare: neither run holds step_<N>_<name>.bin files; "
    "check that these are the dump folders"
)


def compare_runs(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
    cache: DigestCache | None = None,
    on_note: Callable[[Note], None] | None = None,
    select: Selection | None = None,
) -> Report:
    """Compare two runs (folders or manifests); the Report holds every buffer
    and every error.

    ``executor``: any concurrent.futures executor the caller owns (only
    ``submit`` is called); without one, fastdiff picks serial or a pool of
    its own per ``options.executor`` and ``options.jobs``. ``cache``: a
    DigestCache to look digests up in and store them to (default: none).
    ``on_note``: called with each remark on how the runs are read (the
    schema a manifest records, and what disagrees with it), which the
    report's ``notes`` hold too. ``select``: compare only the steps and
    buffers it takes (``Selection``), which the report's ``selection`` says.
    """
    (report,) = compare_pairs(
        [(run_a, run_b)], options, executor=executor, cache=cache, on_note=on_note,
        select=select,
    )  # fmt: skip
    return report


def _empty_sides(
    sa: RunSource, sb: RunSource, hints: dict[str, str | None], select: Selection | None = None
) -> list[Problem]:
    """A run side with no dumps at all is an error, never a divergence.
    ``hints``: each empty folder's subfolder that holds dumps, looked up once.
    Under a ``select``ion, a side that holds none of the dumps it selects but
    holds others is compared as it is (what the other side holds there is in
    one run only), unless neither side holds any: then nothing is compared."""
    empty = [(side, s) for side, s in (("A", sa), ("B", sb)) if holds_no_dumps(s.listing)]
    if select is not None and empty:
        elsewhere = [(side, s) for side, s in empty if _holds_dumps_unselected(s)]
        if len(elsewhere) == 2:
            return [
                Problem(
                    f"{sa.spec} and {sb.spec}",
                    f"nothing to compare: neither run holds a dump that {select.options()} "
                    "selects; widen the selection, or leave it out",
                    kind="no_dumps",
                )
            ]
        empty = [item for item in empty if item not in elsewhere]
    for _, s in empty:
        if s.spec not in hints:
            hints[s.spec] = None if s.is_manifest else dump_subfolder(s.spec)
    if len(empty) < 2:
        return [no_dumps_problem(s, side, hints[s.spec]) for side, s in empty]
    subs = [sub for sub in dict.fromkeys(hints[s.spec] for _, s in empty) if sub]
    hint = f"; did you mean {' or '.join(subs)}?" if subs else ""
    where = f"{sa.spec} and {sb.spec}"
    return [Problem(where, NOTHING_TO_COMPARE + hint, kind="no_dumps")]


def _holds_dumps_unselected(src: RunSource) -> bool:
    """Whether a run side that holds none of the dumps a selection takes holds
    others: listed again, whole (a rare path: a selection that misses a run).
    A side that cannot be listed again by its name (a rank of a manifest) is
    taken to hold some."""
    whole = open_run(src.spec)
    return bool(whole.listing.buffers) or not whole.listing.readable


def open_selected(spec: str, select: Selection | None) -> RunSource:
    """The run ``spec``, listed at the steps ``select`` takes (all without
    one): other steps' entries are neither listed nor stat'ed. Its names
    are selected later (``Selection.wants_name``), once its ranks are known."""
    steps = None if select is None or select.steps is None else select.wants_step
    return open_run(spec, steps)


def _named(src: RunSource, select: Selection | None) -> RunSource:
    """``src`` restricted to the buffers whose names ``select`` takes."""
    if select is None or select.names is None:
        return src
    return src.select_names(select.wants_name)


def compare_pairs(
    pairs: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
    cache: DigestCache | None = None,
    on_report: Callable[[int, Report], None] | None = None,
    progress: Progress | None = None,
    on_note: Callable[[Note], None] | None = None,
    select: Selection | None = None,
    listed: dict[str, tuple[RunSource, RankedRun | None]] | None = None,
) -> list[Report]:
    """Compare run pairs (folders or manifests), hashing every file once per
    chunk size it is needed at.

    Reports come back in input order; ``on_report(i, report)`` is called for
    each as soon as it and all before it are done. ``executor``: any
    concurrent.futures executor the caller owns (only ``submit`` is called).
    Each pair is read with the schema ``sources.schemas.choose_schema`` picks
    for it; what it says about the choice is in that pair's ``Report.notes``,
    and is handed to ``on_note`` once per distinct line, before any work
    starts (the command line prints it on stderr). ``select``: compare only
    the steps and buffers it takes (``model.selection.Selection``; each report's
    ``selection``); steps it leaves out are not even listed. ``listed``:
    the runs as ``list_runs`` listed them already (a sweep's, with the same
    ``select``), else listed here.
    """
    with gc_paused():
        return _compare_pairs(
            pairs, options, executor, cache, on_report, progress, on_note, select, listed
        )


def _compare_pairs(
    pairs: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    options: CompareOptions | None,
    executor: Executor | None,
    cache: DigestCache | None,
    on_report: Callable[[int, Report], None] | None,
    progress: Progress | None,
    on_note: Callable[[Note], None] | None,
    select: Selection | None,
    listed: dict[str, tuple[RunSource, RankedRun | None]] | None,
) -> list[Report]:
    opts = options or CompareOptions()
    if listed is None:
        listed = list_runs(pairs, select)
    reports: dict[int, Report] = {}
    emitted = 0

    def finish(index: int, report: Report) -> None:
        nonlocal emitted
        if select is not None:
            report = report.replace(selection=select)
        reports[index] = report
        while emitted in reports:
            if on_report is not None:
                on_report(emitted, reports[emitted])
            emitted += 1

    def done(plan: Plan, report: Report) -> None:
        finish(plan.tag, report)  # type: ignore[arg-type]

    sched = Scheduler(opts, cache, progress)
    hints: dict[str, str | None] = {}
    notes: dict[str, None] = {}
    for i, (ra, rb) in enumerate(pairs):
        (sa, ka), (sb, kb) = listed[os.fspath(ra)], listed[os.fspath(rb)]
        schema, said = choose_schema(
            (_rank_traced(sa, ka), _rank_traced(sb, kb)), opts.schema, holding(listed, (ra, rb))
        )
        said = (*said, *dict.fromkeys((*sa.notes, *sb.notes)))
        notes.update(dict.fromkeys(said))
        if ka is None and kb is None:  # runs of one rank: the usual case
            empty = _empty_sides(sa, sb, hints, select)
            sched.submit(Plan(sa, sb, schema, done, i, empty, paired=not empty, notes=said))
        elif ka is None or kb is None:
            mixed = [_one_rank_and_several(sa, sb, ka is not None)]
            sched.submit(Plan(sa, sb, schema, done, i, mixed, paired=False, notes=said))
        else:
            _RankedPair(i, sa, sb, ka, kb, schema, said, opts, finish).submit(sched, hints, select)
    if on_note is not None:
        for note in notes:  # once each, however many pairs it concerns
            on_note(note)
    sched.run(executor)
    if progress is not None:
        progress.close()
    return [reports[i] for i in range(len(pairs))]


def list_runs(
    pairs: Sequence[tuple[str | os.PathLike[str], str | os.PathLike[str]]],
    select: Selection | None = None,
) -> dict[str, tuple[RunSource, RankedRun | None]]:
    """Every run of ``pairs`` listed once (``sources.open_run``, at the steps
    ``select`` takes), with its ranks when it is a run of several (each rank
    listed once too), by its spec: what ``compare_pairs`` compares, and what
    a sweep chooses its schema from before (``sweep.one_schema``), without
    listing again. A run of one rank holds the names ``select`` takes; a
    run of several, its ranks do (``_RankedPair``)."""
    listed: dict[str, tuple[RunSource, RankedRun | None]] = {}
    for spec in dict.fromkeys(os.fspath(s) for pair in pairs for s in pair):
        src = open_selected(spec, select)
        ranked = _ranks_of(src)
        listed[spec] = (_named(src, select) if ranked is None else src, ranked)
    return listed


def holding(
    listed: dict[str, tuple[RunSource, RankedRun | None]],
    runs: Iterable[str | os.PathLike[str]],
) -> list[RunSource]:
    """The sources that hold the buffers of ``runs`` (listed by ``list_runs``):
    a run's own, or its ranks' for a run of several (``choose_schema``'s
    ``named``)."""
    out: list[RunSource] = []
    for run in runs:
        src, ranked = listed[os.fspath(run)]
        out += [src] if ranked is None else [rank_src for _, rank_src in ranked.ranks]
    return out


# --- runs of several ranks ---------------------------------------------------------------


def _ranks_of(src: RunSource) -> RankedRun | None:
    """``sources.ranks.split_ranks`` of a run; a folder whose listing holds
    dumps and skipped nothing (the usual case) has no rank folders, and
    costs no import."""
    listing = src.listing
    if listing.buffers and not listing.skipped and not src.is_manifest:
        return None
    from .sources.ranks import split_ranks

    return split_ranks(src, open_run)


def _rank_traced(src: RunSource, ranked: RankedRun | None) -> RunSource:
    """``src``, carrying the dataflow of its first rank a tracer wrote, for a
    folder of ranks that holds none itself: the schema of the run when none
    is given (each rank is read with its own: ``_RankedPair``)."""
    if ranked is None or src.dataflow is not None or src.is_manifest:
        return src
    first = next((r for _, r in ranked.ranks if r.dataflow is not None), None)
    return src if first is None else src.traced(first.dataflow, None)


def _one_rank_and_several(sa: RunSource, sb: RunSource, a_has_ranks: bool) -> Problem:
    several, one = (sa, sb) if a_has_ranks else (sb, sa)
    side, other = ("A", "B") if a_has_ranks else ("B", "A")
    return Problem(
        several.spec,
        f"run {side} holds the dumps of several ranks (rank_<R> folders) and run {other}, "
        f"{one.spec}, those of one: compare rank by rank ({several.spec}/rank_0 against "
        f"{one.spec}), or give run {other}'s folder of ranks",
        kind="mismatch",
    )


def _absent_rank(spec: str, rank: int, present: RunSource, side: str, other: str) -> RunSource:
    """The side of a rank that one run lacks: a source whose listing holds the error."""
    from .sources.buffers import RunListing
    from .sources.ranks import rank_name

    where = (
        f"{spec}:{rank_name(rank)}" if os.path.isfile(spec) else os.path.join(spec, rank_name(rank))
    )
    problem = Problem(
        present.spec,
        f"rank {rank} is in run {side} only (run {other} has no {rank_name(rank)}); nothing "
        "was compared for it: copy that rank's dumps, or compare the ranks both runs hold",
        kind="missing",
    )
    return RunSource(where, RunListing(where, (), (), (problem,), readable=False))


class _RankedPair:
    """Two runs of several ranks: a plan per rank, then one report of them all."""

    __slots__ = ("errors", "finish", "index", "ka", "kb", "left", "notes", "opts", "reports",
                 "sa", "sb", "schema")  # fmt: skip

    def __init__(
        self,
        index: int,
        sa: RunSource,
        sb: RunSource,
        ka: RankedRun,
        kb: RankedRun,
        schema: Schema,
        notes: tuple[Note, ...],
        opts: CompareOptions,
        finish: Callable[[int, Report], None],
    ) -> None:
        self.index, self.sa, self.sb, self.ka, self.kb = index, sa, sb, ka, kb
        self.schema, self.notes, self.opts, self.finish = schema, notes, opts, finish
        self.errors = [*sa.listing.errors, *sb.listing.errors, *ka.problems, *kb.problems]
        self.reports: list[tuple[int, Report]] = []
        self.left = 0

    def submit(
        self, sched: Scheduler, hints: dict[str, str | None], select: Selection | None = None
    ) -> None:
        from .sources.ranks import pair_ranks

        paired = pair_ranks(self.ka, self.kb)
        self.left = len(paired)
        for rank, ra, rb in paired:
            if ra is None:
                assert rb is not None
                ra = _absent_rank(self.sa.spec, rank, rb, "B", "A")
            elif rb is None:
                rb = _absent_rank(self.sb.spec, rank, ra, "A", "B")
            ra, rb = _named(ra, select), _named(rb, select)
            empty = (
                []
                if not (ra.listing.readable and rb.listing.readable)
                else _empty_sides(ra, rb, hints, select)
            )
            schema = self.schema
            if self.opts.schema is None and ra.dataflow is not None:
                schema = ra.dataflow  # a trace's rank: its own dataflow (ranks may run other ops)
            plan = Plan(ra, rb, schema, self.done, rank, empty, paired=not empty,
                        notes=self.notes, rank=rank)  # fmt: skip
            sched.submit(plan)

    def done(self, plan: Plan, report: Report) -> None:
        self.reports.append((plan.rank, report))  # type: ignore[arg-type]
        self.left -= 1
        if self.left:
            return
        from .sources.ranks import skipped_beside

        skipped = [*skipped_beside(self.ka, self.sa)]
        if self.sb.spec != self.sa.spec:
            skipped += skipped_beside(self.kb, self.sb)
        parts = PartNotes(note for _, r in sorted(self.reports, key=_rank) for note in r.notes)
        report = combine_ranks(
            self.sa.spec, self.sb.spec, self.schema, self.reports, skipped, self.errors,
            tolerance_dict(self.opts.tolerance), (*self.notes, *parts.before),
        )  # fmt: skip
        report = parts.added_to(report)
        parted = [r.structure for _, r in self.reports if r.structure is not None]
        if parted:  # two traces of several ranks: where the first rank to part parts
            first = min(parted, key=lambda x: (not x.parted, x.step or 0, x.rank or 0))
            report = report.replace(structure=first)
        self.finish(self.index, report)


def _rank(item: tuple[int, Report]) -> int:
    return item[0]
