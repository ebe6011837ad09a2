"""Result types: immutable values (``Value`` slots classes), the data every
renderer reads.

``BufferResult`` is one buffer at one step: who it is (step, name, group,
dtype, status, element counts, paths, message) and the facts compared
about it, one per entry of ``model.facts.FACTS`` (each readable as an
attribute by its name). ``Report`` is one run pair, with its ``timeline``
(``TimelineRow``: how the divergence spreads, step by step and group by
group) and ``notes``. Field and fact names are the JSON contract
(``render.json``).
"""

from __future__ import annotations

from .facts import COUNT_FIELDS, RESULT_FACTS, UNKNOWN, named_facts
from .statuses import DIVERGENT, GroupStatus, ProblemKind, Status, Verdict
from .statuses import Role as RoleKind
from .value import Value, plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .findings import Born, Cause, Cell, HeaderChange, Note, RankPattern
    from .selection import Selection

__all__ = [
    "COUNT_FIELDS",
    "PROBLEM_KINDS",
    "WORK_COUNTS",
    "BufferResult",
    "GroupVerdict",
    "Origin",
    "Problem",
    "RankReport",
    "Report",
    "Role",
    "Skipped",
    "StepSummary",
    "Structure",
    "TimelineRow",
    "Work",
    "total_work",
]

#: What a Problem is about (``Problem.kind``): ``statuses.ProblemKind``.
PROBLEM_KINDS = ProblemKind.ALL

Number = int | float


class BufferResult(Value):
    """One buffer at one step.

    ``facts``: the values of ``RESULT_FACTS`` in their order (see
    ``model.facts``); each is also an attribute by its name (``b.n_diff``).
    ``role``: where a buffer that diverged stands in the dataflow its schema
    declares (``Role``; None without declared inputs); ``rank``: the rank
    of a run written by several (None: a run of one).
    Pass them as ``facts`` or by name (``n_diff=0``); facts not given are
    None. Where elements were compared, the counts (``COUNT_FIELDS``) are
    ints, 0 when nothing differs; where they were not (a buffer in one run
    only, malformed, an error, a prefix a manifest's digests cannot decide)
    they are None.

    ``change``: for a buffer whose files' headers disagree (dtype or shape:
    it diverged, and nothing more was compared), how (``HeaderChange``).

    ``size_a``, ``size_b``: for a ``malformed`` buffer (whose element counts
    are None), its files' sizes in bytes (None for a run without it); None
    for every other status. A malformed buffer whose sizes differ is known
    to differ between the runs: it ``diverges``.
    """

    __slots__ = (
        "change",
        "dtype",
        "facts",
        "group",
        "message",
        "n_elements_a",
        "n_elements_b",
        "name",
        "path_a",
        "path_b",
        "rank",
        "role",
        "size_a",
        "size_b",
        "status",
        "step",
    )

    def __init__(
        self,
        step: int,
        name: str,
        group: str,
        dtype: str,
        status: Status,
        n_elements_a: int | None = None,
        n_elements_b: int | None = None,
        path_a: str | None = None,
        path_b: str | None = None,
        message: str | None = None,
        facts: tuple[Any, ...] | None = None,
        size_a: int | None = None,
        size_b: int | None = None,
        *,
        role: Role | None = None,
        rank: int | None = None,
        change: HeaderChange | None = None,
        **named: Any,
    ) -> None:
        self.step = step
        self.name = name
        self.group = group
        self.dtype = dtype
        self.status = status
        self.n_elements_a = n_elements_a
        self.n_elements_b = n_elements_b
        self.path_a = path_a
        self.path_b = path_b
        self.message = message
        self.size_a = size_a
        self.size_b = size_b
        self.role = role
        self.rank = rank
        self.change = change
        if named:
            if facts is not None:
                raise TypeError("BufferResult: give facts as a tuple or by name, not both")
            facts = named_facts(named)
        elif facts is None:
            facts = UNKNOWN
        elif len(facts) != len(RESULT_FACTS):
            raise TypeError(f"BufferResult: {len(facts)} facts, not {len(RESULT_FACTS)}")
        self.facts = facts

    def __repr__(self) -> str:
        named = [f"{k}={getattr(self, k)!r}" for k in self._fields if k != "facts"]
        named += [f"{k}={v!r}" for k, v in zip(_FACT_NAMES, self.facts, strict=True)]
        return f"BufferResult({', '.join(named)})"

    @property
    def diverges(self) -> bool:
        """The runs are known to differ in this buffer: a divergent status, or
        a malformed buffer whose files differ in size (or that one run lacks)."""
        return self.status in DIVERGENT or (
            self.status == "malformed" and self.size_a != self.size_b
        )

    def with_role(self, role: Role | None) -> BufferResult:
        """A copy with ``role`` (the roles stage makes thousands: no ``replace``)."""
        new = _new(BufferResult)
        for k in _SLOTS:
            setattr(new, k, getattr(self, k))
        new.role = role
        return new

    def replace(self, **changes: Any) -> BufferResult:
        """A copy with the given fields or facts changed."""
        values = {k: getattr(self, k) for k in self._fields if k != "facts"}
        facts = dict(zip(_FACT_NAMES, self.facts, strict=True))
        for k, v in changes.items():
            (facts if k in facts else values)[k] = v
        return BufferResult(**values, facts=named_facts(facts))

    def as_dict(self) -> dict[str, Any]:
        """Plain data: the fields, then every fact by its name (as values, not
        as the JSON report writes them: see ``render.json.buffer_dict``)."""
        d = {k: plain(getattr(self, k)) for k in self._fields if k != "facts"}
        d.update((k, plain(v)) for k, v in zip(_FACT_NAMES, self.facts, strict=True))
        return d


