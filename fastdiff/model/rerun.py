"""What a rerun finds: each arm, the comparison of arm 1 with the others,
and whether the divergence reproduces.

``fastdiff.rerun`` runs the arms and computes the findings
(``RerunFindings``: each arm's comparison with arm 1, the first arm to
diverge, whether the divergence shows in every arm at the same place, and
whether the diverging arms share their first origin); ``render.rerun``
words them.
"""

from __future__ import annotations

from .exits import EXIT_DIVERGED, EXIT_IDENTICAL, EXIT_INTERRUPTED, EXIT_TROUBLE
from .statuses import RerunVerdict, Verdict
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .findings import OriginAgreement, Reproduction
    from .results import Origin, Report
    from .sweep import SweepSummary

__all__ = ["ArmComparison", "ArmResult", "RerunFindings", "RerunResult"]


class ArmResult(Value):
    """One arm, once it ended: its number (1-based), run folder, exit status
    (negative: killed by that signal; None: never started), seconds, the
    last lines of its stderr, where its output is, and ``problem``: why it
    failed, or None."""

    __slots__ = (
        "elapsed_s", "err_path", "folder", "index", "out_path", "problem", "returncode",
        "stderr_tail",
    )  # fmt: skip

    def __init__(
        self, index: int, folder: str, returncode: int | None, elapsed_s: float,
        stderr_tail: tuple[str, ...], out_path: str, err_path: str, problem: str | None,
    ) -> None:  # fmt: skip
        self.index = index
        self.folder = folder
        self.returncode = returncode
        self.elapsed_s = elapsed_s
        self.stderr_tail = stderr_tail
        self.out_path = out_path
        self.err_path = err_path
        self.problem = problem

    def __repr__(self) -> str:
        return f"ArmResult({self.index}, {self.folder!r}, returncode={self.returncode})"


class ArmComparison(Value):
    """Arm ``arm`` against arm 1: ``verdict`` (of their report: ``error``
    when they could not be compared), the first step where they diverge
    (None: they do not) and the buffers that diverge there (``first_buffers``,
    in report order), and the first origin (None: none found, or no input
    declared)."""

    __slots__ = ("arm", "first_buffers", "first_step", "origin", "verdict")

    def __init__(
        self,
        arm: int,
        verdict: Verdict,
        first_step: int | None = None,
        first_buffers: tuple[str, ...] = (),
        origin: Origin | None = None,
    ) -> None:
        self.arm = arm
        self.verdict = verdict
        self.first_step = first_step
        self.first_buffers = first_buffers
        self.origin = origin

    @property
    def diverges(self) -> bool:
        return self.first_step is not None


class RerunFindings(Value):
    """What the comparisons of a rerun's arms show, once every arm succeeded.

    ``arms``: each other arm against arm 1 (``ArmComparison``, in arm
    order); ``errors``: the arms that could not be compared with arm 1;
    ``first``: the arm that diverges first (the earliest first divergent
    step, then the lowest arm; None: none diverges); ``reproduces``: whether
    the divergence shows in every arm, and at the same place
    (``findings.Reproduction``: its kind, and the diverging arms' first
    divergent steps; None: none diverges); ``origins``: whether the
    diverging arms share their first origin (``findings.OriginAgreement``;
    None: fewer than two diverge, or the schema declares no inputs)."""

    __slots__ = ("arms", "errors", "first", "origins", "reproduces")

    def __init__(
        self,
        arms: tuple[ArmComparison, ...],
        errors: tuple[int, ...] = (),
        first: int | None = None,
        reproduces: Reproduction | None = None,
        origins: OriginAgreement | None = None,
    ) -> None:
        self.arms = arms
        self.errors = errors
        self.first = first
        self.reproduces = reproduces
        self.origins = origins

    @property
    def diverging(self) -> tuple[ArmComparison, ...]:
        """The arms that diverge from arm 1, in arm order."""
        return tuple(a for a in self.arms if a.diverges)

    def arm(self, index: int) -> ArmComparison | None:
        """The comparison of arm ``index`` with arm 1."""
        return next((a for a in self.arms if a.arm == index), None)


class RerunResult(Value):
    """What a rerun found: the command, the folder the arms are under
    (``out``; ``kept``: whether it is left on disk), each arm that ran (of
    ``n_arms`` asked for), the reports of arm 1 against each other arm (in
    arm order), their summary and ``findings`` (``RerunFindings``), once
    every arm succeeded; ``interrupted``: Ctrl-C, and ``stopped``: the arm
    it stopped (None: it came while comparing)."""

    __slots__ = (
        "arms", "command", "findings", "interrupted", "kept", "n_arms", "out", "reports",
        "stopped", "summary",
    )  # fmt: skip

    def __init__(
        self, command: tuple[str, ...], out: str, arms: tuple[ArmResult, ...],
        reports: tuple[Report, ...] = (), summary: SweepSummary | None = None,
        interrupted: bool = False, kept: bool = True, stopped: int | None = None,
        n_arms: int = 0, findings: RerunFindings | None = None,
    ) -> None:  # fmt: skip
        self.command = command
        self.n_arms = n_arms or len(arms)
        self.out = out
        self.arms = arms
        self.reports = reports
        self.summary = summary
        self.interrupted = interrupted
        self.kept = kept
        self.stopped = stopped
        self.findings = findings

    def __repr__(self) -> str:
        return f"RerunResult({self.verdict}, {len(self.arms)} arms, out={self.out!r})"

    @property
    def failed(self) -> ArmResult | None:
        """The arm that failed, if one did."""
        return next((a for a in self.arms if a.problem is not None), None)

    @property
    def verdict(self) -> RerunVerdict:
        """``deterministic``, ``nondeterministic``, ``error`` or ``interrupted``."""
        if self.interrupted:
            return RerunVerdict.INTERRUPTED
        if self.failed is not None or self.summary is None or self.summary.error:
            return RerunVerdict.ERROR
        return (
            RerunVerdict.NONDETERMINISTIC if self.summary.diverged else (RerunVerdict.DETERMINISTIC)
        )

    @property
    def exit_code(self) -> int:
        return {
            RerunVerdict.DETERMINISTIC: EXIT_IDENTICAL,
            RerunVerdict.NONDETERMINISTIC: EXIT_DIVERGED,
            RerunVerdict.INTERRUPTED: EXIT_INTERRUPTED,
        }.get(self.verdict, EXIT_TROUBLE)
