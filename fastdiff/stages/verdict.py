"""Stage 6: from per-buffer results to the verdict.

The earliest step with a divergent buffer wins (a malformed buffer whose
files differ in size is one: the runs are known to differ there); the groups diverging at that
step, in pipeline order, are the suspects, and the upstream one is listed
first, its hint followed by what the size of its differences points at
(rounding-size: the order of floating-point operations; large: logic).
Errors make the verdict ``error`` but never hide what was compared. The
timeline sums up, per step and group, the buffers that are not equal; notes
say how the comparison was read where that may surprise (buffers compared
as raw bytes).

Where the schema declares inputs, the roles stage (``stages.roles``) says
which diverged buffers are origins, receivers or undetermined.

Every pass over the buffers is one pass: the cost is linear in steps x buffers.
"""

from __future__ import annotations

from itertools import groupby
from operator import attrgetter

from ..errors import EXIT_DIVERGED, EXIT_IDENTICAL, EXIT_TROUBLE
from ..model.findings import (
    Cause,
    CauseKind,
    ChangeKind,
    LargeCauses,
    Note,
    NoteKind,
    StructuralChange,
    cell_of,
)
from ..model.results import (
    BufferResult,
    GroupVerdict,
    Problem,
    RankReport,
    Report,
    Skipped,
    StepSummary,
    TimelineRow,
    Work,
    total_work,
)
from ..model.statuses import STATUS_ORDER, TIMELINE, TROUBLE, GroupStatus, Status, Verdict
from ..model.tolerance import DEFAULT_ROUNDING_ULP
from ..schema import OTHER, OTHER_GROUP
from .findings import born, rank_pattern

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..model.results import Origin
    from ..schema import Schema


def sort_buffers(buffers: Iterable[BufferResult], schema: Schema) -> tuple[BufferResult, ...]:
    order = schema.order
    return tuple(sorted(buffers, key=lambda b: (b.step, order.get(b.group, len(order)), b.name)))


def combined_magnitude(magnitudes: Iterable[str | None]) -> str | None:
    """ "large" if any is, else "rounding" if any is, else None."""
    found = set(magnitudes)
    return "large" if "large" in found else "rounding" if "rounding" in found else None


def large_causes(buffers: Iterable[BufferResult], rounding_ulp: int) -> LargeCauses:
    """What makes these buffers' differences large: beyond the rounding line
    (in ULPs of their scale too, or not), NaN or infinity mismatches,
    integers."""
    n_nan = n_inf = 0
    beyond = integers = False
    of_scale = True  # every buffer beyond the line is beyond it in ULPs of its scale too
    for b in buffers:
        n_nan += b.n_nan_mismatch or 0
        n_inf += b.n_inf_mismatch or 0
        if b.max_ulp is not None:
            if b.max_ulp > rounding_ulp and not b.cancellation:
                beyond = True
                scaled = b.max_ulp_of_scale
                of_scale = of_scale and scaled is not None and scaled > rounding_ulp
        elif b.magnitude == "large" and not (b.n_nan_mismatch or b.n_inf_mismatch):
            integers = True  # no ULP distance: integers (or no finite differing pair)
    return LargeCauses(beyond, beyond and of_scale, n_nan, n_inf, integers)


def structural_change(b: BufferResult) -> StructuralChange | None:
    """What a diverging buffer changed in its structure: its dtype or shape in
    the files' headers, its length, its size in bytes (malformed), or its
    presence (in one run only); None when only its values differ. A
    structural change is no rounding: the runs took different paths."""
    status = b.status
    if status == Status.ONLY_IN_A:
        return StructuralChange(b.name, ChangeKind.ONLY_IN_A)
    if status == Status.ONLY_IN_B:
        return StructuralChange(b.name, ChangeKind.ONLY_IN_B)
    if status == Status.LENGTH_MISMATCH:
        return StructuralChange(b.name, ChangeKind.LENGTH, b.n_elements_a, b.n_elements_b)
    if status == Status.MALFORMED and b.size_a != b.size_b:
        return StructuralChange(b.name, ChangeKind.SIZE, b.size_a, b.size_b)
    if status == Status.DIVERGED and b.change is not None:
        return StructuralChange(b.name, ChangeKind.HEADER, header=b.change)
    return None