_FACT_NAMES = tuple(f.name for f in RESULT_FACTS)
_SLOTS = BufferResult.__slots__
_new = object.__new__


def _fact_property(i: int, name: str) -> property:
    def get(self: BufferResult) -> Any:
        return self.facts[i]

    get.__name__ = name
    return property(get, doc=f"The fact {name!r} (``model.facts.FACTS``).")


for _i, _name in enumerate(_FACT_NAMES):
    setattr(BufferResult, _name, _fact_property(_i, _name))
del _i, _name


class Role(Value):
    """Where a buffer that diverged stands in the dataflow its schema declares
    (``stages.roles``): ``kind`` (``statuses.ROLES``: origin, receiver,
    undetermined), the declared inputs that differ and those that could not
    be compared (not dumped, in one run only, unreadable or malformed), as
    written (``name@prev`` kept), and ``prev_step``: the step its ``@prev``
    inputs were read at (None: it has none, or no earlier step is held).
    ``inputs``: every input that counted (those declared, but ``@prev`` ones
    at step 0, which has no earlier state), in declared order."""

    __slots__ = ("differing_inputs", "inputs", "kind", "prev_step", "undumped_inputs")

    def __init__(
        self,
        kind: RoleKind,
        differing_inputs: tuple[str, ...] = (),
        undumped_inputs: tuple[str, ...] = (),
        prev_step: int | None = None,
        inputs: tuple[str, ...] = (),
    ) -> None:
        self.kind = kind
        self.differing_inputs = differing_inputs
        self.undumped_inputs = undumped_inputs
        self.prev_step = prev_step
        self.inputs = inputs


class Origin(Value):
    """A buffer where a divergence was born: at ``step``, on ``rank`` (None: a
    run of one rank)."""

    __slots__ = ("group", "name", "rank", "step")

    def __init__(self, step: int, name: str, group: str, rank: int | None = None) -> None:
        self.step = step
        self.name = name
        self.group = group
        self.rank = rank


