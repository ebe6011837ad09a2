"""``fastdiff rerun``'s text: a line per arm, the verdict, and the comparison
of arm 1 with the first arm that diverges from it. Pure functions."""

from __future__ import annotations

import shlex

from ..textkit.escape import display_path
from ..textkit.fmt import first_few, plural

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model.results import Report
    from ..rerun import ArmResult, RerunResult

#: Diverged buffers of a step named in an arm's line.
_SHOWN = 3


def _first_buffers(report: Report) -> list[str]:
    from ..model.results import DIVERGENT

    step = report.first_divergent_step
    return [b.name for b in report.buffers if b.step == step and b.status in DIVERGENT]


def _names(names: list[str]) -> str:
    return first_few(names, _SHOWN)


def format_arm_start(index: int, arms: int, folder: str) -> str:
    """The progress line as an arm starts."""
    return f"fastdiff rerun: arm {index} of {arms} running, into {display_path(folder)}"


def format_arm(arm: ArmResult) -> str:
    """An arm's line once it ended: its exit and time, or why it failed."""
    if arm.problem is not None:
        return f"arm {arm.index}: FAILED: {display_path(arm.problem)}"
    return f"arm {arm.index}: exit 0 in {arm.elapsed_s:.1f} s"


def _against(report: Report, index: int) -> str:
    if report.verdict == "error":
        return f"arm {index}: could not be compared with arm 1 (see the errors above)"
    if report.first_divergent_step is None:
        return f"arm {index}: identical to arm 1"
    names = _first_buffers(report)
    return (
        f"arm {index}: DIVERGES from arm 1 at step {report.first_divergent_step}: {_names(names)}"
    )


def _reproduces(diverging: list[tuple[int, Report]], others: int) -> str:
    """Whether the divergence shows in every arm, at the same place."""
    if others == 1:
        return (
            "reproduces: unknown with one arm against arm 1; run more arms (-n 3 or more) to "
            "see whether it shows every time"
        )
    steps = sorted({r.first_divergent_step for _, r in diverging})  # type: ignore[type-var]
    if len(diverging) < others:
        matched = others - len(diverging)
        return (
            f"reproduces: intermittently: {len(diverging)} of {others} arms diverge from arm 1, "
            f"{plural(matched, 'arm')} matched it bit for bit"
        )
    places = {(r.first_divergent_step, tuple(_first_buffers(r))) for _, r in diverging}
    if len(places) == 1:
        return f"reproduces: in every arm, first at step {steps[0]} in the same buffers"
    if len(steps) == 1:
        return f"reproduces: in every arm, first at step {steps[0]} (not always the same buffers)"
    return (
        "reproduces: in every arm, but first at different steps ("
        + ", ".join(map(str, steps))
        + ")"
    )


def _origin_text(report: Report) -> str:
    o = report.origins[0]  # type: ignore[index]
    return f"{display_path(o.group)} {display_path(o.name)} at step {o.step}"


def _origin_agreement(diverging: list[tuple[int, Report]]) -> str | None:
    """Whether the diverging arms share their first origin (the schema
    declares inputs): the same kernel every time, or not."""
    if len(diverging) < 2 or any(r.origins is None for _, r in diverging):
        return None
    firsts = {i: _origin_text(r) for i, r in diverging if r.origins}
    if len(firsts) < len(diverging):
        return "origin: not found in every diverging arm (see the comparison below)"
    if len(set(firsts.values())) == 1:
        return f"origin: the same in every diverging arm: {next(iter(firsts.values()))}"
    shown = "; ".join(f"arm {i}: {t}" for i, t in sorted(firsts.items()))
    return f"origin: differs between arms: {shown}"


def render_rerun_text(result: RerunResult) -> str:
    """The whole report of a rerun that ran to its end (or stopped)."""
    from .text import render_text

    arms = result.arms
    n = result.n_arms
    lines = [f"command: {display_path(shlex.join(result.command))}"]
    lines += [format_arm(a) for a in arms[:1]]
    reports = dict(zip(range(2, len(result.reports) + 2), result.reports, strict=True))
    for arm in arms[1:]:
        line = format_arm(arm)
        if arm.index in reports:
            line += "; " + _against(reports[arm.index], arm.index).split(": ", 1)[1]
        lines.append(line)
    where = display_path(result.out)
    kept = f"kept in {where}" if result.kept else f"removed from {where} (--keep keeps them)"
    if result.interrupted:
        stopped = f"arm {result.stopped} was stopped; " if result.stopped is not None else ""
        lines += ["", f"INTERRUPTED: {stopped}the runs written so far are kept in {where}"]
        return "\n".join(lines) + "\n"
    failed = result.failed
    if failed is not None:
        lines += ["", f"TROUBLE: arm {failed.index} of {n} failed: {display_path(failed.problem)}"]
        if failed.stderr_tail:
            lines.append(f"the end of its stderr ({display_path(failed.err_path)}):")
            lines += [f"  {display_path(t)}" for t in failed.stderr_tail]
        lines.append(f"runs: {kept}")
        return "\n".join(lines) + "\n"
    diverging = [(i, r) for i, r in reports.items() if r.first_divergent_step is not None]
    errors = [i for i, r in reports.items() if r.verdict == "error"]
    lines.append("")
    if errors:
        lines.append(
            f"TROUBLE: {plural(len(errors), 'arm')} could not be compared with arm 1 "
            f"(arm {', '.join(map(str, errors))}); whether the job is deterministic is unknown"
        )
    elif not diverging:
        first = result.reports[0]
        lines.append(
            f"DETERMINISTIC: the {len(arms)} arms are bit-identical "
            f"({plural(len(first.buffers), 'buffer')} over {plural(len(first.steps), 'step')})"
        )
    else:
        index, report = min(diverging, key=lambda item: (item[1].first_divergent_step, item[0]))
        step = report.first_divergent_step
        lines.append(
            f"NOT DETERMINISTIC: {len(diverging)} of {len(reports)} arms diverge from arm 1; "
            f"first at step {step} (arm {index}: {_names(_first_buffers(report))})"
        )
        from .text import born_lines

        born = born_lines(report)
        if born:
            lines.append(f"{born[0].strip()} (arm {index})")
        lines.append(_reproduces(diverging, len(reports)))
        origin = _origin_agreement(diverging)
        if origin:
            lines.append(origin)
    lines.append(f"runs: {kept}")
    if diverging and not errors:
        index, report = min(diverging, key=lambda item: (item[1].first_divergent_step, item[0]))
        lines += ["", f"arm 1 (A) against arm {index} (B):", render_text(report).rstrip("\n")]
    return "\n".join(lines) + "\n"
