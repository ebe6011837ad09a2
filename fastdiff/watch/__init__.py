"""``fastdiff watch``: compare two runs while they are written.

Each step is compared as soon as both runs have written it (``poll``:
polling a run folder and when a step is complete; ``loop``: the steps'
way through the scheduler, re-reads of files that changed, the order of
reports, when to stop), so a divergence is reported within a second of the
step that shows it, while the runs still have most of their budget left.

``watch_runs(run_a, run_b, options, poll=..., settle=..., idle_timeout=...,
start_timeout=..., keep_going=..., on_step=...)`` returns a ``WatchSummary``; ``on_step`` gets
a ``StepReport`` per step as it is reported.
"""

from __future__ import annotations

from .loop import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_POLL,
    DEFAULT_SETTLE,
    DEFAULT_START_TIMEOUT,
    MAX_READS,
    Watch,
    watch_runs,
)
from .results import STOP_REASONS, StepReport, WatchSummary

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_POLL",
    "DEFAULT_SETTLE",
    "DEFAULT_START_TIMEOUT",
    "MAX_READS",
    "STOP_REASONS",
    "StepReport",
    "Watch",
    "WatchSummary",
    "watch_runs",
]