def _cause(
    members: list[BufferResult],
    differing: list[BufferResult],
    magnitude: str | None,
    schema: Schema,
    other: bool,
    rounding_ulp: int,
) -> Cause | None:
    """What a diverged group's differences point at (``render.hints`` words it)."""
    changes: dict[str, StructuralChange] = {}  # once each: several ranks hold the same buffer
    for b in members:
        if b.diverges and b.name not in changes:
            change = structural_change(b)
            if change is not None:
                changes[b.name] = change
    raw = {b.name for b in members
           if b.dtype == "u8" and (other or schema.dtype_unset(b.name))}  # fmt: skip
    as_bytes = [b.name in raw for b in members if b.diverges]
    if changes:
        # A changed dtype, shape, length or presence is no rounding, whatever
        # the other buffers' differences are; the size of a difference in
        # raw bytes says nothing.
        others = [b for b in differing if b.name not in changes and b.name not in raw]
        others_magnitude = combined_magnitude(b.magnitude for b in others)
        return Cause(
            CauseKind.STRUCTURAL, rounding_ulp, changes=tuple(changes.values()),
            others=tuple(dict.fromkeys(b.name for b in others)),
            others_magnitude=others_magnitude,
            others_large=large_causes(others, rounding_ulp) if others_magnitude == "large"
            else None,
            others_cancellation=any(b.cancellation for b in others),
        )  # fmt: skip
    if as_bytes and all(as_bytes):
        return Cause(CauseKind.BYTES, rounding_ulp)  # the size of raw bytes says nothing
    if magnitude == "large":
        return Cause(CauseKind.LARGE, rounding_ulp, large=large_causes(differing, rounding_ulp))
    if magnitude == "rounding":
        cancel = [b.max_ulp or 0 for b in differing if b.cancellation]
        if cancel:
            return Cause(CauseKind.CANCELLATION, rounding_ulp, max_ulp=max(cancel))
        return Cause(CauseKind.ROUNDING, rounding_ulp)
    return None


def _group_verdicts(
    at_step: list[BufferResult], schema: Schema, rounding_ulp: int
) -> tuple[GroupVerdict, ...]:
    groups = list(schema.groups)
    if any(b.group == OTHER_GROUP.key for b in at_step):
        groups.append(OTHER_GROUP)
    by_group: dict[str, list[BufferResult]] = {}
    for b in at_step:
        by_group.setdefault(b.group, []).append(b)
    out = []
    for g in groups:
        members = by_group.get(g.key, [])
        # once each: several ranks hold the same buffer
        diverged = tuple(dict.fromkeys(b.name for b in members if b.diverges))
        # Over the buffers the timeline's row of this group and step sums up.
        differing = [b for b in members if b.diverges or b.status in TIMELINE]
        magnitude = combined_magnitude(b.magnitude for b in differing)
        if diverged:
            status = GroupStatus.DIVERGED
        elif any(b.status in TROUBLE for b in members):
            status = GroupStatus.ERROR
        elif any(b.status == Status.WITHIN_TOLERANCE for b in members):
            status = GroupStatus.WITHIN_TOLERANCE  # bits differ, all within the tolerance
        elif members:
            status = GroupStatus.EQUAL
        else:
            status = GroupStatus.ABSENT
        cause = (
            _cause(members, differing, magnitude, schema, g.key == OTHER, rounding_ulp)
            if diverged
            else None
        )
        out.append(GroupVerdict(g.key, g.title, status, diverged, g.hint, magnitude, cause))
    return tuple(out)


class _Spread:
    """The timeline row of one group at one step, as its buffers come in."""

    __slots__ = ("magnitudes", "max_abs_delta", "max_ulp", "n_buffers", "n_diff")

    def __init__(self) -> None:
        self.n_buffers = 0
        self.n_diff: int | None = None
        self.max_abs_delta: int | float | None = None
        self.max_ulp: int | None = None
        self.magnitudes: set[str | None] = set()

    def add(self, b: BufferResult) -> None:
        self.n_buffers += 1
        if b.n_diff is not None:
            self.n_diff = (self.n_diff or 0) + b.n_diff
        d = b.max_abs_delta
        if d is not None and (self.max_abs_delta is None or d > self.max_abs_delta):
            self.max_abs_delta = d
        u = b.max_ulp
        if u is not None and (self.max_ulp is None or u > self.max_ulp):
            self.max_ulp = u
        self.magnitudes.add(b.magnitude)

    def row(self, step: int, group: str, statuses: set[str], rounding_ulp: int) -> TimelineRow:
        """The row, its cell decided from ``statuses``: those of the group's
        buffers at the step that are not equal."""
        magnitude = combined_magnitude(self.magnitudes)
        shown = cell_of(
            statuses, magnitude, self.max_ulp, self.max_abs_delta, self.n_diff, rounding_ulp
        )
        return TimelineRow(step, group, self.n_buffers, self.n_diff, self.max_abs_delta,
                           self.max_ulp, magnitude, shown)  # fmt: skip