class GroupVerdict(Value):
    """One group at the first divergent step. ``status``: ``diverged`` (some
    buffer diverges), ``error``, ``within_tolerance`` (bits differ, all within
    the tolerance), ``equal``, or ``absent`` (no buffer of it at that step).
    ``magnitude``: "rounding" or "large" over its diverged buffers (or, when
    it is within tolerance, over those; None: none has one, e.g. only a
    buffer missing from a run), as the timeline's row of the group at that
    step says; ``hint``: the schema's hint of the group (what to inspect);
    ``cause``: for a group that diverged, what the size of its differences
    points at (``findings.Cause``; ``render.hints`` words the two together).
    """

    __slots__ = ("cause", "diverged", "hint", "key", "magnitude", "status", "title")

    def __init__(
        self,
        key: str,
        title: str,
        status: GroupStatus,
        diverged: tuple[str, ...],
        hint: str,
        magnitude: str | None = None,
        cause: Cause | None = None,
    ) -> None:
        self.key = key
        self.title = title
        self.status = status
        self.diverged = diverged
        self.hint = hint
        self.magnitude = magnitude
        self.cause = cause


class TimelineRow(Value):
    """One group at one step where some of its buffers are not equal
    (``statuses.TIMELINE``): how many (``n_buffers``), their differing
    elements (``n_diff``, beyond tolerance, summed; None where none was
    compared), the largest ``max_abs_delta`` and ``max_ulp`` among them, and
    the ``magnitude``: "large" if any buffer's is, else "rounding" if any
    buffer's is, else None; ``cell``: what the timeline table shows for it
    (``findings.Cell``: its largest ULP distance, its largest |A-B|, or a
    word: a NaN or infinity differs, a buffer in one run only, ...)."""

    __slots__ = (
        "cell", "group", "magnitude", "max_abs_delta", "max_ulp", "n_buffers", "n_diff", "step",
    )  # fmt: skip

    def __init__(
        self,
        step: int,
        group: str,
        n_buffers: int,
        n_diff: int | None,
        max_abs_delta: int | float | None,
        max_ulp: int | None,
        magnitude: str | None,
        cell: Cell | None = None,
    ) -> None:
        self.step = step
        self.group = group
        self.n_buffers = n_buffers
        self.n_diff = n_diff
        self.max_abs_delta = max_abs_delta
        self.max_ulp = max_ulp
        self.magnitude = magnitude
        self.cell = cell


class StepSummary(Value):
    """One step: how many buffers have each status, and the groups diverging."""

    __slots__ = ("counts", "diverged_groups", "step")

    def __init__(
        self, step: int, counts: tuple[tuple[str, int], ...], diverged_groups: tuple[str, ...]
    ) -> None:
        self.step = step
        self.counts = counts  # (status, how many), in a fixed order
        self.diverged_groups = diverged_groups


class Skipped(Value):
    """An entry of a run folder that is not compared, and why."""

    __slots__ = ("path", "reason")

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason


class Problem(Value):
    """An error about one path: what is wrong and what to do, in one line.

    ``kind`` lets a caller act on it without parsing the message: one of
    ``PROBLEM_KINDS``.
    """

    __slots__ = ("kind", "message", "path")

    def __init__(self, path: str, message: str, kind: str = "error") -> None:
        self.path = path
        self.message = message
        self.kind = kind


class Work(Value):
    """What the comparison did, for the curious and for benchmarks:
    ``files_hashed``/``bytes_hashed``, buffers read to hash them (not
    digests a manifest or the cache supplied); ``files_verified``/
    ``bytes_verified``, cache hits read again to verify the cache
    (``--cache-verify``), counted apart; pairs and bytes a kernel read."""

    __slots__ = (
        "bytes_hashed",
        "bytes_scanned",
        "bytes_verified",
        "elapsed_s",
        "engine",
        "executor",
        "files_hashed",
        "files_verified",
        "jobs",
        "pairs_scanned",
    )

    def __init__(
        self,
        files_hashed: int = 0,
        bytes_hashed: int = 0,
        files_verified: int = 0,
        bytes_verified: int = 0,
        pairs_scanned: int = 0,
        bytes_scanned: int = 0,
        engine: str | None = None,
        executor: str = "serial",
        jobs: int = 1,
        elapsed_s: float = 0.0,
    ) -> None:
        self.files_hashed = files_hashed
        self.bytes_hashed = bytes_hashed
        self.files_verified = files_verified
        self.bytes_verified = bytes_verified
        self.pairs_scanned = pairs_scanned
        self.bytes_scanned = bytes_scanned
        self.engine = engine
        self.executor = executor
        self.jobs = jobs
        self.elapsed_s = elapsed_s


