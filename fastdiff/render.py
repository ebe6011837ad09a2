"""Stage 7: renderers, pure functions from a Report to text.

``render_json`` writes the contract users' scripts rely on (strict RFC 8259
JSON: non-finite numbers become the strings "nan", "inf", "-inf"; integers
stay exact). ``render_text`` is for people: one line per step, the buffers
that differ, and the verdict with the suspect groups and what to inspect.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from .discover import display_path
from .results import BufferResult, Report

if TYPE_CHECKING:
    from .sweep import SweepSummary

JSON_SCHEMA_VERSION = 1


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 error', '2 errors', '1,234 entries'."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def json_number(value: Any) -> Any:
    """A value JSON can hold: non-finite floats as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "nan"
        return "inf" if value > 0 else "-inf"
    return value


_BUFFER_FIELDS = tuple(f.name for f in fields(BufferResult))


def buffer_dict(b: BufferResult) -> dict[str, Any]:
    """A buffer's JSON object (flat, so no deep copy as ``asdict`` would make)."""
    d = {k: getattr(b, k) for k in _BUFFER_FIELDS}
    for k in ("a", "b", "max_abs_delta"):
        d[k] = json_number(d[k])
    for k in ("path_a", "path_b"):
        if d[k] is not None:
            d[k] = display_path(d[k])
    if d["first_divergent_chunk"] is not None:
        d["first_divergent_chunk"] = list(d["first_divergent_chunk"])
    return d


def report_dict(report: Report) -> dict[str, Any]:
    buffers = [buffer_dict(b) for b in report.buffers]
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "run_a": display_path(report.run_a),
        "run_b": display_path(report.run_b),
        "schema": report.schema,
        "verdict": report.verdict,
        "first_divergent_step": report.first_divergent_step,
        "first_divergent_groups": list(report.first_divergent_groups),
        "groups": [
            {
                "key": g.key,
                "title": g.title,
                "status": g.status,
                "diverged": list(g.diverged),
                "hint": g.hint,
            }
            for g in report.groups
        ],
        "steps": [
            {"step": s.step, "counts": dict(s.counts), "diverged_groups": list(s.diverged_groups)}
            for s in report.steps
        ],
        "buffers": buffers,
        "skipped": [asdict(s) for s in report.skipped],
        "errors": [asdict(e) for e in report.errors],
        "tolerance": {k: json_number(v) for k, v in report.tolerance.items()},
        "work": asdict(report.work),
    }


def render_json(report: Report, indent: int | None = 2) -> str:
    return json.dumps(report_dict(report), indent=indent, allow_nan=False) + "\n"


# --- text --------------------------------------------------------------------

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


def format_buffer(b: BufferResult) -> str:
    head = f"{b.group:>5}  {b.name} [{b.dtype}]"
    if b.status == "equal":
        return f"{head}  equal ({b.n_elements_a} elements)"
    if b.status in ("only_in_a", "only_in_b"):
        side = "A" if b.status == "only_in_a" else "B"
        return f"{head}  only in run {side}"
    if b.status in ("malformed", "error"):
        return f"{head}  {b.status.upper()}: {b.message}"
    parts = []
    if b.status == "length_mismatch":
        parts.append(f"LENGTH MISMATCH: A has {b.n_elements_a} elements, B {b.n_elements_b}")
        if not b.n_diff and not b.n_within_tolerance:
            parts.append("common prefix equal")
    label = "DIVERGED" if b.status == "diverged" else "within tolerance"
    if b.status != "length_mismatch":
        parts.append(label)
    if b.first_divergent_chunk is not None:
        lo, hi = b.first_divergent_chunk
        parts.append(f"first differing chunk: bytes {lo}..{hi} (compared by digests only)")
    if b.n_diff or b.n_within_tolerance:
        total = min(b.n_elements_a or 0, b.n_elements_b or 0)
        count = f"{b.n_diff} of {total} elements differ"
        if b.n_within_tolerance:
            count += f" ({b.n_within_tolerance} more within tolerance)"
        a, bb = format_value(b.a, b.dtype), format_value(b.b, b.dtype)
        first = f"first at [{b.first_index}]: A={a} B={bb}"
        if a == bb or "nan" in (a, bb):
            first += f" (bits {b.a_bits} vs {b.b_bits})"
        parts += [count, first]
        if b.max_abs_delta_index is not None:
            parts.append(f"max |A-B| {_delta(b.max_abs_delta)} at [{b.max_abs_delta_index}]")
        if b.n_nan_mismatch:
            parts.append(f"{b.n_nan_mismatch} NaN mismatches")
        if b.n_inf_mismatch:
            parts.append(f"{b.n_inf_mismatch} inf mismatches")
    return f"{head}  " + "; ".join(parts)


