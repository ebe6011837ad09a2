"""Sweep renderers: one JSON Lines record per finished pair, a text row per
pair, and the summary (text or a JSON record). Pure functions."""

from __future__ import annotations

import json

from ..statuses import VERDICT
from .escape import display_path
from .fmt import plural
from .json import JSON_SCHEMA_VERSION, report_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..results import Report
    from ..sweep import SweepSummary


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
        "error_and_diverged": summary.error_and_diverged,
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
    """The two runs, then identical / identical within tolerance / diverged
    at step N [groups] / error (k problems), and error, and diverged at step
    N [groups] (k problems), as compare's verdict says both."""
    diverged = ""
    if report.first_divergent_step is not None:
        groups = " ".join(report.first_divergent_groups)
        diverged = f"{VERDICT['diverged'].phrase} at step {report.first_divergent_step} [{groups}]"
    word = report.verdict_word.phrase
    if report.verdict == "error":
        problems = f"{plural(len(report.errors), 'problem')}: {report.errors[0].message}"
        what = f"{word}, and {diverged} ({problems})" if diverged else f"{word} ({problems})"
    elif report.verdict == "diverged":
        what = diverged
    else:
        what = word  # "identical within tolerance" where not bit-identical, as compare says it
    return f"{display_path(report.run_a)}  {display_path(report.run_b)}  {display_path(what)}"


def render_sweep_summary_text(summary: SweepSummary) -> str:
    lines = [
        f"{summary.pairs} pairs: {summary.identical} identical, {summary.diverged} diverged, "
        f"{summary.error} with errors"
        + (f" ({summary.error_and_diverged} of them diverged too)"
           if summary.error_and_diverged else "")
        + f" ({summary.elapsed_s:.2f} s, {summary.cache_hits} digests from the cache)"
    ]  # fmt: skip
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