#: What ``total_work`` adds up: the counts of a ``Work``.
WORK_COUNTS = (
    "files_hashed",
    "bytes_hashed",
    "files_verified",
    "bytes_verified",
    "pairs_scanned",
    "bytes_scanned",
)


def total_work(
    works: Sequence[Work],
    executor: str | None = None,
    jobs: int | None = None,
    elapsed_s: float | None = None,
) -> Work:
    """The work of several comparisons as one (the ranks of a run pair, the
    steps of a watch): every count of ``WORK_COUNTS`` summed, the engines
    joined; ``executor``, ``jobs`` and ``elapsed_s`` are the whole's (None:
    the first work's executor and jobs, the longest elapsed time)."""
    engines = sorted({e for w in works if w.engine for e in w.engine.split(",")})
    counts = {key: sum(getattr(w, key) for w in works) for key in WORK_COUNTS}
    return Work(
        **counts,
        engine=",".join(engines) or None,
        executor=executor if executor is not None else works[0].executor if works else "serial",
        jobs=jobs if jobs is not None else works[0].jobs if works else 1,
        elapsed_s=elapsed_s
        if elapsed_s is not None
        else max((w.elapsed_s for w in works), default=0.0),
    )


class Structure(Value):
    """How two traces' sequences of records compare (``stages.structure``):
    where they first part, or ``step`` None when they agree at every step
    both hold. ``step``: the first step whose sequences differ; ``after``:
    the last record both ran before they part there (None: they part at the
    first record); ``a``, ``b``: what each runs there (an op, ``aten.add``,
    or a module's record; None: that trace's step ends there), and
    ``a_record``, ``b_record`` the records' names; ``rank``: the rank of a
    run of several (None: a run of one). Records after the parting are
    still compared where their names match."""

    __slots__ = ("a", "a_record", "after", "b", "b_record", "rank", "step")

    def __init__(
        self,
        step: int | None = None,
        after: str | None = None,
        a: str | None = None,
        b: str | None = None,
        a_record: str | None = None,
        b_record: str | None = None,
        rank: int | None = None,
    ) -> None:
        self.step = step
        self.after = after
        self.a = a
        self.b = b
        self.a_record = a_record
        self.b_record = b_record
        self.rank = rank

    @property
    def parted(self) -> bool:
        """The traces' sequences differ at some step both hold."""
        return self.step is not None


