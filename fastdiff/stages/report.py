"""Stage 6 for one run pair (or one part of it): its report.

``plan_report`` is the verdict (``verdict.build_report``) of a pair's
results, with what its two sources add: what both skipped, a note on how
to record the first divergent step in full where a side of it holds
digests only that a recorder wrote, and where two traces' sequences of
records part (``structure``). The scheduler calls it for every plan it
completes; the runs of several ranks are combined from these
(``verdict.combine_ranks``, by ``fastdiff.compare``).
"""

from __future__ import annotations

from ..model.findings import Note, NoteKind
from ..model.results import DIVERGENT
from .verdict import build_report

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
