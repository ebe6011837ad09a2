"""Stage 6 for one run pair (or one part of it): its report.

``plan_report`` is the verdict (``verdict.build_report``) of a pair's
results, with what its two sources add: what both skipped, a note on how
to record the first divergent step in full where a side of it holds
digests only that a recorder wrote, and where two traces' sequences of
records part (``structure``). The scheduler calls it for every plan it
completes; the runs of several ranks are combined from these
(``verdict.combine_ranks``, by ``fastdiff.compare``).

``parts_report`` is the report of a run pair compared in parts (the steps
of a watch), with the notes of the parts put together (``PartNotes``) as
``plan_report`` would have made them for the whole: so a watch's summary
says what a compare of the same runs says; the report of runs of several
ranks puts its ranks' notes together the same way (``fastdiff.compare``).
"""

from __future__ import annotations

from ..model.findings import Note, NoteKind
from ..model.results import DIVERGENT
from .verdict import OWN_NOTES, build_report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..model.results import BufferResult, Problem, Report, Skipped, Work
    from ..schema import Schema
    from ..sources import RunSource


def plan_report(
    src_a: RunSource,
    src_b: RunSource,
    schema: Schema,
    results: list[BufferResult],
    errors: list[Problem],
    tolerance: dict[str, object],
    work: Work,
    notes: Iterable[Note] = (),
    rank: int | None = None,
) -> Report:
    """The report of ``src_a`` against ``src_b`` from its buffers' results
    and the problems met (besides the sources' own listing errors, which
    ``errors`` holds already); ``rank``: the rank both are of (a run of
    several), where their traces part."""
    report = build_report(
        src_a.spec, src_b.spec, schema, results, skipped_of(src_a, src_b), errors,
        tolerance=tolerance, work=work, notes=tuple(notes),
    )  # fmt: skip
    if report.first_divergent_step is not None and not (src_a.is_manifest and src_b.is_manifest):
        report = _with_rerecord_notes(report, src_a, src_b)
    if src_a.sequence is not None and src_b.sequence is not None:
        report = _with_structure(report, src_a, src_b, rank)
    return report


def parts_report(
    run_a: str,
    run_b: str,
    schema: Schema,
    buffers: Iterable[BufferResult],
    skipped: Iterable[Skipped],
    errors: Iterable[Problem],
    tolerance: dict[str, object],
    work: Work,
    notes: Iterable[Note],
    part_notes: Iterable[Note],
) -> Report:
    """The report of ``run_a`` against ``run_b`` compared in parts (the steps
    of a watch), from every part's buffers and problems; ``notes``: the
    caller's (how the runs are read), ``part_notes``: those of the parts'
    reports, put in as ``PartNotes`` says."""
    parts = PartNotes(part_notes)
    report = build_report(
        run_a, run_b, schema, buffers, skipped, errors, tolerance=tolerance, work=work,
        notes=(*notes, *parts.before),
    )  # fmt: skip
    return parts.added_to(report)


class PartNotes:
    """The notes of the reports of a run pair's parts (the steps of a watch,
    the ranks of runs of several: ``plan_report``'s), as the report of the
    whole holds them: the notes on headers that overrule the schema's dtypes
    as one (every buffer, by name: ``before``, with the caller's), the note
    on recording a step in full for the whole's first divergent step only,
    the others once each, after the report's own (``added_to``); the notes
    a report makes of its own buffers (``verdict.OWN_NOTES``) are not taken:
    the whole's report makes them again over all its buffers."""

    __slots__ = ("before", "later")

    def __init__(self, part_notes: Iterable[Note]) -> None:
        header: dict[str, tuple[str, str, str]] = {}
        header_of: Note | None = None
        later: dict[Note, None] = {}
        for note in part_notes:
            if note.kind in OWN_NOTES:
                continue
            if note.kind == NoteKind.HEADER_DTYPE:
                header_of = header_of or note
                for entry in note["buffers"]:
                    header.setdefault(entry[0], entry)
            else:
                later[note] = None
        self.before: tuple[Note, ...] = ()
        if header_of is not None:
            merged = [header[name] for name in sorted(header)]
            self.before = (Note.of(NoteKind.HEADER_DTYPE, schema=header_of["schema"],
                                   buffers=merged, warning=header_of.warning),)  # fmt: skip
        self.later = tuple(later)

    def added_to(self, report: Report) -> Report:
        """``report`` (of the whole, built with ``before``) with the later notes."""
        first, said = report.first_divergent_step, set(report.notes)
        after = [note for note in self.later if note not in said
                 and (note.kind != NoteKind.RERECORD or note["step"] == first)]  # fmt: skip
        return report.replace(notes=(*report.notes, *after)) if after else report


def caller_notes(report: Report) -> tuple[Note, ...]:
    """The notes of ``report`` that its caller gave or its sources added,
    without those it made of its own buffers (``verdict.OWN_NOTES``): what a
    report rebuilt from its buffers keeps."""
    return tuple(note for note in report.notes if note.kind not in OWN_NOTES)


def skipped_of(src_a: RunSource, src_b: RunSource) -> list[Skipped]:
    """What both runs skipped; a run compared with itself lists its entries once."""
    a, b = src_a.listing.skipped, src_b.listing.skipped
    return list(a) if src_a.spec == src_b.spec else [*a, *b]


def _with_rerecord_notes(report: Report, src_a: RunSource, src_b: RunSource) -> Report:
    """``report`` with a note on how to record the first divergent step in
    full, where a side of it holds digests only that a recorder wrote."""
    step = report.first_divergent_step
    sides: list[tuple[str, str]] = []
    names: dict[str, None] = {}
    for side, src in (("A", src_a), ("B", src_b)):
        if src.is_manifest:
            continue
        only = {f.name for f in src.listing.buffers if f.step == step and not f.has_data}
        if only:
            hit = [b.name for b in report.buffers
                   if b.step == step and b.status in DIVERGENT and b.name in only]  # fmt: skip
            if hit:
                sides.append((side, src.spec))
                names.update(dict.fromkeys(hit))
    if not sides:
        return report
    assert step is not None
    note = Note.of(NoteKind.RERECORD, step=step, sides=sides, names=list(names))
    return report.replace(notes=(*report.notes, note))


def _with_structure(report: Report, src_a: RunSource, src_b: RunSource, rank: int | None) -> Report:
    """``report`` with where the two traces' sequences of records part
    (``stages.structure``), and a note on what of their sequence logs could
    not be used."""
    from ..sources.buffers import step_filter
    from ..sources.traced import read_sequences, sequence_notes
    from .structure import first_parting

    seqs = []
    for src in (src_a, src_b):
        seqs.append(read_sequences(src.sequence, step_filter(src.steps)))  # type: ignore[arg-type]
    notes = sequence_notes((src_a.sequence, src_b.sequence), seqs)  # type: ignore[arg-type]
    if seqs[0].unusable is not None or seqs[1].unusable is not None:
        return report.replace(notes=(*report.notes, *notes)) if notes else report
    structure = first_parting(seqs[0], seqs[1], rank)
    return report.replace(structure=structure, notes=(*report.notes, *notes))
