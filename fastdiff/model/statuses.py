"""Statuses, verdicts, group statuses, roles and problem kinds: enum-like members.

Each member is the string it stands for (what results hold and the JSON
writes: ``"only_in_a"``), of a class of its own (``Status``, ``Verdict``,
``GroupStatus``, ``Role``, ``ProblemKind``), so code compares members, never
bare strings: ``b.status is Status.DIVERGED``, ``b.status in DIVERGENT``
(members are interned: one object per value and class). No words here: how
a report says a status (``only in run A``, ``DIVERGED``) is ``render.words``'.

The other jobs' members: ``StepStatus`` (a watch's step), ``StopReason``
(why a watch ended), ``RerunVerdict``, ``SourceKind`` (what ``stats``
read). The kinds of findings are ``findings``', the exit codes ``exits``'.

The collections are in report order: ``Status.ALL`` in the order a step's
counts are given (``STATUS_ORDER``), ``GroupStatus.ALL``, ``Verdict.ALL``,
``Role.ALL`` (from the most telling), ``ProblemKind.ALL``. The sets say what
a status means for the verdict and for the roles.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import ClassVar, Self

__all__ = [
    "DIFFERING",
    "DIVERGENT",
    "MATCHING",
    "STATUS_ORDER",
    "TIMELINE",
    "TROUBLE",
    "GroupStatus",
    "Member",
    "ProblemKind",
    "RerunVerdict",
    "Role",
    "SourceKind",
    "Status",
    "StepStatus",
    "StopReason",
    "Verdict",
]


class Member(str):
    """An enum-like member: a ``str`` (equal to, and hashed as, its value), one
    object per value and class. ``of(value)`` gives the member of a value
    (raising ValueError for another), ``ALL`` every member in order."""

    __slots__ = ()
    ALL: ClassVar[tuple[Self, ...]] = ()
    _by_value: ClassVar[dict[str, Self]] = {}

    def __new__(cls, value: str) -> Self:
        known = cls.__dict__.get("_by_value")
        if known is None:
            known = cls._by_value = {}
        member = known.get(value)
        if member is None:
            member = known[value] = super().__new__(cls, value)
            cls.ALL = (*cls.__dict__.get("ALL", ()), member)
        return member

    @classmethod
    def of(cls, value: str) -> Self:
        """The member whose value ``value`` is."""
        member = cls.__dict__.get("_by_value", {}).get(value)
        if member is None:
            raise ValueError(f"{value!r} is no {cls.__name__} (one of {', '.join(cls.ALL)})")
        return member

    @property
    def value(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.value.upper()}"

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return type(self).of, (self.value,)

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: object) -> Self:
        return self


class Status(Member):
    """A buffer at a step."""

    __slots__ = ()
    EQUAL: ClassVar[Status]
    WITHIN_TOLERANCE: ClassVar[Status]
    DIVERGED: ClassVar[Status]
    LENGTH_MISMATCH: ClassVar[Status]
    ONLY_IN_A: ClassVar[Status]
    ONLY_IN_B: ClassVar[Status]
    MALFORMED: ClassVar[Status]
    ERROR: ClassVar[Status]
    LABEL_DIFFERS: ClassVar[Status]


Status.EQUAL = Status("equal")  # every element is bitwise equal
Status.WITHIN_TOLERANCE = Status("within_tolerance")  # every difference within the tolerance
Status.DIVERGED = Status("diverged")  # elements differ beyond the tolerance, if one is given
Status.LENGTH_MISMATCH = Status("length_mismatch")  # the runs hold different numbers of elements
Status.ONLY_IN_A = Status("only_in_a")
Status.ONLY_IN_B = Status("only_in_b")
Status.MALFORMED = Status("malformed")  # not whole elements, or not the schema's shape
Status.ERROR = Status("error")  # could not be read or compared
# a label (a string or bytes beside the tensors: a path, a host name, a
# date) whose values differ: listed with both, never a divergence
Status.LABEL_DIFFERS = Status("label_differs")

#: Buffer statuses, in the order a step's counts are given.
STATUS_ORDER: tuple[Status, ...] = Status.ALL
#: Statuses that make a run pair diverge.
DIVERGENT: frozenset[Status] = frozenset(
    {Status.DIVERGED, Status.LENGTH_MISMATCH, Status.ONLY_IN_A, Status.ONLY_IN_B}
)
#: Statuses that are trouble (exit 2): nothing trustworthy was compared.
TROUBLE: frozenset[Status] = frozenset({Status.MALFORMED, Status.ERROR})
#: Statuses of a buffer that matches: bitwise, or within the tolerance.
MATCHING: frozenset[Status] = frozenset({Status.EQUAL, Status.WITHIN_TOLERANCE})
#: Statuses of a buffer that was compared in both runs and differs: as an
#: input, it makes a receiver (one in a run only, or that could not be read,
#: leaves a role undetermined).
DIFFERING: frozenset[Status] = frozenset({Status.DIVERGED, Status.LENGTH_MISMATCH})
#: Statuses the timeline counts: a buffer that is not equal (trouble is not a difference).
TIMELINE: frozenset[Status] = DIVERGENT | {Status.WITHIN_TOLERANCE}


class GroupStatus(Member):
    """A group at the first divergent step."""

    __slots__ = ()
    EQUAL: ClassVar[GroupStatus]
    WITHIN_TOLERANCE: ClassVar[GroupStatus]
    DIVERGED: ClassVar[GroupStatus]
    ABSENT: ClassVar[GroupStatus]
    ERROR: ClassVar[GroupStatus]


GroupStatus.EQUAL = GroupStatus("equal")
GroupStatus.WITHIN_TOLERANCE = GroupStatus("within_tolerance")
GroupStatus.DIVERGED = GroupStatus("diverged")
GroupStatus.ABSENT = GroupStatus("absent")  # no buffer of it at that step
GroupStatus.ERROR = GroupStatus("error")  # a buffer could not be compared, none diverged


class Verdict(Member):
    """A run pair: identical (exit 0), diverged (1), error (2)."""

    __slots__ = ()
    IDENTICAL: ClassVar[Verdict]
    DIVERGED: ClassVar[Verdict]
    ERROR: ClassVar[Verdict]


Verdict.IDENTICAL = Verdict("identical")
Verdict.DIVERGED = Verdict("diverged")
Verdict.ERROR = Verdict("error")


class Role(Member):
    """Where a buffer that diverged stands in the dataflow its schema declares."""

    __slots__ = ()
    ORIGIN: ClassVar[Role]
    RECEIVER: ClassVar[Role]
    UNDETERMINED: ClassVar[Role]


Role.ORIGIN = Role("origin")  # every input it declares matched: born here
Role.RECEIVER = Role("receiver")  # an input it declares differs
Role.UNDETERMINED = Role("undetermined")  # an input could not be compared


class ProblemKind(Member):
    """What a ``Problem`` is about, so a caller can act on it without parsing
    its message:

    ``missing``    a run folder or manifest that does not exist, or a rank one
                   run of several ranks lacks;
    ``unreadable`` no permission, an I/O error, a broken link, a FIFO or device;
    ``changed``    the file changed (or vanished) while fastdiff read it; in a
                   watch, also after its step was compared, or it appeared then,
                   or one run lacks it (or holds it shorter) while still writing;
    ``malformed``  a size that is not a whole number of elements, a damaged
                   manifest, a header refused;
    ``no_dumps``   a run side that holds no dumps at all;
    ``name``       a dump name fastdiff cannot use (not UTF-8, a duplicate step);
    ``mismatch``   digests that cannot be compared (different chunk sizes), or a
                   run of several ranks against a run of one;
    ``undecided``  bits that differ where a tolerance was asked but cannot be
                   judged: digests alone hold no values;
    ``worker``     a worker process died or failed running a task;
    ``error``      anything else.
    """

    __slots__ = ()
    MISSING: ClassVar[ProblemKind]
    UNREADABLE: ClassVar[ProblemKind]
    CHANGED: ClassVar[ProblemKind]
    MALFORMED: ClassVar[ProblemKind]
    NO_DUMPS: ClassVar[ProblemKind]
    NAME: ClassVar[ProblemKind]
    MISMATCH: ClassVar[ProblemKind]
    UNDECIDED: ClassVar[ProblemKind]
    WORKER: ClassVar[ProblemKind]
    ERROR: ClassVar[ProblemKind]


ProblemKind.MISSING = ProblemKind("missing")
ProblemKind.UNREADABLE = ProblemKind("unreadable")
ProblemKind.CHANGED = ProblemKind("changed")
ProblemKind.MALFORMED = ProblemKind("malformed")
ProblemKind.NO_DUMPS = ProblemKind("no_dumps")
ProblemKind.NAME = ProblemKind("name")
ProblemKind.MISMATCH = ProblemKind("mismatch")
ProblemKind.UNDECIDED = ProblemKind("undecided")
ProblemKind.WORKER = ProblemKind("worker")
ProblemKind.ERROR = ProblemKind("error")


class StepStatus(Member):
    """A step of a watch (``model.watch.StepReport``): ``diverged`` when a
    buffer diverged, else ``error`` when a buffer or the step had trouble,
    else ``equal`` (within tolerance included)."""

    __slots__ = ()
    EQUAL: ClassVar[StepStatus]
    DIVERGED: ClassVar[StepStatus]
    ERROR: ClassVar[StepStatus]


StepStatus.EQUAL = StepStatus("equal")
StepStatus.DIVERGED = StepStatus("diverged")
StepStatus.ERROR = StepStatus("error")


class StopReason(Member):
    """Why a watch ended (``model.watch.WatchSummary.stopped``)."""

    __slots__ = ()
    DIVERGED: ClassVar[StopReason]
    IDLE: ClassVar[StopReason]
    INTERRUPTED: ClassVar[StopReason]
    ERROR: ClassVar[StopReason]


StopReason.DIVERGED = StopReason("diverged")  # a step diverged (and --keep-going was not given)
StopReason.IDLE = StopReason("idle")  # both runs wrote nothing for the idle timeout
StopReason.INTERRUPTED = StopReason("interrupted")  # Ctrl-C
StopReason.ERROR = StopReason("error")  # trouble: nothing more could be compared


class RerunVerdict(Member):
    """A rerun (``model.rerun.RerunResult``): its arms are bit-identical
    (exit 0), one diverges from arm 1 (1), trouble (2), or Ctrl-C (130)."""

    __slots__ = ()
    DETERMINISTIC: ClassVar[RerunVerdict]
    NONDETERMINISTIC: ClassVar[RerunVerdict]
    ERROR: ClassVar[RerunVerdict]
    INTERRUPTED: ClassVar[RerunVerdict]


RerunVerdict.DETERMINISTIC = RerunVerdict("deterministic")
RerunVerdict.NONDETERMINISTIC = RerunVerdict("nondeterministic")
RerunVerdict.ERROR = RerunVerdict("error")
RerunVerdict.INTERRUPTED = RerunVerdict("interrupted")


class SourceKind(Member):
    """What a run was read from (``model.stats.RunStats.source``)."""

    __slots__ = ()
    FOLDER: ClassVar[SourceKind]
    MANIFEST: ClassVar[SourceKind]


SourceKind.FOLDER = SourceKind("folder")
SourceKind.MANIFEST = SourceKind("manifest")
