"""Statuses, verdicts and roles: their values, their order and their words.

The one home of every word a report uses for them, modelled on the
standard library's ``http.HTTPStatus``: each member (a ``Word``) carries
its ``value`` (the string results hold and the JSON writes), its
``phrase`` (how running text says it: ``2 only in run A``), its ``label``
(how a buffer's line or a group's row marks it: ``DIVERGED``) and its
``description`` (a sentence, for the README and for help). Renderers look
words up here (``STATUS["only_in_a"].phrase``); none spells one again, so
a new status or role is added here and nowhere else has to learn its words.

The collections are in report order: ``STATUSES`` in the order a step's
counts are given, ``GROUP_STATUSES``, ``VERDICTS`` and ``ROLES``; each has
its lookup by value (``STATUS``, ``GROUP_STATUS``, ``VERDICT``, ``ROLE``).
The sets (``DIVERGENT``, ``TROUBLE``, ``MATCHING``, ``DIFFERING``,
``TIMELINE``) say what a status means for the verdict and for the roles.
``verdict_word`` works out, once, when an ``identical`` verdict is
"identical within tolerance".
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    StatusValue = Literal[
        "equal",
        "diverged",
        "within_tolerance",
        "length_mismatch",
        "only_in_a",
        "only_in_b",
        "malformed",
        "error",
    ]
    VerdictValue = Literal["identical", "diverged", "error"]
    GroupStatusValue = Literal["equal", "within_tolerance", "diverged", "absent", "error"]
    RoleValue = Literal["origin", "receiver", "undetermined"]
else:
    StatusValue = VerdictValue = GroupStatusValue = RoleValue = str

__all__ = [
    "DIFFERING",
    "DIVERGENT",
    "GROUP_STATUS",
    "GROUP_STATUSES",
    "MATCHING",
    "ROLE",
    "ROLES",
    "STATUS",
    "STATUSES",
    "STATUS_ORDER",
    "TIMELINE",
    "TROUBLE",
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

    value: str
    phrase: str
    label: str
    description: str

    def __init__(self, value: str, phrase: str, description: str, label: str | None = None) -> None:
        self.value = value
        self.phrase = phrase
        self.label = phrase if label is None else label
        self.description = description

    def __repr__(self) -> str:
        return f"Word({self.value!r}, {self.phrase!r})"


def _lookup(words: tuple[Word, ...]) -> dict[str, Word]:
    return {w.value: w for w in words}


# --- a buffer at a step ----------------------------------------------------------

EQUAL = Word("equal", "equal", "every element is bitwise equal")
WITHIN_TOLERANCE = Word(
    "within_tolerance",
    "within tolerance",
    "some elements differ, and every one of them within the tolerance given",
)
DIVERGED = Word(
    "diverged", "diverged", "elements differ (beyond the tolerance, if one is given)", "DIVERGED"
)
LENGTH_MISMATCH = Word(
    "length_mismatch",
    "length mismatch",
    "the runs hold different numbers of elements",
    "LENGTH MISMATCH",
)
ONLY_IN_A = Word("only_in_a", "only in run A", "the buffer is in run A only")
ONLY_IN_B = Word("only_in_b", "only in run B", "the buffer is in run B only")
MALFORMED = Word(
    "malformed",
    "malformed",
    "a size that is not a whole number of elements, or does not fit the schema's shape",
    "MALFORMED",
)
ERROR = Word("error", "error", "the buffer could not be read or compared", "ERROR")

#: Buffer statuses, in the order a step's counts are given.
STATUSES = (
    EQUAL, WITHIN_TOLERANCE, DIVERGED, LENGTH_MISMATCH, ONLY_IN_A, ONLY_IN_B, MALFORMED, ERROR,
)  # fmt: skip
STATUS = _lookup(STATUSES)
STATUS_ORDER: tuple[str, ...] = tuple(w.value for w in STATUSES)

#: Statuses that make a run pair diverge.
DIVERGENT: frozenset[str] = frozenset({"diverged", "length_mismatch", "only_in_a", "only_in_b"})
#: Statuses that are trouble (exit 2): nothing trustworthy was compared.
TROUBLE: frozenset[str] = frozenset({"malformed", "error"})
#: Statuses of a buffer that matches: bitwise, or within the tolerance.
MATCHING: frozenset[str] = frozenset({"equal", "within_tolerance"})
#: Statuses of a buffer that was compared in both runs and differs: as an
#: input, it makes a receiver (one in a run only, or that could not be read,
#: leaves a role undetermined).
DIFFERING: frozenset[str] = frozenset({"diverged", "length_mismatch"})
#: Statuses the timeline counts: a buffer that is not equal (trouble is not a difference).
TIMELINE: frozenset[str] = DIVERGENT | {"within_tolerance"}


# --- a group at the first divergent step ---------------------------------------------

GROUP_STATUSES = (
    Word("equal", "equal", "every buffer of the group there is bitwise equal"),
    Word(
        "within_tolerance",
        "within tolerance",
        "no buffer of the group diverged, and some differ within the tolerance",
    ),
    Word("diverged", "diverged", "a buffer of the group diverged", "DIVERGED"),
    Word("absent", "absent", "the group has no buffer at that step"),
    Word("error", "error", "a buffer of the group could not be compared, none diverged"),
)
GROUP_STATUS = _lookup(GROUP_STATUSES)


# --- a run pair ----------------------------------------------------------------------

IDENTICAL = Word("identical", "identical", "every buffer is bit-for-bit equal")
#: An ``identical`` verdict reached through the tolerance (its value is ``identical``).
IDENTICAL_WITHIN_TOLERANCE = Word(
    "identical",
    "identical within tolerance",
    "no buffer diverged, and some differ only within the tolerance: not bit-identical",
)
VERDICTS = (
    IDENTICAL,
    Word("diverged", "diverged", "a buffer diverged"),
    Word("error", "error", "something could not be compared (exit 2), whatever else was found"),
)
VERDICT = _lookup(VERDICTS)


def verdict_word(verdict: str, n_within_tolerance: int) -> Word:
    """The word for a verdict; an ``identical`` one with buffers that differ
    within tolerance is "identical within tolerance" (not bit-identical)."""
    if verdict == IDENTICAL.value and n_within_tolerance:
        return IDENTICAL_WITHIN_TOLERANCE
    return VERDICT[verdict]


# --- where a divergence is born ---------------------------------------------------------

ORIGIN = Word(
    "origin",
    "origin",
    "the buffer diverged while every input it declares was dumped and matched (equal or "
    "within tolerance) at the step it names: the divergence was born here",
)
RECEIVER = Word(
    "receiver",
    "receiver",
    "the buffer diverged and an input it declares differs: it received the divergence",
)
UNDETERMINED = Word(
    "undetermined",
    "undetermined",
    "no input that was compared differs, but one is not dumped, or is missing, unreadable or "
    "malformed in a run at that step: born here or upstream, the dumps cannot tell",
)
#: Roles, from the most telling.
ROLES = (ORIGIN, RECEIVER, UNDETERMINED)
ROLE = _lookup(ROLES)