def _steps(
    buffers: tuple[BufferResult, ...], schema: Schema, rounding_ulp: int
) -> tuple[tuple[StepSummary, ...], tuple[TimelineRow, ...], set[str], dict[str, str]]:
    """One summary per step, the timeline, the names of buffers compared as
    raw bytes outside the schema, and those whose dtype the schema leaves
    unset (with the dtype they were read as): one pass over buffers sorted
    by step."""
    order = schema.order
    out = []
    timeline: list[TimelineRow] = []
    as_bytes: set[str] = set()
    unset: dict[str, str] = {}
    has_unset = schema.has_unset
    for step, at in groupby(buffers, key=attrgetter("step")):
        counts = dict.fromkeys(STATUS_ORDER, 0)
        diverged: set[str] = set()
        spread: dict[str, _Spread] = {}  # groups in pipeline order, as the buffers are
        unequal: dict[str, set[str]] = {}  # by group: the statuses that are not equal
        for b in at:
            status = b.status
            counts[status] += 1
            if status != Status.EQUAL:
                unequal.setdefault(b.group, set()).add(status)
            diverges = b.diverges
            if diverges:
                diverged.add(b.group)
            if diverges or status in TIMELINE:
                row = spread.get(b.group)
                if row is None:
                    row = spread[b.group] = _Spread()
                row.add(b)
            if b.group == OTHER and b.dtype == "u8" and status != "error":
                as_bytes.add(b.name)
            elif has_unset and b.name not in unset and schema.dtype_unset(b.name):
                unset[b.name] = b.dtype
        out.append(
            StepSummary(
                step,
                tuple((s, n) for s, n in counts.items() if n),
                tuple(sorted(diverged, key=order.__getitem__)),
            )
        )
        timeline += [
            row.row(step, group, unequal.get(group, set()), rounding_ulp)
            for group, row in spread.items()
        ]
    return tuple(out), tuple(timeline), as_bytes, unset


#: The notes a report makes of its own buffers (``_Summary``), beside its
#: caller's: made again over the whole when parts are put together
#: (``stages.report.parts_report``).
OWN_NOTES = frozenset({NoteKind.RAW_BYTES, NoteKind.DTYPE_UNSET, NoteKind.UNDECIDED})


class _Summary:
    """What a report says of its buffers (sorted by step): the first divergent
    step and its groups, the step summaries, the timeline, the notes."""

    __slots__ = ("divergent", "first_groups", "first_step", "groups", "notes", "problems", "steps",
                 "timeline", "verdict")  # fmt: skip

    def __init__(
        self,
        ordered: tuple[BufferResult, ...],
        schema: Schema,
        problems: tuple[Problem, ...],
        tolerance: dict[str, object] | None,
        notes: Iterable[Note],
    ) -> None:
        self.divergent = divergent = [b for b in ordered if b.diverges]
        self.first_step = first_step = min((b.step for b in divergent), default=None)
        self.groups: tuple[GroupVerdict, ...] = ()
        self.first_groups: tuple[str, ...] = ()
        ulp = (tolerance or {}).get("rounding_ulp", DEFAULT_ROUNDING_ULP)
        rounding_ulp = ulp if isinstance(ulp, int) else DEFAULT_ROUNDING_ULP
        if first_step is not None:
            at = [b for b in ordered if b.step == first_step]
            self.groups = _group_verdicts(at, schema, rounding_ulp)
            self.first_groups = tuple(g.key for g in self.groups if g.status == "diverged")
        self.steps, self.timeline, as_bytes, unset = _steps(ordered, schema, rounding_ulp)
        all_notes = list(dict.fromkeys(notes))
        if as_bytes:
            all_notes.append(Note.of(NoteKind.RAW_BYTES, names=sorted(as_bytes)))
        if unset:
            note = Note.of(NoteKind.DTYPE_UNSET, schema=schema.name, unset=sorted(unset.items()))
            all_notes.append(note)
        undecided = sum(1 for p in problems if p.kind == "undecided")
        if undecided:
            all_notes.append(Note.of(NoteKind.UNDECIDED, n=undecided))
        self.notes = tuple(all_notes)
        self.verdict = (
            Verdict.ERROR if problems else Verdict.DIVERGED if divergent else Verdict.IDENTICAL
        )
        self.problems = problems

    def report(
        self,
        run_a: str,
        run_b: str,
        schema: Schema,
        buffers: tuple[BufferResult, ...],
        skipped: Iterable[Skipped],
        tolerance: dict[str, object] | None,
        work: Work,
        origins: tuple[Origin, ...] | None,
        ranks: tuple[RankReport, ...] | None = None,
    ) -> Report:
        """The report this summary is the verdict of, with what it finds
        (``findings``: where it was born, the ranks' pattern)."""
        declared = origins is not None
        return Report(
            run_a=run_a,
            run_b=run_b,
            schema=schema.name,
            verdict=self.verdict,
            first_divergent_step=self.first_step,
            first_divergent_groups=self.first_groups,
            groups=self.groups,
            steps=self.steps,
            buffers=buffers,
            skipped=tuple(sorted(skipped, key=lambda s: s.path)),
            errors=self.problems,
            tolerance=tolerance or {},
            work=work,
            timeline=self.timeline,
            notes=self.notes,
            origins=origins,
            ranks=ranks,
            born=born(buffers, self.first_step, declared),
            rank_pattern=None if ranks is None else rank_pattern(ranks, declared),
        )


