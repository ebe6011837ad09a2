"""The text report, for people: a pure function of a Report.

Notes on how the runs were read, one line per step (runs of steps whose
buffers are all equal folded into one, unless verbose), the buffers that
differ, errors, the verdict with the suspect groups and what to inspect, and
when more than one step differs, the timeline: a step x group table of how
the divergence spreads. Every name, path and message is shown through
``display_path``. A buffer's line shows its facts in the order of
``model.facts.FACTS``, each fact that has a text part in ``TEXT_PARTS``.
"""

from __future__ import annotations

import math

from ..model.facts import RESULT_FACTS
from ..model.findings import BufferKey, Cell, PatternKind
from ..model.statuses import TROUBLE, GroupStatus
from ..textkit.escape import display_path
from ..textkit.fmt import first_few, format_steps, plural, step_ranges
from ..textkit.values import format_value
from .hints import buffer_message, group_hint
from .words import EQUAL, GROUP_STATUS, ROLE, STATUS, VERDICT, WITHIN_TOLERANCE, verdict_word

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..model.facts import FieldDiff
    from ..model.results import (
        BufferResult,
        GroupVerdict,
        Origin,
        Problem,
        Report,
        StepSummary,
        TimelineRow,
    )
    from ..model.selection import Selection

__all__ = ["TEXT_PARTS", "format_buffer", "format_value", "render_text", "structure_lines"]

#: How many runs (or rows) of differing elements a buffer's line lists.
SHOWN_RANGES = 4
#: How many fields a buffer's line names.
SHOWN_FIELDS = 6
#: How many steps the timeline table shows.
TIMELINE_ROWS = 20
#: How many buffers a line of the verdict names where a divergence was born.
SHOWN_ROLES = 6
#: How many groups the verdict lists before the equal ones are folded into a
#: count (-v lists every group): a by-name schema of a checkpoint may hold
#: thousands.
GROUP_ROWS = 20


