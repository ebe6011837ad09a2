"""Stage 7: renderers, pure functions from a Report to text.

``render_json`` writes the contract users' scripts rely on (strict RFC 8259
JSON: non-finite numbers become the strings "nan", "inf", "-inf"; integers
stay exact). ``render_text`` is for people: one line per step, the buffers
that differ, and the verdict with the suspect groups and what to inspect.

Names, paths and messages reach the renderers as the OS gave them. The text
report shows each through ``display_path`` (backslash escapes: no name can
pass for a line of the report); the JSON report keeps every string valid
UTF-8, writing a string that is not as its escaped form, with the exact
bytes in a ``<field>_bytes_hex`` field beside it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields
from typing import TYPE_CHECKING, Any

from ..results import BufferResult, Report
from ..stages.discover import display_path, is_utf8

if TYPE_CHECKING:
    from ..sweep import SweepSummary

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


def json_text(text: str) -> str:
    """``text`` as valid UTF-8: itself, or, holding bytes that are not UTF-8,
    its escaped form (as the text report shows it)."""
    return text if is_utf8(text) else display_path(text)


def os_bytes_hex(text: str) -> str:
    """The bytes of a name or path as the OS has them, in lowercase hex."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no undecodable byte
        raw = text.encode("utf-8", "surrogatepass")
    return raw.hex()


def _put_text(d: dict[str, Any], key: str, text: str | None) -> None:
    """``d[key] = text`` as valid UTF-8, plus ``key_bytes_hex`` where it is not."""
    if text is None or is_utf8(text):
        d[key] = text
    else:
        d[key] = display_path(text)
        d[f"{key}_bytes_hex"] = os_bytes_hex(text)


_BUFFER_FIELDS = tuple(f.name for f in fields(BufferResult))
_OS_TEXT_FIELDS = frozenset({"name", "path_a", "path_b"})


def buffer_dict(b: BufferResult) -> dict[str, Any]:
    """A buffer's JSON object (flat, so no deep copy as ``asdict`` would make)."""
    d: dict[str, Any] = {}
    for k in _BUFFER_FIELDS:
        value = getattr(b, k)
        if k in _OS_TEXT_FIELDS:
            _put_text(d, k, value)
        elif isinstance(value, str):
            d[k] = json_text(value)
        else:
            d[k] = value
    for k in ("a", "b", "max_abs_delta"):
        d[k] = json_number(d[k])
    if d["first_divergent_chunk"] is not None:
        d["first_divergent_chunk"] = list(d["first_divergent_chunk"])
    return d


def path_record(path: str, key: str, text: str) -> dict[str, Any]:
    """A skipped or error entry: its path (with bytes where not UTF-8), and why."""
    d: dict[str, Any] = {}
    _put_text(d, "path", path)
    d[key] = json_text(text)
    return d


def report_dict(report: Report) -> dict[str, Any]:
    buffers = [buffer_dict(b) for b in report.buffers]
    head: dict[str, Any] = {"schema_version": JSON_SCHEMA_VERSION}
    _put_text(head, "run_a", report.run_a)
    _put_text(head, "run_b", report.run_b)
    return {
        **head,
        "schema": json_text(report.schema),
        "verdict": report.verdict,
        "first_divergent_step": report.first_divergent_step,
        "first_divergent_groups": [json_text(k) for k in report.first_divergent_groups],
        "groups": [
            {
                "key": json_text(g.key),
                "title": json_text(g.title),
                "status": g.status,
                "diverged": [json_text(n) for n in g.diverged],
                "hint": json_text(g.hint),
            }
            for g in report.groups
        ],
        "steps": [
            {
                "step": s.step,
                "counts": dict(s.counts),
                "diverged_groups": [json_text(k) for k in s.diverged_groups],
            }
            for s in report.steps
        ],
        "buffers": buffers,
        "skipped": [path_record(s.path, "reason", s.reason) for s in report.skipped],
        "errors": [path_record(e.path, "message", e.message) for e in report.errors],
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
    lines = [
        f"A: {display_path(report.run_a)}",
        f"B: {display_path(report.run_b)}",
        f"schema: {display_path(report.schema)}",
    ]
    for s in report.steps:
        counts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in s.counts)
        keys = " ".join(map(display_path, s.diverged_groups))
        groups = f"  diverged: {keys}" if keys else ""
        lines.append(f"step {s.step}: {counts}{groups}")
        for b in report.buffers:
            if b.step == s.step and (verbose or b.status != "equal"):
                lines.append(format_buffer(b))
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
    return f"{display_path(report.run_a)}  {display_path(report.run_b)}  {display_path(what)}"


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
