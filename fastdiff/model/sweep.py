"""What a sweep finds: its summary, the identity classes and the runs left
out of them, and whether the diverging pairs share their first origin.

Computed by ``fastdiff.sweep``; worded by ``render.sweep``.
"""

from __future__ import annotations

from .exits import verdict_exit
from .statuses import Verdict
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .findings import Note, Unclassified
    from .results import Origin

__all__ = ["FirstOrigins", "SweepSummary", "UnclassifiedRun"]


class UnclassifiedRun(Value):
    """A run left out of the identity classes, and why: ``reason``
    (``statuses.Unclassified``); ``failed``: for ``pair_error``, the runs
    whose pair with it ended in error, so whether they are bit-identical is
    unknown."""

    __slots__ = ("failed", "reason", "run")

    run: str
    reason: Unclassified
    failed: tuple[str, ...]

    def __init__(self, run: str, reason: Unclassified, failed: tuple[str, ...] = ()) -> None:
        self.run = run
        self.reason = reason
        self.failed = failed


class FirstOrigins(Value):
    """Whether the diverging pairs of a sweep share their first origin.
    ``groups``: (first origin, indices of the pairs it is first in), in
    first-seen order; the origin is None for pairs that diverged with no
    origin found."""

    __slots__ = ("groups",)

    groups: tuple[tuple[Origin | None, tuple[int, ...]], ...]

    def __init__(self, groups: tuple[tuple[Origin | None, tuple[int, ...]], ...]) -> None:
        self.groups = groups

    @property
    def reproducible(self) -> bool | None:
        """One first origin in every diverging pair; None when no pair
        diverged, or none has an origin (nothing to tell)."""
        if all(o is None for o, _ in self.groups):
            return None
        return len(self.groups) == 1

    @property
    def n_diverging(self) -> int:
        """How many pairs diverged."""
        return sum(len(pairs) for _, pairs in self.groups)


class SweepSummary(Value):
    """What a sweep found, over the pairs that finished (``as_dict()`` gives
    it as plain data).

    ``classes``: the identity classes when asked for (``classes_of``), else
    None; ``unclassified``: the runs of ``classes_of`` in no class (a pair
    ended in error), None with ``classes``. ``error_and_diverged``: the pairs
    counted in ``error`` that also diverged (a divergence was found).
    ``first_origins``: whether the diverging pairs share their first origin
    (None: no schema declared inputs). ``notes``: the sweep's own remarks
    (the one schema it read every pair with, where pairs alone would differ).
    """

    __slots__ = (
        "cache_hits", "classes", "diverged", "elapsed_s", "error", "error_and_diverged",
        "first_origins", "identical", "interrupted", "notes", "pairs", "unclassified",
    )  # fmt: skip

    pairs: int
    identical: int
    diverged: int
    error: int
    classes: tuple[tuple[str, ...], ...] | None
    cache_hits: int
    elapsed_s: float
    interrupted: bool
    unclassified: tuple[UnclassifiedRun, ...] | None
    error_and_diverged: int
    first_origins: FirstOrigins | None
    notes: tuple[Note, ...]

    def __init__(
        self,
        pairs: int,
        identical: int,
        diverged: int,
        error: int,
        classes: tuple[tuple[str, ...], ...] | None,
        cache_hits: int,
        elapsed_s: float,
        interrupted: bool = False,
        unclassified: tuple[UnclassifiedRun, ...] | None = None,
        error_and_diverged: int = 0,
        first_origins: FirstOrigins | None = None,
        notes: tuple[Note, ...] = (),
    ) -> None:
        self.pairs = pairs
        self.identical = identical
        self.diverged = diverged
        self.error = error
        self.classes = classes
        self.cache_hits = cache_hits
        self.elapsed_s = elapsed_s
        self.interrupted = interrupted
        self.unclassified = unclassified
        self.error_and_diverged = error_and_diverged
        self.first_origins = first_origins
        self.notes = notes

    def __repr__(self) -> str:
        return (
            f"SweepSummary(pairs={self.pairs}, identical={self.identical}, "
            f"diverged={self.diverged}, error={self.error}, interrupted={self.interrupted})"
        )

    @property
    def verdict(self) -> Verdict:
        """The sweep's verdict, as a report's: any error, else any divergence."""
        if self.error:
            return Verdict.ERROR
        return Verdict.DIVERGED if self.diverged else Verdict.IDENTICAL

    @property
    def exit_code(self) -> int:
        return verdict_exit(self.verdict)