class Report(Value):
    """One run pair compared: the verdict, per-group and per-step summaries,
    every buffer (sorted by step, pipeline order, name), what was skipped and
    the errors; the ``timeline`` (step-major, groups in pipeline order) and
    ``notes``, one-line remarks on how the comparison was read (such as
    buffers compared as raw bytes).

    ``origins``: where the divergence was born (``Origin``, in step order,
    then pipeline order), from the inputs the schema declares; None when it
    declares none. ``ranks``: for runs written by several ranks, each rank's
    own report (``RankReport``, in rank order), None for a run of one; the
    report's buffers are then every rank's (each with its ``rank``), its
    verdict the worst and its first divergent step the earliest of them.
    ``selection``: the steps and buffers the comparison was asked to look at
    (``model.selection.Selection``: what it does not select was neither read nor
    judged), None for every step and buffer.
    ``born``: where the divergence was born, summed up (``findings.Born``;
    None without declared inputs or a divergence); ``rank_pattern``: for
    runs of several ranks, what their first origins point at
    (``findings.RankPattern``; None where no rank diverged or no input is
    declared).
    ``structure``: for two traces (``fastdiff.trace``), how their sequences
    of records compare (``Structure``: where they first part, if they do);
    None for runs that are not both traces."""

    __slots__ = (
        "born",
        "buffers",
        "errors",
        "first_divergent_groups",
        "first_divergent_step",
        "groups",
        "notes",
        "origins",
        "rank_pattern",
        "ranks",
        "run_a",
        "run_b",
        "schema",
        "selection",
        "skipped",
        "steps",
        "structure",
        "timeline",
        "tolerance",
        "verdict",
        "work",
    )

    def __init__(
        self,
        run_a: str,
        run_b: str,
        schema: str,
        verdict: Verdict,
        first_divergent_step: int | None,
        first_divergent_groups: tuple[str, ...],
        groups: tuple[GroupVerdict, ...],
        steps: tuple[StepSummary, ...],
        buffers: tuple[BufferResult, ...],
        skipped: tuple[Skipped, ...],
        errors: tuple[Problem, ...],
        tolerance: dict[str, object] | None = None,
        work: Work | None = None,
        timeline: tuple[TimelineRow, ...] = (),
        notes: tuple[Note, ...] = (),
        origins: tuple[Origin, ...] | None = None,
        ranks: tuple[RankReport, ...] | None = None,
        selection: Selection | None = None,
        structure: Structure | None = None,
        born: Born | None = None,
        rank_pattern: RankPattern | None = None,
    ) -> None:
        self.run_a = run_a
        self.run_b = run_b
        self.schema = schema
        self.verdict = Verdict.of(verdict)  # a member, whoever made it
        self.first_divergent_step = first_divergent_step
        self.first_divergent_groups = first_divergent_groups
        self.groups = groups
        self.steps = steps
        self.buffers = buffers
        self.skipped = skipped
        self.errors = errors
        self.tolerance = {} if tolerance is None else tolerance
        self.work = Work() if work is None else work
        self.timeline = timeline
        self.notes = notes
        self.origins = origins
        self.ranks = ranks
        self.selection = selection
        self.structure = structure
        self.born = born
        self.rank_pattern = rank_pattern

    @property
    def diverges(self) -> bool:
        """A divergence was found, whatever else went wrong: also under the
        verdict ``error`` (exit 2), when ``first_divergent_step`` is set."""
        return self.first_divergent_step is not None

    @property
    def next_groups(self) -> tuple[str, ...]:
        """The first divergent groups whose hint says what to inspect next, in
        pipeline order: where the schema declares inputs, those holding an
        origin at the first divergent step, or, where no buffer there is one,
        those holding a diverging buffer there that is not a receiver
        (undetermined, or declaring no inputs); never a group that only
        received the divergence. Without declared inputs, every first
        divergent group."""
        step = self.first_divergent_step
        if step is None or self.origins is None:
            return self.first_divergent_groups
        born: set[str] = set()
        unknown: set[str] = set()
        for b in self.buffers:
            if b.step != step or not b.diverges:
                continue
            kind = None if b.role is None else b.role.kind
            if kind == "origin":
                born.add(b.group)
            elif kind != "receiver":
                unknown.add(b.group)
        keep = born or unknown
        return tuple(g for g in self.first_divergent_groups if g in keep) or (
            self.first_divergent_groups
        )

    @property
    def n_within_tolerance(self) -> int:
        """How many buffers differ only within tolerance."""
        return sum(b.status == "within_tolerance" for b in self.buffers)

    @property
    def bit_identical(self) -> bool:
        """Every buffer bitwise equal: an ``identical`` verdict reached through
        the tolerance (a ``within_tolerance`` buffer) is not."""
        return self.verdict == "identical" and all(b.status == "equal" for b in self.buffers)


class RankReport(Value):
    """One rank of runs written by several: ``rank`` and its own report (its
    runs are the rank's folders)."""

    __slots__ = ("rank", "report")

    def __init__(self, rank: int, report: Report) -> None:
        self.rank = rank
        self.report = report

    @property
    def first_origin(self) -> Origin | None:
        """The rank's earliest origin (step, then pipeline order)."""
        origins = self.report.origins
        return origins[0] if origins else None
