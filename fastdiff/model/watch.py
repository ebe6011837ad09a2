"""What a watch reports: one ``StepReport`` per step compared, and a
``WatchSummary`` at its end (``fastdiff.watch`` makes them; ``render.watch``
words them)."""

from __future__ import annotations

from .exits import EXIT_INTERRUPTED, verdict_exit
from .statuses import StepStatus, StopReason
from .value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .results import BufferResult, Problem, Report

__all__ = ["STOP_REASONS", "StepReport", "WatchSummary"]

#: Why a watch ended (``WatchSummary.stopped``).
STOP_REASONS: tuple[StopReason, ...] = StopReason.ALL


class StepReport(Value):
    """One step, compared once complete in both runs.

    ``status`` (``statuses.StepStatus``): ``diverged`` when a buffer
    diverged (differs, has another length, or is in one run only), else
    ``error`` when a buffer or the step had trouble, else ``equal`` (within
    tolerance included). ``diverged_groups``: the groups with a diverged
    buffer, in pipeline order. ``buffers``: every buffer of the step;
    ``errors``: its problems. ``latency_s``: seconds from the moment the
    step was complete in both runs to the moment it was reported; ``reads``:
    how often it was read (more than once when a file changed while it was
    read).
    """

    __slots__ = ("buffers", "diverged_groups", "errors", "latency_s", "reads", "status", "step")

    def __init__(
        self,
        step: int,
        status: str,
        diverged_groups: tuple[str, ...],
        buffers: tuple[BufferResult, ...],
        errors: tuple[Problem, ...] = (),
        latency_s: float = 0.0,
        reads: int = 1,
    ) -> None:
        self.step = step
        self.status = StepStatus.of(status)
        self.diverged_groups = diverged_groups
        self.buffers = buffers
        self.errors = errors
        self.latency_s = latency_s
        self.reads = reads

    @property
    def n_within_tolerance(self) -> int:
        """How many of its buffers differ only within the tolerance."""
        return sum(b.status == "within_tolerance" for b in self.buffers)


class WatchSummary(Value):
    """A whole watch: ``report`` is what ``compare`` would report for the
    steps compared (verdict, first divergent step and groups, every buffer,
    errors); ``stopped`` (``statuses.StopReason``) says why the watch ended;
    ``first_divergence_latency_s`` is the first divergent step's
    ``latency_s`` (None when nothing diverged). ``idle_timeout_s``: the idle
    timeout the watch ran with (for the text)."""

    __slots__ = (
        "first_divergence_latency_s",
        "idle_timeout_s",
        "report",
        "steps_compared",
        "stopped",
    )

    def __init__(
        self,
        report: Report,
        steps_compared: int,
        stopped: str,
        first_divergence_latency_s: float | None,
        idle_timeout_s: float = 0.0,
    ) -> None:
        self.report = report
        self.steps_compared = steps_compared
        self.stopped = StopReason.of(stopped)
        self.first_divergence_latency_s = first_divergence_latency_s
        self.idle_timeout_s = idle_timeout_s

    @property
    def exit_code(self) -> int:
        """The exit code of the watch: 130 when interrupted, else its
        report's (``exits.verdict_exit``)."""
        if self.stopped is StopReason.INTERRUPTED:
            return EXIT_INTERRUPTED
        return verdict_exit(self.report.verdict)
