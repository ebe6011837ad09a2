"""``fastdiff watch`` output: pure functions of its step reports and summary.

Text: one line per step (``step 12: 34 buffers equal``, ``step 13: DIVERGED
[E F]: ...``) followed by the lines of its buffers that are not equal, as
``compare`` prints them; at the end why the watch stopped, the errors, and
compare's verdict block. JSON Lines: one ``{"record": "step", ...}`` per
step, then one ``{"record": "summary", ...}`` holding every field of
``compare --format json`` for the steps compared, and ``steps_compared``,
``stopped``, ``first_divergence_latency_s``.
"""

from __future__ import annotations

import json

from ..model.statuses import STATUS_ORDER, Status, StepStatus, StopReason
from ..textkit.escape import display_path, json_text
from ..textkit.fmt import plural
from .json import buffer_dict, report_dict
from .text import format_buffer, note_lines, status_counts, verdict_lines
from .words import DIVERGED, EQUAL, ERROR, WITHIN_TOLERANCE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..model.watch import StepReport, WatchSummary

__all__ = [
    "render_step_record",
    "render_step_text",
    "render_summary_record",
    "render_summary_text",
    "step_dict",
    "summary_dict",
]


def _counts(s: StepReport) -> str:
    counts = dict.fromkeys(STATUS_ORDER, 0)  # compare's step lines count in the same order
    for b in s.buffers:
        counts[b.status] += 1
    return status_counts(counts.items())  # as compare's step lines say them


def render_step_text(s: StepReport, verbose: bool = False) -> str:
    """The step's line, then its buffers that are not equal (``verbose``:
    every buffer), newline-terminated."""
    if s.status is StepStatus.EQUAL:
        close = s.n_within_tolerance
        head = f"step {s.step}: {plural(len(s.buffers), 'buffer')} {EQUAL.phrase}"
        if close:
            head += f" ({close} {WITHIN_TOLERANCE.phrase})"
    elif s.status is StepStatus.DIVERGED:
        groups = " ".join(map(display_path, s.diverged_groups))
        head = f"step {s.step}: {DIVERGED.label} [{groups}]: {_counts(s)}"
    else:
        head = f"step {s.step}: {ERROR.label}: {_counts(s) or plural(len(s.errors), 'problem')}"
    if s.reads > 1:
        head += f" (read {s.reads} times: files changed while read)"
    lines = [head, *(format_buffer(b) for b in s.buffers if verbose or b.status != Status.EQUAL)]
    return "\n".join(lines) + "\n"


def step_dict(s: StepReport) -> dict[str, Any]:
    """A step's JSON record: the buffers that are not equal, with compare's fields."""
    return {
        "record": "step",
        "step": s.step,
        "status": s.status,
        "diverged_groups": [json_text(g) for g in s.diverged_groups],
        "buffers": [buffer_dict(b) for b in s.buffers if b.status != Status.EQUAL],
    }


def render_step_record(s: StepReport) -> str:
    """One line of strict JSON (RFC 8259: no NaN or infinity), newline-terminated."""
    return json.dumps(step_dict(s), allow_nan=False) + "\n"


def summary_dict(summary: WatchSummary) -> dict[str, Any]:
    """The summary record: compare's JSON report of the steps compared, and
    how the watch went."""
    latency = summary.first_divergence_latency_s
    return {
        "record": "summary",
        **report_dict(summary.report),
        "steps_compared": summary.steps_compared,
        "stopped": summary.stopped,
        "first_divergence_latency_s": None if latency is None else round(latency, 3),
    }


def render_summary_record(summary: WatchSummary) -> str:
    return json.dumps(summary_dict(summary), allow_nan=False) + "\n"


def stop_line(summary: WatchSummary) -> str:
    report, n = summary.report, plural(summary.steps_compared, "step")
    latency = summary.first_divergence_latency_s
    first = ""
    if report.first_divergent_step is not None and latency is not None:
        first = (
            f"the first divergent step, {report.first_divergent_step}, was reported "
            f"{latency:.2f} s after both runs had completed it"
        )
    if summary.stopped is StopReason.DIVERGED:
        return f"stopped: {first}; {n} compared"
    if summary.stopped is StopReason.IDLE:
        head = f"stopped: both runs idle for {summary.idle_timeout_s:g} s; {n} compared"
    elif summary.stopped is StopReason.INTERRUPTED:
        head = f"interrupted: {n} compared"
    else:
        head = f"stopped by trouble (see the errors); {n} compared"
    return f"{head}; {first}" if first else head


def render_summary_text(summary: WatchSummary) -> str:
    """Why the watch stopped, the notes (as compare's text has them at its
    top), the errors, and compare's verdict block."""
    report = summary.report
    lines = ["", stop_line(summary), *note_lines(report)]
    if report.errors:
        lines.append(f"{plural(len(report.errors), 'error')}:")
        lines += [f"  {display_path(e.path)}: {display_path(e.message)}" for e in report.errors]
    lines.append("")
    lines += verdict_lines(report)
    return "\n".join(lines) + "\n"
