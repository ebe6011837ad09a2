"""What a watch reports: one ``StepReport`` per step compared, and a ``WatchSummary``."""

from __future__ import annotations

from ..model.value import Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    from ..model.results import BufferResult, Problem, Report

    StepStatus = Literal["equal", "diverged", "error"]
    Stopped = Literal["diverged", "idle", "interrupted", "error"]
else:
    StepStatus = Stopped = str

#: Why a watch ended (``WatchSummary.stopped``).
STOP_REASONS = ("diverged", "idle", "interrupted", "error")


class StepReport(Value):
    """One step, compared once complete in both runs.

    ``status``: ``diverged`` when a buffer diverged (differs, has another
    length, or is in one run only), else ``error`` when a buffer or the step
    had trouble, else ``equal`` (within tolerance included).
    ``diverged_groups``: the groups with a diverged buffer, in pipeline
    order. ``buffers``: every buffer of the step; ``errors``: its problems.
    ``latency_s``: seconds from the moment the step was complete in both
    runs to the moment it was reported; ``reads``: how often it was read
    (more than once when a file changed while it was read).
    """

    __slots__ = ("buffers", "diverged_groups", "errors", "latency_s", "reads", "status", "step")

    def __init__(
        self,
        step: int,
        status: StepStatus,
        diverged_groups: tuple[str, ...],
        buffers: tuple[BufferResult, ...],
        errors: tuple[Problem, ...] = (),
        latency_s: float = 0.0,
        reads: int = 1,
    ) -> None:
        self.step = step
        self.status = status
        self.diverged_groups = diverged_groups
        self.buffers = buffers
        self.errors = errors
        self.latency_s = latency_s
        self.reads = reads


class WatchSummary(Value):
    """A whole watch: ``report`` is what ``compare`` would report for the
    steps compared (verdict, first divergent step and groups, every buffer,
    errors); ``stopped`` says why the watch ended; ``first_divergence_latency_s``
    is the first divergent step's ``latency_s`` (None when nothing diverged).
    ``idle_timeout_s``: the idle timeout the watch ran with (for the text)."""

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
        stopped: Stopped,
        first_divergence_latency_s: float | None,
        idle_timeout_s: float = 0.0,
    ) -> None:
        self.report = report
        self.steps_compared = steps_compared
        self.stopped = stopped
        self.first_divergence_latency_s = first_divergence_latency_s
        self.idle_timeout_s = idle_timeout_s
