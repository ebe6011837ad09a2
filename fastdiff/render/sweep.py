"""Sweep renderers: one JSON Lines record per finished pair, a text row per
pair, and the summary (text or a JSON record). Pure functions."""

from __future__ import annotations

import json

from ..model.findings import Unclassified
from ..model.statuses import Verdict
from ..textkit.escape import display_path, json_text
from ..textkit.fmt import plural
from .json import JSON_SCHEMA_VERSION, origin_dict, report_dict
from .notes import note_text
from .words import VERDICT, verdict_word

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..model.results import Origin, Report
    from ..model.sweep import SweepSummary, UnclassifiedRun


def render_sweep_record(index: int, report: Report) -> str:
    """One JSON Lines record for a finished pair: the compare JSON plus its index."""
    record = {"record": "pair", "index": index, **report_dict(report)}
    return json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"


def unclassified_reason(u: UnclassifiedRun) -> str:
    """Why a run is in no identity class, in words (raw names: the caller escapes)."""
    if u.reason is Unclassified.NO_PAIR:
        return "in no pair of the sweep"
    if u.reason is Unclassified.EVERY_PAIR_ERROR:
        return "every pair with it ended in error"
    return (
        f"its pair with {', '.join(u.failed)} ended in error, so whether they are "
        "bit-identical is unknown"
    )


def sweep_summary_dict(summary: SweepSummary) -> dict[str, Any]:
    d: dict[str, Any] = {
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
            [
                {"run": display_path(u.run), "reason": unclassified_reason(u)}
                for u in summary.unclassified
            ]
            if summary.unclassified is not None
            else None
        ),
        "cache_hits": summary.cache_hits,
        "elapsed_s": summary.elapsed_s,
        "interrupted": summary.interrupted,
    }
    found = summary.first_origins
    if found is not None:  # a schema declared inputs (else the record is as it always was)
        d["reproducible_origin"] = found.reproducible
        d["first_origins"] = [
            {"origin": None if o is None else origin_dict(o), "pairs": list(pairs)}
            for o, pairs in found.groups
        ]
    if summary.notes:  # the one schema of the sweep, where pairs alone would differ
        d["notes"] = [json_text(note_text(n)) for n in summary.notes]
    return d


def render_sweep_summary_record(summary: SweepSummary) -> str:
    return json.dumps(sweep_summary_dict(summary), separators=(",", ":"), allow_nan=False) + "\n"


def format_sweep_row(report: Report) -> str:
    """The two runs, then the pair's verdict (``pair_verdict``)."""
    return f"{display_path(report.run_a)}  {display_path(report.run_b)}  {pair_verdict(report)}"


def pair_verdict(report: Report) -> str:
    """identical / identical within tolerance / diverged at step N [groups] /
    error (k problems), and error, and diverged at step N [groups] (k
    problems), as compare's verdict says both; escaped for display."""
    diverged = ""
    if report.first_divergent_step is not None:
        groups = " ".join(report.first_divergent_groups)
        diverged = (
            f"{VERDICT[Verdict.DIVERGED].phrase} at step {report.first_divergent_step} [{groups}]"
        )
    word = verdict_word(report).phrase
    if report.verdict == Verdict.ERROR:
        problems = f"{plural(len(report.errors), 'problem')}: {report.errors[0].message}"
        what = f"{word}, and {diverged} ({problems})" if diverged else f"{word} ({problems})"
    elif report.verdict == Verdict.DIVERGED:
        what = diverged
    else:
        what = word  # "identical within tolerance" where not bit-identical, as compare says it
    return display_path(what)


def render_sweep_summary_text(summary: SweepSummary, runs: Sequence[tuple[str, str]] = ()) -> str:
    """The summary; ``runs``: each pair's two runs, in order (to name pairs)."""
    lines = [
        f"{plural(summary.pairs, 'pair')}: {summary.identical} identical, "
        f"{summary.diverged} diverged, {summary.error} with errors"
        + (f" ({summary.error_and_diverged} of them diverged too)"
           if summary.error_and_diverged else "")
        + f" ({summary.elapsed_s:.2f} s, {plural(summary.cache_hits, 'digest')} from the cache)"
    ]  # fmt: skip
    if summary.interrupted:
        lines[0] = "interrupted; finished " + lines[0]
    lines += [display_path(note_text(n)) for n in summary.notes]  # "note: ..." / "warning: ..."
    if summary.classes is not None:
        lines.append("classes of bit-identical runs:" + ("" if summary.classes else " none"))
        lines += [
            f"  {i}: {' '.join(display_path(r) for r in c)}"
            for i, c in enumerate(summary.classes, 1)
        ]
    if summary.unclassified:
        lines.append("in no class (a pair ended in error):")
        lines += [
            f"  {display_path(u.run)}: {display_path(unclassified_reason(u))}"
            for u in summary.unclassified
        ]
    lines += origin_lines(summary, runs)
    return "\n".join(lines) + "\n"


def _origin_text(o: Origin | None) -> str:
    if o is None:
        return "no origin found"
    rank = "" if o.rank is None else f" on rank {o.rank}"
    return f"{display_path(o.group)} {display_path(o.name)} at step {o.step}{rank}"


def origin_lines(summary: SweepSummary, runs: Sequence[tuple[str, str]] = ()) -> list[str]:
    """Whether the diverging pairs share their first origin; ``runs``: each
    pair's two runs, by index, to name the pairs that disagree."""
    found = summary.first_origins
    if found is None or not found.groups:
        return []
    if found.reproducible is None:
        n = found.n_diverging
        return [f"first origin: none found in the {plural(n, 'diverging pair')} (their "
                "diverged buffers are receivers or undetermined, or have no inputs)"]  # fmt: skip
    if found.reproducible:
        ((o, pairs),) = found.groups
        n = len(pairs)
        every = (
            "the one diverging pair"
            if n == 1
            else ("both diverging pairs" if n == 2 else f"all {n:,} diverging pairs")
        )
        return [f"first origin reproducible: {_origin_text(o)} in {every}"]  # fmt: skip

    def named(i: int) -> str:
        if i < len(runs):
            return " vs ".join(map(display_path, runs[i]))
        return f"pair {i}"

    lines = ["first origins differ between the diverging pairs:"]
    for o, pairs in found.groups:
        lines.append(f"  {_origin_text(o)}: {', '.join(named(i) for i in pairs)}")
    return lines
