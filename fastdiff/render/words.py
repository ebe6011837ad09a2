"""The words of statuses, verdicts and roles: how a report says each member.

The one home of those words (modelled on the standard library's
``http.HTTPStatus``): each ``Word`` carries its member's ``value`` (the
``fastdiff.model.statuses`` member), its ``phrase`` (how running text says
it: ``2 only in run A``), its ``label`` (how a buffer's line or a group's
row marks it: ``DIVERGED``) and its ``description`` (a sentence, for the
README and for help). Renderers look words up here
(``STATUS[Status.ONLY_IN_A].phrase``); none spells one again, so a new status
or role is added to the model and here, and nowhere else has to learn its
words. ``verdict_word`` works out when an ``identical`` verdict is
"identical within tolerance".
"""

from __future__ import annotations

from ..model.statuses import GroupStatus, Role, Status, Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model.results import Report

__all__ = [
    "GROUP_STATUS",
    "GROUP_STATUSES",
    "ROLE",
    "ROLES",
    "STATUS",
    "STATUSES",
    "VERDICT",
    "VERDICTS",
    "Word",
    "verdict_word",
]


class Word:
    """A status, verdict or role: ``value`` (as results and the JSON hold it),
    ``phrase`` (in running text), ``label`` (marking a line; the phrase
    unless given) and ``description``. An immutable value."""

    __slots__ = ("description", "label", "phrase", "value")

    value: Status | GroupStatus | Verdict | Role
    phrase: str
    label: str
    description: str

    def __init__(
        self, value: Status | GroupStatus | Verdict | Role, phrase: str, description: str,
        label: str | None = None,
    ) -> None:  # fmt: skip
        self.value = value
        self.phrase = phrase
        self.label = phrase if label is None else label
        self.description = description

    def __repr__(self) -> str:
        return f"Word({self.value!r}, {self.phrase!r})"


def _lookup(words: tuple[Word, ...]) -> dict[str, Word]:
    return {w.value: w for w in words}


# --- a buffer at a step ----------------------------------------------------------

EQUAL = Word(Status.EQUAL, "equal", "every element is bitwise equal")
WITHIN_TOLERANCE = Word(
    Status.WITHIN_TOLERANCE,
    "within tolerance",
    "some elements differ, and every one of them within the tolerance given",
)
DIVERGED = Word(
    Status.DIVERGED,
    "diverged",
    "elements differ (beyond the tolerance, if one is given)",
    "DIVERGED",
)
LENGTH_MISMATCH = Word(
    Status.LENGTH_MISMATCH,
    "length mismatch",
    "the runs hold different numbers of elements",
    "LENGTH MISMATCH",
)
ONLY_IN_A = Word(Status.ONLY_IN_A, "only in run A", "the buffer is in run A only")
ONLY_IN_B = Word(Status.ONLY_IN_B, "only in run B", "the buffer is in run B only")
MALFORMED = Word(
    Status.MALFORMED,
    "malformed",
    "a size that is not a whole number of elements, or does not fit the schema's shape",
    "MALFORMED",
)
ERROR = Word(Status.ERROR, "error", "the buffer could not be read or compared", "ERROR")
LABEL_DIFFERS = Word(
    Status.LABEL_DIFFERS,
    "label differs",
    "a label (a string or bytes beside the tensors: a path, a host name, a date) differs; "
    "listed with both values, it is no divergence",
    "LABEL DIFFERS",
)

#: Buffer statuses' words, in the order a step's counts are given.
STATUSES = (
    EQUAL, WITHIN_TOLERANCE, DIVERGED, LENGTH_MISMATCH, ONLY_IN_A, ONLY_IN_B, MALFORMED, ERROR,
    LABEL_DIFFERS,
)  # fmt: skip
STATUS = _lookup(STATUSES)


# --- a group at the first divergent step ---------------------------------------------

GROUP_STATUSES = (
    Word(GroupStatus.EQUAL, "equal", "every buffer of the group there is bitwise equal"),
    Word(
        GroupStatus.WITHIN_TOLERANCE,
        "within tolerance",
        "no buffer of the group diverged, and some differ within the tolerance",
    ),
    Word(GroupStatus.DIVERGED, "diverged", "a buffer of the group diverged", "DIVERGED"),
    Word(GroupStatus.ABSENT, "absent", "the group has no buffer at that step"),
    Word(GroupStatus.ERROR, "error", "a buffer of the group could not be compared, none diverged"),
)
GROUP_STATUS = _lookup(GROUP_STATUSES)


# --- a run pair ----------------------------------------------------------------------

IDENTICAL = Word(Verdict.IDENTICAL, "identical", "every buffer is bit-for-bit equal")
#: An ``identical`` verdict reached through the tolerance (its value is ``identical``).
IDENTICAL_WITHIN_TOLERANCE = Word(
    Verdict.IDENTICAL,
    "identical within tolerance",
    "no buffer diverged, and some differ only within the tolerance: not bit-identical",
)
VERDICTS = (
    IDENTICAL,
    Word(Verdict.DIVERGED, "diverged", "a buffer diverged"),
    Word(
        Verdict.ERROR, "error", "something could not be compared (exit 2), whatever else was found"
    ),
)
VERDICT = _lookup(VERDICTS)


def verdict_word(report: Report) -> Word:
    """The word for a report's verdict; an ``identical`` one with buffers that
    differ within tolerance is "identical within tolerance" (not bit-identical)."""
    if report.verdict == Verdict.IDENTICAL and report.n_within_tolerance:
        return IDENTICAL_WITHIN_TOLERANCE
    return VERDICT[report.verdict]


# --- where a divergence is born ---------------------------------------------------------

ORIGIN = Word(
    Role.ORIGIN,
    "origin",
    "the buffer diverged while every input it declares was dumped and matched (equal or "
    "within tolerance) at the step it names: the divergence was born here",
)
RECEIVER = Word(
    Role.RECEIVER,
    "receiver",
    "the buffer diverged and an input it declares differs: it received the divergence",
)
UNDETERMINED = Word(
    Role.UNDETERMINED,
    "undetermined",
    "no input that was compared differs, but one is not dumped, or is missing, unreadable or "
    "malformed in a run at that step: born here or upstream, the dumps cannot tell",
)
#: Roles, from the most telling.
ROLES = (ORIGIN, RECEIVER, UNDETERMINED)
ROLE = _lookup(ROLES)