def held_by_both(steps: Iterable[StepSummary]) -> list[int]:
    """The steps both runs hold a dump of (any buffer but one in a single
    run): where ``@prev`` inputs are read. A step one run lacks is no
    earlier state to compare."""
    one = {"only_in_a", "only_in_b"}
    out = []
    for s in steps:
        statuses = {status for status, n in s.counts if n}
        if statuses - one or one <= statuses:
            out.append(s.step)
    return out


def _problems(errors: Iterable[Problem]) -> tuple[Problem, ...]:
    return tuple(sorted(set(errors), key=lambda p: (p.path, p.message)))


def build_report(
    run_a: str,
    run_b: str,
    schema: Schema,
    buffers: Iterable[BufferResult],
    skipped: Iterable[Skipped],
    errors: Iterable[Problem],
    tolerance: dict[str, object] | None = None,
    work: Work | None = None,
    notes: Iterable[Note] = (),
) -> Report:
    """The report of one run pair; ``notes``: remarks of the caller's, to which
    the report adds its own."""
    ordered = sort_buffers(buffers, schema)
    problems = _problems(errors)
    summary = _Summary(ordered, schema, problems, tolerance, notes)
    origins: tuple[Origin, ...] | None = None
    if schema.has_inputs:  # else no role, and the report is as it always was
        origins = ()
        if summary.divergent:
            from .roles import assign_roles

            ordered, origins = assign_roles(ordered, held_by_both(summary.steps), schema)
    return summary.report(
        run_a, run_b, schema, ordered, skipped, tolerance, work or Work(), origins
    )


def combine_ranks(
    run_a: str,
    run_b: str,
    schema: Schema,
    ranks: Iterable[tuple[int, Report]],
    skipped: Iterable[Skipped] = (),
    errors: Iterable[Problem] = (),
    tolerance: dict[str, object] | None = None,
    notes: Iterable[Note] = (),
) -> Report:
    """The report of two runs of several ranks from each rank's report (each
    built by ``build_report``, roles included): every rank's buffers, rank
    after rank; its verdict the worst, its first divergent step the earliest,
    its groups those at that step over every rank, its steps and timeline
    summed over ranks, its origins in step, then pipeline, then rank order;
    ``errors``: problems of the runs themselves (a rank in one run only)."""
    rank_reports = tuple(RankReport(r, rep) for r, rep in sorted(ranks, key=lambda x: x[0]))
    buffers = tuple(b for rr in rank_reports for b in rr.report.buffers)
    problems = _problems([*errors, *(e for rr in rank_reports for e in rr.report.errors)])
    summary = _Summary(sort_buffers(buffers, schema), schema, problems, tolerance, notes)
    origins: tuple[Origin, ...] | None = None
    if schema.has_inputs:
        order = schema.order
        found = [o for rr in rank_reports for o in rr.report.origins or ()]
        origins = tuple(sorted(found, key=lambda o: (o.step, order.get(o.group, len(order)),
                                                     o.name, o.rank)))  # fmt: skip
    work = total_work([rr.report.work for rr in rank_reports])
    all_skipped = [*skipped, *(s for rr in rank_reports for s in rr.report.skipped)]
    return summary.report(
        run_a, run_b, schema, buffers, all_skipped, tolerance, work, origins, rank_reports
    )


def exit_code(report: Report) -> int:
    return {"identical": EXIT_IDENTICAL, "diverged": EXIT_DIVERGED}.get(
        report.verdict, EXIT_TROUBLE
    )
