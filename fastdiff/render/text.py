"""The text report, for people: a pure function of a Report.

One line per step (runs of steps whose buffers are all equal folded into
one, unless verbose), the buffers that differ, errors, and the verdict with
the suspect groups and what to inspect. Every name, path and message is
shown through ``display_path``. A buffer's line shows its facts in the
order of ``kernels.facts.FACTS``, each fact that has a text part in
``TEXT_PARTS``.
"""

from __future__ import annotations

import math

from ..kernels.facts import RESULT_FACTS
from .escape import display_path
from .fmt import plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..results import BufferResult, Report, StepSummary

__all__ = ["TEXT_PARTS", "format_buffer", "format_value", "render_text"]

_DIGITS = {"f16": ".5g", "bf16": ".4g", "f32": ".9g"}


def format_value(value: int | float | None, dtype: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        spec = _DIGITS.get(dtype)
        return format(value, spec) if spec else repr(value)
    return str(value)


def _delta(value: int | float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


# --- the facts' text parts ----------------------------------------------------


def _count_part(b: BufferResult) -> str | None:
    if not (b.n_diff or b.n_within_tolerance):
        return None
    total = min(b.n_elements_a or 0, b.n_elements_b or 0)
    count = f"{b.n_diff} of {total} elements differ"
    if b.n_within_tolerance:
        count += f" ({b.n_within_tolerance} more within tolerance)"
    return count


def _first_part(b: BufferResult) -> str | None:
    if b.first_index is None:
        return None
    a, bb = format_value(b.a, b.dtype), format_value(b.b, b.dtype)
    first = f"first at [{b.first_index}]: A={a} B={bb}"
    if a == bb or "nan" in (a, bb):
        first += f" (bits {b.a_bits} vs {b.b_bits})"
    return first


def _max_part(b: BufferResult) -> str | None:
    if b.max_abs_delta_index is None:
        return None
    return f"max |A-B| {_delta(b.max_abs_delta)} at [{b.max_abs_delta_index}]"


def _chunk_part(b: BufferResult) -> str | None:
    if b.first_divergent_chunk is None:
        return None
    lo, hi = b.first_divergent_chunk
    return f"first differing chunk: bytes {lo}..{hi} (compared by digests only)"


#: The text of the facts a buffer's line shows, by fact name; each returns
#: None when it has nothing to say. Shown in the order of ``FACTS``.
TEXT_PARTS: dict[str, Callable[[BufferResult], str | None]] = {
    "n_diff": _count_part,
    "first_index": _first_part,
    "max_abs_delta": _max_part,
    "n_nan_mismatch": lambda b: f"{b.n_nan_mismatch} NaN mismatches" if b.n_nan_mismatch else None,
    "n_inf_mismatch": lambda b: f"{b.n_inf_mismatch} inf mismatches" if b.n_inf_mismatch else None,
    "first_divergent_chunk": _chunk_part,
}
_PARTS = tuple(TEXT_PARTS[f.name] for f in RESULT_FACTS if f.name in TEXT_PARTS)


def format_buffer(b: BufferResult) -> str:
    head = f"{display_path(b.group):>5}  {display_path(b.name)} [{b.dtype}]"
    if b.status == "equal":
        return f"{head}  equal ({b.n_elements_a} elements)"
    if b.status in ("only_in_a", "only_in_b"):
        side = "A" if b.status == "only_in_a" else "B"
        return f"{head}  only in run {side}"
    if b.status in ("malformed", "error"):
        return f"{head}  {b.status.upper()}: {display_path(b.message or '')}"
    parts = []
    if b.status == "length_mismatch":
        parts.append(f"LENGTH MISMATCH: A has {b.n_elements_a} elements, B {b.n_elements_b}")
        if b.n_diff == 0 and not b.n_within_tolerance:
            parts.append("common prefix equal")
        elif b.n_diff is None and b.first_divergent_chunk is None and b.message:
            parts.append(display_path(b.message))  # a prefix digests alone cannot decide
    else:
        parts.append("DIVERGED" if b.status == "diverged" else "within tolerance")
    for part in _PARTS:
        text = part(b)
        if text is not None:
            parts.append(text)
    return f"{head}  " + "; ".join(parts)


# --- the report -------------------------------------------------------------------


def _equal_count(s: StepSummary) -> int | None:
    """How many buffers a step holds when all of them are equal, else None."""
    if len(s.counts) == 1 and s.counts[0][0] == "equal":
        return s.counts[0][1]
    return None


def _step_line(s: StepSummary) -> str:
    counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in s.counts)
    keys = " ".join(map(display_path, s.diverged_groups))
    groups = f"  diverged: {keys}" if keys else ""
    return f"step {s.step}: {counts}{groups}"


def _folded_line(run: list[StepSummary]) -> str:
    """One line for a run of steps whose buffers are all equal."""
    if len(run) == 1:
        return _step_line(run[0])
    first, last = run[0].step, run[-1].step
    label = f"steps {first}-{last}"
    if last - first + 1 != len(run):
        label += f" ({len(run):,} steps)"
    counts = [_equal_count(s) or 0 for s in run]
    lo, hi = min(counts), max(counts)
    if lo == hi:
        return f"{label}: {plural(lo, 'buffer')} equal each"
    return f"{label}: all equal, {lo:,} to {hi:,} buffers a step ({sum(counts):,} in all)"


def render_text(report: Report, verbose: bool = False) -> str:
    """The report; ``verbose`` lists every step and every buffer, equal ones too."""
    lines = [
        f"A: {display_path(report.run_a)}",
        f"B: {display_path(report.run_b)}",
        f"schema: {display_path(report.schema)}",
    ]
    shown: dict[int, list[BufferResult]] = {}  # the buffers to list, by step: one pass
    for b in report.buffers:
        if verbose or b.status != "equal":
            shown.setdefault(b.step, []).append(b)
    run: list[StepSummary] = []  # steps whose buffers are all equal, not yet written
    for s in report.steps:
        if not verbose and _equal_count(s) is not None and s.step not in shown:
            run.append(s)
            continue
        if run:
            lines.append(_folded_line(run))
            run = []
        lines.append(_step_line(s))
        lines += [format_buffer(b) for b in shown.get(s.step, ())]
    if run:
        lines.append(_folded_line(run))
    if report.skipped:
        lines.append(f"skipped {plural(len(report.skipped), 'entry', 'entries')}:")
        lines += [f"  {display_path(s.path)}: {display_path(s.reason)}" for s in report.skipped]
    if report.errors:
        lines.append(f"{plural(len(report.errors), 'error')}:")
        lines += [f"  {display_path(e.path)}: {display_path(e.message)}" for e in report.errors]
    lines.append("")
    lines += _verdict_lines(report)
    return "\n".join(lines) + "\n"


def _verdict_lines(report: Report) -> list[str]:
    n = len(report.buffers)
    n_steps = len(report.steps)
    if report.first_divergent_step is None:
        if report.verdict == "identical":
            close = sum(b.status == "within_tolerance" for b in report.buffers)
            if close:
                return [
                    f"VERDICT: identical within tolerance: {n} buffers over {n_steps} steps, "
                    f"{close} of them differing only within tolerance"
                ]
            return [f"VERDICT: identical: {n} buffers over {n_steps} steps are bit-for-bit equal"]
        return [
            f"VERDICT: error: {plural(len(report.errors), 'problem')} (above); "
            "no divergence among the buffers that could be compared"
        ]
    head = "VERDICT: diverged" if report.verdict == "diverged" else "VERDICT: error, and diverged"
    keys = {g.key: display_path(g.key) for g in report.groups}
    titles = {g.key: display_path(g.title) for g in report.groups}
    suspects = ", ".join(f"{keys[k]} ({titles[k]})" for k in report.first_divergent_groups)
    out = [f"{head}: first divergent step {report.first_divergent_step}; groups: {suspects}"]
    width = max(len(t) for t in titles.values()) + 4
    for g in report.groups:
        state = g.status.upper() if g.status == "diverged" else g.status
        tail = f": {', '.join(map(display_path, g.diverged))}" if g.diverged else ""
        out.append(f"  {keys[g.key]:>5}  {titles[g.key]:<{width}}{state}{tail}")
    for g in report.groups:
        if g.status == "diverged" and g.hint:
            out.append("")
            import textwrap

            hint = f"next, {keys[g.key]}: {display_path(g.hint)}"
            out += textwrap.wrap(hint, width=88, subsequent_indent="  ")
    return out


def verdict_lines(report: Report) -> list[str]:
    """The verdict block that ends the text report (``watch`` ends with it too)."""
    return _verdict_lines(report)
