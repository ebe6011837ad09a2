"""``fastdiff rerun``'s text: a line per arm, the verdict, and the comparison
of arm 1 with the first arm that diverges from it. Pure functions."""

from __future__ import annotations

import shlex

from ..model.findings import OriginAgreement, ReproductionKind
from ..model.statuses import Verdict
from ..textkit.escape import display_path
from ..textkit.fmt import first_few, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model.rerun import ArmComparison, ArmResult, RerunFindings, RerunResult
    from ..model.results import Origin

#: Diverged buffers of a step named in an arm's line.
_SHOWN = 3


def _names(names: tuple[str, ...]) -> str:
    return first_few(list(names), _SHOWN)


def format_arm_start(index: int, arms: int, folder: str) -> str:
    """The progress line as an arm starts."""
    return f"fastdiff rerun: arm {index} of {arms} running, into {display_path(folder)}"


def format_arm(arm: ArmResult) -> str:
    """An arm's line once it ended: its exit and time, or why it failed."""
    if arm.problem is not None:
        return f"arm {arm.index}: FAILED: {display_path(arm.problem)}"
    return f"arm {arm.index}: exit 0 in {arm.elapsed_s:.1f} s"


def _against(c: ArmComparison) -> str:
    if c.verdict == Verdict.ERROR:
        return f"arm {c.arm}: could not be compared with arm 1 (see the errors above)"
    if c.first_step is None:
        return f"arm {c.arm}: identical to arm 1"
    return f"arm {c.arm}: DIVERGES from arm 1 at step {c.first_step}: {_names(c.first_buffers)}"


def _reproduces(found: RerunFindings) -> str:
    """Whether the divergence shows in every arm, at the same place."""
    how = found.reproduces
    assert how is not None
    steps = how.steps
    if how.kind is ReproductionKind.UNKNOWN:
        return (
            "reproduces: unknown with one arm against arm 1; run more arms (-n 3 or more) to "
            "see whether it shows every time"
        )
    if how.kind is ReproductionKind.INTERMITTENT:
        n, others = how.diverging, how.others
        return (
            f"reproduces: intermittently: {n} of {others} arms diverge from arm 1, "
            f"{plural(others - n, 'arm')} matched it bit for bit"
        )
    if how.kind is ReproductionKind.SAME_PLACE:
        return f"reproduces: in every arm, first at step {steps[0]} in the same buffers"
    if how.kind is ReproductionKind.SAME_STEP:
        return f"reproduces: in every arm, first at step {steps[0]} (not always the same buffers)"
    return (
        "reproduces: in every arm, but first at different steps ("
        + ", ".join(map(str, steps))
        + ")"
    )


def _origin_text(o: Origin) -> str:
    return f"{display_path(o.group)} {display_path(o.name)} at step {o.step}"


def _origin_agreement(found: RerunFindings) -> str | None:
    """Whether the diverging arms share their first origin (the schema
    declares inputs): the same kernel every time, or not."""
    if found.origins is None:
        return None
    if found.origins is OriginAgreement.NOT_EVERYWHERE:
        return "origin: not found in every diverging arm (see the comparison below)"
    firsts = [(a.arm, _origin_text(a.origin)) for a in found.diverging if a.origin is not None]
    if found.origins is OriginAgreement.SAME:
        return f"origin: the same in every diverging arm: {firsts[0][1]}"
    shown = "; ".join(f"arm {i}: {t}" for i, t in firsts)
    return f"origin: differs between arms: {shown}"


def render_rerun_text(result: RerunResult) -> str:
    """The whole report of a rerun that ran to its end (or stopped): its
    summary (``summary_lines``), then the report of arm 1 against the first
    arm that diverges from it."""
    from .text import render_text

    lines = summary_lines(result)
    found = result.findings
    if found is not None and found.first is not None and not found.errors and _compared(result):
        report = result.reports[found.first - 2]
        lines += ["", f"{against_title(found.first)}:", render_text(report).rstrip("\n")]
    return "\n".join(lines) + "\n"


def against_title(arm: int) -> str:
    """The title of the report of arm 1 against arm ``arm``."""
    return f"arm 1 (A) against arm {arm} (B)"


def _compared(result: RerunResult) -> bool:
    """Whether every arm ran and they were compared (not stopped, none failed)."""
    return not result.interrupted and result.failed is None


def summary_lines(result: RerunResult) -> list[str]:
    """The lines of a rerun's summary: the command, each arm, the verdict,
    where the runs are."""
    arms = result.arms
    n = result.n_arms
    lines = [f"command: {display_path(shlex.join(result.command))}"]
    lines += [format_arm(a) for a in arms[:1]]
    found = result.findings
    for arm in arms[1:]:
        line = format_arm(arm)
        c = found.arm(arm.index) if found is not None else None
        if c is not None:
            line += "; " + _against(c).split(": ", 1)[1]
        lines.append(line)
    where = display_path(result.out)
    kept = f"kept in {where}" if result.kept else f"removed from {where} (--keep keeps them)"
    if result.interrupted:
        stopped = f"arm {result.stopped} was stopped; " if result.stopped is not None else ""
        lines += ["", f"INTERRUPTED: {stopped}the runs written so far are kept in {where}"]
        return lines
    failed = result.failed
    if failed is not None:
        lines += ["", f"TROUBLE: arm {failed.index} of {n} failed: {display_path(failed.problem)}"]
        if failed.stderr_tail:
            lines.append(f"the end of its stderr ({display_path(failed.err_path)}):")
            lines += [f"  {display_path(t)}" for t in failed.stderr_tail]
        lines.append(f"runs: {kept}")
        return lines
    assert found is not None  # every arm succeeded: they were compared
    lines.append("")
    if found.errors:
        lines.append(
            f"TROUBLE: {plural(len(found.errors), 'arm')} could not be compared with arm 1 "
            f"(arm {', '.join(map(str, found.errors))}); whether the job is deterministic is "
            "unknown"
        )
    elif found.first is None:
        first = result.reports[0]
        lines.append(
            f"DETERMINISTIC: the {len(arms)} arms are bit-identical "
            f"({plural(len(first.buffers), 'buffer')} over {plural(len(first.steps), 'step')})"
        )
    else:
        c = found.arm(found.first)
        assert c is not None
        report = result.reports[c.arm - 2]
        lines.append(
            f"NOT DETERMINISTIC: {len(found.diverging)} of {len(found.arms)} arms diverge from "
            f"arm 1; first at step {c.first_step} (arm {c.arm}: {_names(c.first_buffers)})"
        )
        from .text import born_lines

        born = born_lines(report)
        if born:
            lines.append(f"{born[0].strip()} (arm {c.arm})")
        lines.append(_reproduces(found))
        origin = _origin_agreement(found)
        if origin:
            lines.append(origin)
    lines.append(f"runs: {kept}")
    return lines