def _delta(value: int | float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


# --- the facts' text parts ----------------------------------------------------


def _percent(fraction: float) -> str:
    pct = 100 * fraction
    return f"{pct:.3g}%" if pct >= 0.001 else "<0.001%"


def _where(b: BufferResult) -> str | None:
    """In which runs (or, for 2 or more dimensions, rows) the differing elements lie."""
    if b.n_rows is not None and b.rows is not None:
        shown = ", ".join(map(str, b.rows[:SHOWN_RANGES]))
        more = ", ..." if b.n_rows > SHOWN_RANGES else ""
        return f"in {plural(b.n_rows, 'row')} ({shown}{more})"
    if b.n_ranges is not None and b.ranges is not None:
        shown = " ".join(f"[{lo}, {hi})" for lo, hi in b.ranges[:SHOWN_RANGES])
        more = " ..." if b.n_ranges > SHOWN_RANGES else ""
        return f"in {plural(b.n_ranges, 'range')} {shown}{more}"
    return None


def _differ(n: int) -> str:
    return "differs" if n == 1 else "differ"


def _count_part(b: BufferResult) -> str | None:
    if not (b.n_diff or b.n_within_tolerance):
        return None
    total = min(b.n_elements_a or 0, b.n_elements_b or 0)
    if b.n_diff:
        count = f"{b.n_diff:,} of {plural(total, 'element')} {_differ(b.n_diff)}"
        if b.diff_fraction is not None:
            count += f" ({_percent(b.diff_fraction)})"
        if b.n_within_tolerance:
            count += f" and {b.n_within_tolerance:,} more {WITHIN_TOLERANCE.phrase}"
    else:
        n = b.n_within_tolerance
        count = f"{n:,} of {plural(total, 'element')} {_differ(n)}, all {WITHIN_TOLERANCE.phrase}"
    where = _where(b)  # every element whose bits differ, within tolerance or not
    if where is None:
        return count
    return f"{count}, {where}" if b.n_within_tolerance else f"{count} {where}"


def _index(b: BufferResult, flat: int, nd: tuple[int, ...] | None) -> str:
    """An element's index: torch style in the declared shape, else ``[i]``."""
    return str(tuple(nd)) if nd is not None else f"[{flat}]"


def _first_part(b: BufferResult) -> str | None:
    if b.first_index is None:
        return None
    a, bb = format_value(b.a, b.dtype), format_value(b.b, b.dtype)
    first = f"first at {_index(b, b.first_index, b.first_index_nd)}: A={a} B={bb}"
    if a == bb or "nan" in (a, bb):
        first += f" (bits {b.a_bits} vs {b.b_bits})"
    return first


def _nan_inf(b: BufferResult) -> list[str]:
    out = []
    if b.n_nan_mismatch:
        out.append(plural(b.n_nan_mismatch, "NaN mismatch", "NaN mismatches"))
    if b.n_inf_mismatch:
        out.append(plural(b.n_inf_mismatch, "inf mismatch", "inf mismatches"))
    return out


def _cause_in_max(b: BufferResult) -> bool:
    """The max part names the NaN and inf mismatches, as what makes it large."""
    return b.max_ulp is not None and b.magnitude == "large" and bool(_nan_inf(b))


def _mismatch_part(b: BufferResult, nan: bool) -> str | None:
    """The NaN (``nan``) or inf mismatches, where the max part does not name
    them; where there is no max part (no differing pair is finite), the last
    of them says the buffer's magnitude: ``1 NaN mismatch (large)``."""
    n = b.n_nan_mismatch if nan else b.n_inf_mismatch
    if not n or _cause_in_max(b):
        return None
    text = (
        plural(n, "NaN mismatch", "NaN mismatches")
        if nan
        else plural(n, "inf mismatch", "inf mismatches")
    )
    last = not nan or not b.n_inf_mismatch
    if last and b.max_abs_delta_index is None and b.magnitude is not None:
        text += f" ({b.magnitude})"
    return text


def scale_ulps(value: float) -> str:
    """A difference in ULPs of a scale: two digits below 10, whole above."""
    if math.isinf(value):
        return "inf"
    return f"{value:.2g}" if value < 10 else f"{round(value):,}"


def _judged_by_scale(b: BufferResult) -> bool:
    """The line names the difference in ULPs of its scale: where the size of
    the difference is in question (beyond the rounding line in its own ULPs)."""
    if b.max_ulp_of_scale is None or _cause_in_max(b):
        return False
    if b.max_ulp_of_scale >= b.max_ulp - 0.5:  # inf too
        return False  # the same figure twice says nothing more
    return bool(b.cancellation) or (b.magnitude == "large" and b.max_ulp > 1)


def _max_part(b: BufferResult) -> str | None:
    if b.max_abs_delta_index is None:
        return None
    at = _index(b, b.max_abs_delta_index, b.max_abs_delta_index_nd)
    text = f"max |A-B| {_delta(b.max_abs_delta)} at {at}"
    if b.max_ulp is not None:
        # A NaN or inf mismatch makes a buffer large whatever its ULP distance: say so.
        why = f": {', '.join(_nan_inf(b))}" if _cause_in_max(b) else ""
        scale = ""
        if _judged_by_scale(b):
            whose = "its row's" if b.n_rows is not None else "its"
            scale = f", {scale_ulps(b.max_ulp_of_scale)} ULP of {whose} scale"
        word = "rounding, with cancellation" if b.cancellation else b.magnitude
        text += f", max {b.max_ulp:,} ULP{scale} ({word}{why})"
    return text


#: The shares of the ULP distances the short histogram gives a bound for.
_QUANTILES = (0.5, 0.9)


def ulp_histogram_text(b: BufferResult) -> str | None:
    """The ULP distances' histogram, short: how far apart half of the finite
    differing pairs are at most, nine in ten, all (the upper ends of the
    histogram's bins: ``ULPs: 50% <= 7, 90% <= 31, all <= 511``), where the
    size of the differences is in question."""
    hist = b.ulp_log2_histogram
    if not hist or not _judged_by_scale(b):
        return None
    counts = [b.n_signed_zero or 0, *hist]  # distance 0, then bin k: 2**k .. 2**(k+1) - 1
    total = sum(counts)
    parts = []
    seen = 0
    wanted = list(_QUANTILES)
    for k, n in enumerate(counts):
        seen += n
        top = 0 if k == 0 else (1 << k) - 1
        while wanted and seen >= wanted[0] * total:
            parts.append(f"{round(100 * wanted.pop(0))}% <= {top:,}")
    parts.append(f"all <= {(1 << len(hist)) - 1:,}")
    return "ULPs: " + ", ".join(parts)


def _chunk_part(b: BufferResult) -> str | None:
    if b.first_divergent_chunk is None:
        return None
    lo, hi = b.first_divergent_chunk
    said = b.message is not None and "by digests only" in b.message  # said once is enough
    return f"first differing chunk: bytes {lo}..{hi}" + (
        "" if said else " (compared by digests only)"
    )


def _field_text(f: FieldDiff) -> str:
    count = f"{f.n_diff:,} {_differ(f.n_diff)}" if f.n_diff else f"all {WITHIN_TOLERANCE.phrase}"
    ulp = f" (max {f.max_ulp:,} ULP)" if f.max_ulp is not None else ""
    return f"{f.name} [{f.start}, {f.stop}) {count}{ulp}"


def _fields_part(b: BufferResult) -> str | None:
    if not b.fields and not b.n_diff_outside_fields:
        return None
    shown = [_field_text(f) for f in (b.fields or ())[:SHOWN_FIELDS]]
    if b.fields and len(b.fields) > SHOWN_FIELDS:
        shown.append(f"and {plural(len(b.fields) - SHOWN_FIELDS, 'more field')}")
    if b.n_diff_outside_fields:
        shown.append(f"{b.n_diff_outside_fields:,} outside fields")
    return "fields: " + ", ".join(shown)


def _signed_zero_part(b: BufferResult) -> str | None:
    if not b.n_signed_zero:
        return None
    return f"{plural(b.n_signed_zero, 'pair')} -0.0 against +0.0"


#: The text of the facts a buffer's line shows, by fact name; each returns
#: None when it has nothing to say. Shown in the order of ``FACTS``.
TEXT_PARTS: dict[str, Callable[[BufferResult], str | None]] = {
    "n_diff": _count_part,
    "first_index": _first_part,
    "max_abs_delta": _max_part,
    "ulp_log2_histogram": ulp_histogram_text,
    "n_nan_mismatch": lambda b: _mismatch_part(b, nan=True),
    "n_inf_mismatch": lambda b: _mismatch_part(b, nan=False),
    "first_divergent_chunk": _chunk_part,
    "fields": _fields_part,
    "n_signed_zero": _signed_zero_part,
}
_PARTS = tuple(TEXT_PARTS[f.name] for f in RESULT_FACTS if f.name in TEXT_PARTS)


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(map(display_path, names))


def _prev_text(step: int, prev_step: int | None) -> str:
    """Which step ``@prev`` read, where it is not the step before (a gap)."""
    if prev_step is None or prev_step == step - 1:
        return ""
    return f"; @prev is step {prev_step}, the latest both runs hold before {step}"


def _no_inputs(step: int) -> str:
    """Why an origin had no input to compare: a source, or step 0 (where
    ``@prev`` inputs have no earlier state)."""
    return "nothing upstream at step 0" if step == 0 else "a source: no inputs"


def role_text(b: BufferResult) -> str | None:
    """A buffer's role and why: ``origin (inputs matched: a, b)``."""
    r = b.role
    if r is None:
        return None
    if r.kind == "origin":
        why = f"inputs matched: {_names(r.inputs)}" if r.inputs else _no_inputs(b.step)
    elif r.kind == "receiver":
        why = f"differing inputs: {_names(r.differing_inputs)}"
    else:
        why = f"inputs not compared: {_names(r.undumped_inputs)}"
    return f"{ROLE[r.kind].phrase} ({why}{_prev_text(b.step, r.prev_step)})"


def format_buffer(b: BufferResult) -> str:
    """A buffer's line, indented under its step's line (a group key of any
    length, ``other`` too, starts after two spaces: never at the margin),
    then its role."""
    line = _format_buffer(b)
    role = role_text(b)
    return line if role is None else f"{line}; {role}"


#: The dtypes of values beside the tensors (``sources.buffers.Value``).
VALUE_KINDS = ("value", "label")


def value_text(value: object) -> str:
    """A value beside the tensors as a line shows it: numbers, booleans and
    None as Python writes them, strings and bytes quoted (escaped)."""
    if isinstance(value, str | bytes):
        return display_path(repr(value))
    return repr(value)


def _format_value(b: BufferResult) -> str:
    """A value's line: its name, ``[value]`` or ``[label]``, its status and
    both values (the one of a run that holds it, for a value in one run)."""
    head = f"{'  ' + display_path(b.group):>5}  {display_path(b.name)} [{b.dtype}]"
    word = STATUS[b.status]
    if b.status == "only_in_a":
        return f"{head}  {word.label}: A={value_text(b.a)}"
    if b.status == "only_in_b":
        return f"{head}  {word.label}: B={value_text(b.b)}"
    if b.status == "equal":
        return f"{head}  {word.label} ({value_text(b.a)})"
    if b.status in ("malformed", "error"):
        return f"{head}  {word.label}: {display_path(b.message or '')}"
    return f"{head}  {word.label}: A={value_text(b.a)} B={value_text(b.b)}"


def _format_buffer(b: BufferResult) -> str:
    if b.dtype in VALUE_KINDS:
        return _format_value(b)
    kind = b.dtype if b.shape is None else f"{b.dtype}, {tuple(b.shape)}"
    head = f"{'  ' + display_path(b.group):>5}  {display_path(b.name)} [{kind}]"
    word = STATUS[b.status]
    if b.status == "equal":
        n = b.n_elements_a
        return f"{head}  {word.label}" + ("" if n is None else f" ({plural(n, 'element')})")
    if b.status in ("only_in_a", "only_in_b"):
        return f"{head}  {word.label}"
    if b.status in ("malformed", "error"):
        line = f"{head}  {word.label}: {display_path(b.message or '')}"
        if b.diverges:  # malformed, and its files differ in size: the runs differ here
            sizes = ["no file" if n is None else f"{n:,} bytes" for n in (b.size_a, b.size_b)]
            line += f"; its files differ in size (A {sizes[0]}, B {sizes[1]}): a divergence"
        return line
    parts = []
    if b.status == "length_mismatch":
        parts.append(
            f"{word.label}: A has {plural(b.n_elements_a or 0, 'element')}, B {b.n_elements_b:,}"
        )
        if b.n_diff == 0 and not b.n_within_tolerance:
            parts.append("common prefix equal")
        elif b.n_diff is None and b.first_divergent_chunk is None and b.message:
            parts.append(display_path(b.message))  # a prefix digests alone cannot decide
    else:
        parts.append(word.label)  # diverged, or within tolerance
        message = buffer_message(b)
        if b.n_diff is None and message:
            parts.append(display_path(message))  # decided without reading: headers differ
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


def status_counts(counts: Iterable[tuple[str, int]]) -> str:
    """``33 equal, 1 only in run B``: how many buffers have each status, as
    every step line says it (compare's and watch's)."""
    return ", ".join(f"{n:,} {STATUS[status].phrase}" for status, n in counts if n)


def _step_line(s: StepSummary, verbose: bool = False) -> str:
    counts = status_counts(s.counts)
    keys = _shown(list(map(display_path, s.diverged_groups)), verbose, sep=" ")
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
        return f"{label}: {plural(lo, 'buffer')} {EQUAL.phrase} each"
    return f"{label}: all {EQUAL.phrase}, {lo:,} to {hi:,} buffers a step ({sum(counts):,} in all)"


def note_lines(report: Report) -> list[str]:
    """The report's notes, a line each (``note: ...``, or ``warning: ...``)."""
    from .notes import note_text

    return [display_path(note_text(n)) for n in report.notes]


def _span_text(start: int, stop: int | None) -> str:
    if stop is None:
        return f"from {start} on"
    return str(start) if stop == start + 1 else f"{start} to {stop - 1}"


def selection_line(selection: Selection) -> str:
    """What a comparison was asked to look at: ``compared: steps 3 to 7 and
    buffers named w* only (--steps 3:8 --names 'w*')``."""
    parts = []
    if selection.steps is not None:
        spans = selection.steps
        one = len(spans) == 1 and spans[0][1] == spans[0][0] + 1
        parts.append(("step " if one else "steps ") + ", ".join(_span_text(*s) for s in spans))
    if selection.names is not None:
        parts.append("buffers named " + ", ".join(map(display_path, selection.names)))
    return f"compared: {' and '.join(parts)} only ({display_path(selection.options())})"


def render_text(report: Report, verbose: bool = False, first: bool = False) -> str:
    """The report; ``verbose`` lists every step and every buffer, equal ones
    too, and the origins in full. ``first``: only the first divergent step is
    listed (the verdict, origins and timeline stay the whole comparison's).
    Runs of several ranks: each rank's report, then the ranks' table,
    the pattern of their first origins, and the verdict over all of them."""
    lines = [
        f"A: {display_path(report.run_a)}",
        f"B: {display_path(report.run_b)}",
        f"schema: {display_path(report.schema)}",
    ]
    if report.selection is not None:
        lines.append(selection_line(report.selection))
    lines += note_lines(report)
    if report.ranks is not None:
        lines += _ranks_lines(report, verbose, first)
    else:
        lines += _body_lines(report, verbose, first)
    w = report.work
    if verbose and w.files_verified:  # --cache-verify's reads, not counted as hashing
        lines.append(
            f"cache: {plural(w.files_verified, 'hit')} verified by hashing again "
            f"({w.bytes_verified:,} bytes read, besides {w.bytes_hashed:,} hashed)"
        )
    return "\n".join(lines) + "\n"


def listed_buffers(
    report: Report, verbose: bool
) -> tuple[dict[int, list[BufferResult]], dict[int, tuple[int, int]]]:
    """The buffers a step lists, by step, and how many it does not (those
    that diverged at an earlier step too, and those within tolerance), by
    step, in one pass. Up to the first divergent step, every buffer that is
    not equal is listed (``verbose``: every buffer); after it, only those
    that diverge there for the first time (their name, on their rank, did
    not diverge at any earlier step) and those that could not be compared:
    the timeline sums up the rest."""
    shown: dict[int, list[BufferResult]] = {}
    left: dict[int, tuple[int, int]] = {}
    first = report.first_divergent_step
    diverged: set[tuple[int | None, str]] = set()  # (rank, name) that diverged so far
    for b in report.buffers:
        if verbose:
            shown.setdefault(b.step, []).append(b)
            continue
        status = b.status
        if status == "equal":
            continue
        key = (b.rank, b.name)
        if first is None or b.step <= first or status in TROUBLE or status == "label_differs":
            listed = True
        else:
            listed = b.diverges and key not in diverged
        if b.diverges:
            diverged.add(key)
        if listed:
            shown.setdefault(b.step, []).append(b)
        else:
            before, close = left.get(b.step, (0, 0))
            left[b.step] = (before + b.diverges, close + (not b.diverges))
    return shown, left


def _left_text(before: int, close: int) -> str:
    """What a step's line says of the buffers it does not list."""
    parts = [f"{before:,} that diverged at an earlier step"] if before else []
    if close:
        parts.append(f"{close:,} {WITHIN_TOLERANCE.phrase}")
    return f"  (not listed: {', '.join(parts)})"


def _body_lines(report: Report, verbose: bool, first: bool = False) -> list[str]:
    """A run pair's steps and buffers, skipped entries, errors, verdict and timeline."""
    lines: list[str] = []
    shown, left = listed_buffers(report, verbose)
    run: list[StepSummary] = []  # steps whose buffers are all equal, not yet written
    at = report.first_divergent_step
    for s in report.steps:
        if first and s.step != at:
            continue
        if not verbose and _equal_count(s) is not None and s.step not in shown:
            run.append(s)
            continue
        if run:
            lines.append(_folded_line(run))
            run = []
        line = _step_line(s, verbose)
        if s.step in left:
            line += _left_text(*left[s.step])
        lines.append(line)
        lines += [format_buffer(b) for b in shown.get(s.step, ())]
    if run:
        lines.append(_folded_line(run))
    n = len(report.steps) - (at is not None)
    if first and n:
        why = "" if at is not None else ": no step diverged"
        lines.append(f"{plural(n, 'other step' if at is not None else 'step')} not listed "
                     f"(--first{why})")  # fmt: skip
    if report.skipped:
        lines.append(f"skipped {plural(len(report.skipped), 'entry', 'entries')}:")
        lines += [f"  {display_path(s.path)}: {display_path(s.reason)}" for s in report.skipped]
    lines += _error_lines(report.errors)
    lines.append("")
    lines += _verdict_lines(report, verbose)
    if report.first_divergent_step is None:  # a divergent verdict says it after where born
        lines += structure_lines(report)
    lines += _timeline_lines(report)
    return lines


def _error_lines(errors: tuple[Problem, ...] | list[Problem]) -> list[str]:
    if not errors:
        return []
    lines = [f"{plural(len(errors), 'error')}:"]
    return lines + [f"  {display_path(e.path)}: {display_path(e.message)}" for e in errors]


# --- runs of several ranks -----------------------------------------------------------


def origin_at(o: Origin | None) -> str:
    return "-" if o is None else f"{display_path(o.group)} {display_path(o.name)} at step {o.step}"


def rank_list(ranks: list[int]) -> str:
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {', '.join(map(str, ranks))}"


def _ranks_lines(report: Report, verbose: bool, first: bool = False) -> list[str]:
    assert report.ranks is not None
    lines = [f"{plural(len(report.ranks), 'rank')}: {', '.join(str(r.rank) for r in report.ranks)}"]
    for rr in report.ranks:
        rep = rr.report
        lines += [
            "",
            f"=== rank {rr.rank} (A: {display_path(rep.run_a)}, B: {display_path(rep.run_b)})",
        ]
        lines += _body_lines(rep, verbose, first)
    known = {e for rr in report.ranks for e in rr.report.errors}
    own = [e for e in report.errors if e not in known]  # of the runs, not of a rank
    if own or report.skipped:
        lines.append("")
    if report.skipped:
        lines.append(f"skipped {plural(len(report.skipped), 'entry', 'entries')}:")
        lines += [f"  {display_path(s.path)}: {display_path(s.reason)}" for s in report.skipped]
    lines += _error_lines(own)
    lines += ["", *rank_table(report), *rank_pattern(report), ""]
    lines += ranks_verdict_lines(report)
    return lines


def rank_table(report: Report) -> list[str]:
    """One row per rank: verdict, first divergent step, groups, first origin
    (where the schema declares inputs)."""
    assert report.ranks is not None
    origins = report.origins is not None
    head = ["rank", "verdict", "first divergent step", "groups"] + (["first origin"] * origins)
    rows = [
        [
            str(rr.rank),
            verdict_word(rr.report).phrase,
            "-" if rr.report.first_divergent_step is None else str(rr.report.first_divergent_step),
            " ".join(map(display_path, rr.report.first_divergent_groups)) or "-",
        ]
        + ([origin_at(rr.first_origin)] * origins)
        for rr in report.ranks
    ]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    out = ["per rank:"]
    for r in [head, *rows]:
        cells = [
            r[0].rjust(widths[0]),
            *(c.ljust(w) for c, w in zip(r[1:], widths[1:], strict=True)),
        ]
        out.append(("  " + "  ".join(cells)).rstrip())
    return out


def _key_at(k: BufferKey) -> str:
    return f"{display_path(k.group)} {display_path(k.name)} at step {k.step}"


def rank_pattern(report: Report) -> list[str]:
    """The line of what the ranks' first origins point at
    (``report.rank_pattern``): a kernel, nondeterministic wherever it runs;
    some ranks only; none with one rank; not known yet."""
    p = report.rank_pattern
    if p is None:
        return []
    parts = [f"{_key_at(k)} on {rank_list(list(ranks))}" for k, ranks in p.firsts]
    if p.unfound:
        parts.append(f"no origin found on {rank_list(list(p.unfound))}")
    if p.quiet:
        parts.append(f"no divergence on {rank_list(list(p.quiet))}")
    if p.uncompared:
        parts.append(f"not compared (errors) on {rank_list(list(p.uncompared))}")
    listed = "; ".join(parts)
    if p.kind == PatternKind.SOME_RANKS:
        return [
            f"pattern: the first origin is on some ranks only: {listed}: look at what sets "
            "those ranks apart: their data, their place in the topology, the order of "
            "cross-rank reductions"
        ]
    if p.kind == PatternKind.ONE_RANK:
        return [
            f"pattern: none with one rank: {listed}: one rank cannot tell a kernel "
            "nondeterministic wherever it runs from what sets ranks apart"
        ]
    if p.kind == PatternKind.KERNEL:
        ((key, _),) = p.firsts
        return [
            f"pattern: the same first origin on every rank, {_key_at(key)}: it points "
            "at a kernel, nondeterministic wherever it runs"
        ]
    fix = "compare those ranks" if p.uncompared else "declare or dump the inputs left open"
    if p.uncompared and p.unfound:
        fix = "compare those ranks, and declare or dump the inputs left open"
    return [
        f"pattern: not known yet: {listed}: {fix} to tell a kernel nondeterministic wherever "
        "it runs from what sets ranks apart"
    ]


def ranks_verdict_lines(report: Report) -> list[str]:
    """The verdict over every rank: the worst, at the earliest first divergent step."""
    assert report.ranks is not None
    word = verdict_word(report)
    n = plural(len(report.ranks), "rank")
    if report.first_divergent_step is None:
        if report.verdict == "error":
            return [
                f"VERDICT: {word.phrase}: {plural(len(report.errors), 'problem')} (above); no "
                f"divergence on any of the {n} among the buffers that could be compared"
            ]
        close = f", {plural(report.n_within_tolerance, 'buffer')} only {WITHIN_TOLERANCE.phrase}"
        return [f"VERDICT: {word.phrase}: {n}{close if report.n_within_tolerance else ''}"]
    diverged = VERDICT["diverged"].phrase
    state = diverged if report.verdict == "diverged" else f"{word.phrase}, and {diverged}"
    first = [rr.rank for rr in report.ranks
             if rr.report.first_divergent_step == report.first_divergent_step]  # fmt: skip
    titles = {g.key: g.title for g in report.groups}
    groups = ", ".join(f"{display_path(k)} ({display_path(titles[k])})"
                       for k in report.first_divergent_groups)  # fmt: skip
    return [
        f"VERDICT: {state}: first divergent step {report.first_divergent_step} on "
        f"{rank_list(first)} (of {n}); groups: {groups}"
    ]


def _verdict_lines(report: Report, verbose: bool = False) -> list[str]:
    n = len(report.buffers)
    n_steps = len(report.steps)
    word = verdict_word(report)
    if report.first_divergent_step is None:
        if report.verdict == "identical":
            close = report.n_within_tolerance
            counted = f"{plural(n, 'buffer')} over {plural(n_steps, 'step')}"
            if close:
                which = "differing" if n == 1 else f"{close} of them differing"
                return [
                    f"VERDICT: {word.phrase}: {counted}, {which} only {WITHIN_TOLERANCE.phrase}"
                ]
            labels = sum(b.status == "label_differs" for b in report.buffers)
            if labels:  # labels differ (a path, a date): listed above, no divergence
                return [
                    f"VERDICT: {word.phrase}: {counted}, every one bit-for-bit {EQUAL.phrase} "
                    f"but {plural(labels, 'label')} (listed above, not compared for the verdict)"
                ]
            verb = "is" if n == 1 else "are"
            return [f"VERDICT: {word.phrase}: {counted} {verb} bit-for-bit {EQUAL.phrase}"]
        return [
            f"VERDICT: {word.phrase}: {plural(len(report.errors), 'problem')} (above); "
            "no divergence among the buffers that could be compared"
        ]
    diverged = VERDICT["diverged"].phrase
    state = diverged if report.verdict == "diverged" else f"{word.phrase}, and {diverged}"
    head = f"VERDICT: {state}"
    keys = {g.key: display_path(g.key) for g in report.groups}
    titles = {g.key: display_path(g.title) for g in report.groups}
    suspects = _shown(
        [
            keys[k] if titles[k] == keys[k] else f"{keys[k]} ({titles[k]})"
            for k in report.first_divergent_groups
        ],
        verbose,
    )
    out = [f"{head}: first divergent step {report.first_divergent_step}; groups: {suspects}"]
    out += born_lines(report, verbose)
    out += structure_lines(report)
    listed = _listed_groups(report, verbose)
    width = max((len(titles[g.key]) for g in listed), default=0) + 4
    key_w = max(5, *(len(keys[g.key]) for g in listed))  # long keys (by-name groups) align
    for g in listed:
        state = GROUP_STATUS[g.status].label
        tail = f": {', '.join(map(display_path, g.diverged))}" if g.diverged else ""
        ranks = parallel_ranks_text(g.key)
        tail += f" ({ranks})" if ranks else ""
        out.append(f"  {keys[g.key]:>{key_w}}  {titles[g.key]:<{width}}{state}{tail}")
    if len(listed) < len(report.groups):
        shown = {g.key for g in listed}
        counts: dict[str, int] = {}
        for g in report.groups:
            if g.key not in shown:
                counts[g.status] = counts.get(g.status, 0) + 1
        more = plural(len(report.groups) - len(listed), "more group")
        if len(counts) == 1:
            folded = f", all {GROUP_STATUS[next(iter(counts))].phrase}"
        else:
            folded = ": " + ", ".join(f"{n:,} {GROUP_STATUS[k].phrase}" for k, n in counts.items())
        out.append(f"  ... and {more}{folded} (-v lists every group)")
    hinted = set(report.next_groups)  # where it was born, not where it was received
    by_hint: dict[str, list[str]] = {}  # groups that share a hint get it once
    for g in report.groups:
        hint = group_hint(g) if g.key in hinted and g.status == "diverged" else None
        if hint:
            by_hint.setdefault(hint, []).append(keys[g.key])
    for hint, named in by_hint.items():
        out.append("")
        import textwrap

        text = f"next, {_shown(named, verbose)}: {display_path(hint)}"
        out += textwrap.wrap(
            text, width=88, subsequent_indent="  ", break_on_hyphens=False
        )  # "rounding-size" stays whole
    return out


#: How the text says each kind of parallel rank (``findings.parallel_ranks``).
_RANK_WORDS = {
    "tensor": "tensor-parallel", "pipeline": "pipeline-parallel", "expert": "expert-parallel",
    "data": "ZeRO data-parallel", "model": "model-parallel",
}  # fmt: skip


def parallel_ranks_text(name: str) -> str | None:
    """Which parallel ranks a checkpoint's group (its file or folder) holds:
    ``tensor-parallel rank 1, pipeline-parallel rank 0``; None for none."""
    from ..model.findings import parallel_ranks

    ranks = parallel_ranks(name)
    if not ranks:
        return None
    return ", ".join(f"{_RANK_WORDS[kind]} rank {n}" for kind, n in ranks)


def _listed_groups(report: Report, verbose: bool) -> list[GroupVerdict]:
    """The groups the verdict lists: all of them (``verbose``, or no more
    than ``GROUP_ROWS``), else the first ``GROUP_ROWS`` that are not equal."""
    groups = list(report.groups)
    if verbose or len(groups) <= GROUP_ROWS:
        return groups
    quiet = {GroupStatus.EQUAL, GroupStatus.ABSENT}
    return [g for g in groups if g.status not in quiet][:GROUP_ROWS]


def _shown(items: list[str], verbose: bool = False, sep: str = ", ") -> str:
    """The first ``SHOWN_ROLES`` items and how many more (``verbose``: all)."""
    more = 0 if verbose else len(items) - SHOWN_ROLES
    if more <= 0:
        return sep.join(items)
    return sep.join(items[:SHOWN_ROLES]) + f"{sep.rstrip()} and {more} more"


def _buffer_at(b: BufferResult) -> str:
    return f"{display_path(b.group)} {display_path(b.name)} at step {b.step}"


def _born_text(b: BufferResult) -> str:
    r = b.role
    assert r is not None
    why = f"inputs {_names(r.inputs)} matched" if r.inputs else _no_inputs(b.step)
    return f"{_buffer_at(b)} ({why}{_prev_text(b.step, r.prev_step)})"


def _first_names(names: Iterable[str], verbose: bool) -> str:
    """Names, the first 3 and how many more (``verbose``: all)."""
    shown = [display_path(n) for n in names]
    return ", ".join(shown) if verbose else first_few(shown)


def _born_here(here: list[BufferResult], verbose: bool) -> str:
    """The origins of one step, each named once, with their inputs summed up:
    the inputs that matched (each once, the first 3 and how many more;
    ``verbose``: all), the sources, and ``@prev``'s step where it is not the
    step before."""
    at = here[0].step
    names = _shown([f"{display_path(b.group)} {display_path(b.name)}" for b in here], verbose)
    inputs = dict.fromkeys(n for b in here for n in b.role.inputs)  # type: ignore[union-attr]
    sources = sum(not b.role.inputs for b in here)  # type: ignore[union-attr]
    why = [f"inputs {_first_names(inputs, verbose)} matched"] if inputs else []
    if sources and not inputs:
        why.append(_no_inputs(at))
    elif sources:
        why.append(
            f"{plural(sources, 'buffer')} with nothing upstream at step 0"
            if at == 0
            else f"{plural(sources, 'source')} with no inputs"
        )
    prev = next((b.role.prev_step for b in here if b.role.prev_step is not None), None)  # type: ignore[union-attr]
    return f"{names} at step {at} ({'; '.join(why)}{_prev_text(at, prev)})"


def _at_steps(steps: list[int]) -> str:
    """``step 4``, ``steps 4-7, 9``, or ``12 steps, 4 to 40`` beyond three ranges."""
    if len(steps) == 1:
        return f"step {steps[0]}"
    if len(step_ranges(steps)) <= 3:
        return f"steps {format_steps(steps)}"
    return f"{len(steps):,} steps, {steps[0]} to {steps[-1]}"


def _by_buffer(buffers: Iterable[BufferResult]) -> dict[tuple[str, str], list[BufferResult]]:
    """Buffers by (group, name), in the order each first comes."""
    out: dict[tuple[str, str], list[BufferResult]] = {}
    for b in buffers:
        out.setdefault((b.group, b.name), []).append(b)
    return out


def born_lines(report: Report, verbose: bool = False) -> list[str]:
    """Where the divergence was born (``report.born``: the first step with an
    origin, its origins and what received it there), the buffers left
    undetermined up to that step, and the origins that come later: none
    without declared inputs or a divergence. Each buffer is named once on
    each line, its inputs summed up (the first few; ``verbose``: all of
    them, and each origin of the first step with its own inputs)."""
    found = report.born
    if found is None:
        return []
    if not found.declared:
        return ["  born in: unknown: no buffer that diverged declares its inputs in the schema"]
    keys = {*found.origins, *found.undetermined, *found.later}
    by_key = {k: b for b in report.buffers if (k := BufferKey.of(b)) in keys}
    if found.step is not None:
        here = [by_key[k] for k in found.origins]
        born = "; ".join(map(_born_text, here)) if verbose else _born_here(here, verbose)
        received = [display_path(n) for n in found.received]
        tail = f"; received: {_shown(received, verbose)}" if received else ""
        out = [f"  born in: {born}{tail}"]
    else:
        out = [
            "  born in: not found: no buffer that diverged had every input it declares dumped "
            "and matching"
        ]
    undetermined = [by_key[k] for k in found.undetermined]
    if undetermined:
        open_ = []
        for (group, name), bs in _by_buffer(undetermined).items():
            inputs = dict.fromkeys(n for b in bs for n in b.role.undumped_inputs)  # type: ignore[union-attr]
            open_.append(
                f"{display_path(group)} {display_path(name)} at {_at_steps([b.step for b in bs])} "
                f"(not compared: {_first_names(inputs, verbose)})"
            )
        out.append(f"  {ROLE['undetermined'].phrase}: {_shown(open_, verbose, '; ')}")
    later = [by_key[k] for k in found.later]
    if later:
        each = [
            f"{display_path(group)} {display_path(name)} at {_at_steps([b.step for b in bs])}"
            for (group, name), bs in _by_buffer(later).items()
        ]
        n = plural(len(later), "later origin")
        out.append(f"  {n}: {_shown(each, verbose, '; ')}")
    return out


def structure_lines(report: Report) -> list[str]:
    """Where two traces' sequences of records part (none for runs that are
    not both traces)."""
    s = report.structure
    if s is None:
        return []
    if not s.parted:
        return [
            "  structure: the traces ran the same records in the same order at every step both hold"
        ]
    where = f"after {display_path(s.after)}" if s.after is not None else "at the step's start"

    def runs(side: str, what: str | None, record: str | None) -> str:
        if what is None or record is None:
            return f"{side}'s step ends there"
        shown = display_path(what)
        return f"{side} runs {shown}" + (f" ({display_path(record)})" if record != what else "")

    return [
        f"  structure: the traces part at step {s.step}, {where}: "
        f"{runs('A', s.a, s.a_record)}, {runs('B', s.b, s.b_record)}; the records after it "
        "are compared where their names match"
    ]


def verdict_lines(report: Report, verbose: bool = False) -> list[str]:
    """The verdict block that ends the text report (``watch`` ends with it too)."""
    return _verdict_lines(report, verbose)


#: The words of the timeline cells that show no figure.
_CELL_WORDS = {
    Cell.NAN_INF: "nan/inf",
    Cell.MISSING: "missing",
    Cell.LENGTH: "length",
    Cell.DIFFERS: "differs",
    Cell.MALFORMED: "malformed",
}


def cell_text(row: TimelineRow | None) -> str:
    """One group at one step in the timeline table, as its row's ``cell`` says:
    its largest ULP distance (rounding-size), its largest |A-B|, or a word."""
    if row is None:
        return "."
    if row.cell == Cell.ROUNDING:
        return f"{row.max_ulp:,} ulp"
    if row.cell == Cell.DELTA:
        d = row.max_abs_delta
        return str(d) if isinstance(d, int) and d < 10**6 else f"{d:.3g}"
    return _CELL_WORDS[row.cell]  # type: ignore[index]


def legend_text(cells: list[list[str]]) -> str:
    """What the factless words in the table mean, for those it holds."""
    used = {c for row in cells for c in row}
    words = {
        "nan/inf": "a NaN or infinity differs",
        "missing": "in one run only",
        "differs": "by digests only",
        "malformed": "sizes differ, not whole elements",
    }
    return "".join(f"; {w}: {meaning}" for w, meaning in words.items() if w in used)


def _timeline_lines(report: Report) -> list[str]:
    """The step x group table of how the divergence spreads: none without a
    divergence, or when a single step is not all equal (its buffers are listed)."""
    if report.first_divergent_step is None:
        return []
    by_step: dict[int, dict[str, TimelineRow]] = {}
    for row in report.timeline:
        by_step.setdefault(row.step, {})[row.group] = row
    if len(by_step) < 2:
        return []
    order = [g.key for g in report.groups] or sorted({r.group for r in report.timeline})
    keys = [k for k in order if any(k in rows for rows in by_step.values())]
    keys += [k for k in dict.fromkeys(r.group for r in report.timeline) if k not in keys]
    steps = list(by_step)[:TIMELINE_ROWS]
    cells = [[cell_text(by_step[s].get(k)) for k in keys] for s in steps]
    legend = legend_text(cells)
    born = {(o.step, o.group) for o in report.origins or ()}
    if born & {(s, k) for s in steps for k in keys}:
        cells = [[c + "*" if (s, k) in born else c for c, k in zip(row, keys, strict=True)]
                 for s, row in zip(steps, cells, strict=True)]  # fmt: skip
        legend += f"; *: an {ROLE['origin'].phrase}, where a divergence was born"
    step_w = max(len("step"), *(len(str(s)) for s in steps))
    widths = [max(len(display_path(k)), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    out = [
        "",
        "timeline: per group, the largest |A-B| at each step that is not all equal "
        f"(N ulp: rounding-size; . equal{legend})",
        "  "
        + "step".rjust(step_w)
        + "".join(f"  {display_path(k):>{w}}" for k, w in zip(keys, widths, strict=True)),
    ]
    for step, row in zip(steps, cells, strict=True):
        out.append(
            "  " + str(step).rjust(step_w)
            + "".join(f"  {c:>{w}}" for c, w in zip(row, widths, strict=True))
        )  # fmt: skip
    if len(by_step) > TIMELINE_ROWS:
        out.append(f"  ... {plural(len(by_step) - TIMELINE_ROWS, 'more step')}")
    return out