def render_text(report: Report, verbose: bool = False) -> str:
    lines = [f"A: {report.run_a}", f"B: {report.run_b}", f"schema: {report.schema}"]
    for s in report.steps:
        counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in s.counts)
        groups = f"  diverged: {' '.join(s.diverged_groups)}" if s.diverged_groups else ""
        lines.append(f"step {s.step}: {counts}{groups}")
        for b in report.buffers:
            if b.step == s.step and (verbose or b.status != "equal"):
                lines.append(format_buffer(b))
    if report.skipped:
        lines.append(f"skipped {plural(len(report.skipped), 'entry', 'entries')}:")
        lines += [f"  {s.path}: {s.reason}" for s in report.skipped]
    if report.errors:
        lines.append(f"{plural(len(report.errors), 'error')}:")
        lines += [f"  {e.path}: {e.message}" for e in report.errors]
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
    titles = {g.key: g.title for g in report.groups}
    suspects = ", ".join(f"{k} ({titles[k]})" for k in report.first_divergent_groups)
    out = [f"{head}: first divergent step {report.first_divergent_step}; groups: {suspects}"]
    width = max(len(g.title) for g in report.groups) + 4
    for g in report.groups:
        state = g.status.upper() if g.status == "diverged" else g.status
        tail = f": {', '.join(g.diverged)}" if g.diverged else ""
        out.append(f"  {g.key:>5}  {g.title:<{width}}{state}{tail}")
    for g in report.groups:
        if g.status == "diverged" and g.hint:
            out.append("")
            import textwrap

            out += textwrap.wrap(f"next, {g.key}: {g.hint}", width=88, subsequent_indent="  ")
    return out


# --- sweeps ----------------------------------------------------------------------


def render_sweep_record(index: int, report: Report) -> str:
    """One JSON Lines record for a finished pair: the compare JSON plus its index."""
    record = {"record": "pair", "index": index, **report_dict(report)}
    return json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"


def sweep_summary_dict(summary: SweepSummary) -> dict[str, Any]:
    return {
        "record": "summary",
        "schema_version": JSON_SCHEMA_VERSION,
        "pairs": summary.pairs,
        "identical": summary.identical,
        "diverged": summary.diverged,
        "error": summary.error,
        "classes": (
            [[display_path(r) for r in c] for c in summary.classes]
            if summary.classes is not None
            else None
        ),
        "unclassified": (
            [{"run": display_path(u.run), "reason": u.reason} for u in summary.unclassified]
            if summary.unclassified is not None
            else None
        ),
        "cache_hits": summary.cache_hits,
        "elapsed_s": summary.elapsed_s,
        "interrupted": summary.interrupted,
    }


def render_sweep_summary_record(summary: SweepSummary) -> str:
    return json.dumps(sweep_summary_dict(summary), separators=(",", ":"), allow_nan=False) + "\n"


def format_sweep_row(report: Report) -> str:
    """identical / diverged at step N [groups] / error (k problems), then the two runs."""
    if report.verdict == "error":
        what = f"error ({plural(len(report.errors), 'problem')}: {report.errors[0].message})"
    elif report.verdict == "diverged":
        groups = " ".join(report.first_divergent_groups)
        what = f"diverged at step {report.first_divergent_step} [{groups}]"
    else:
        what = "identical"
    return f"{report.run_a}  {report.run_b}  {what}"


def render_sweep_summary_text(summary: SweepSummary) -> str:
    lines = [
        f"{summary.pairs} pairs: {summary.identical} identical, {summary.diverged} diverged, "
        f"{summary.error} with errors ({summary.elapsed_s:.2f} s, "
        f"{summary.cache_hits} digests from the cache)"
    ]
    if summary.interrupted:
        lines[0] = "interrupted; finished " + lines[0]
    if summary.classes is not None:
        lines.append("classes of bit-identical runs:" + ("" if summary.classes else " none"))
        lines += [
            f"  {i}: {' '.join(display_path(r) for r in c)}"
            for i, c in enumerate(summary.classes, 1)
        ]
    if summary.unclassified:
        lines.append("in no class (a pair ended in error):")
        lines += [f"  {display_path(u.run)}: {u.reason}" for u in summary.unclassified]
    return "\n".join(lines) + "\n"
