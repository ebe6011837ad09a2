"""Stage 6: from per-buffer results to the verdict.

The earliest step with a divergent buffer wins; the groups diverging at that
step, in pipeline order, are the suspects, and the upstream one is listed
first. Errors make the verdict ``error`` but never hide what was compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..errors import EXIT_DIVERGED, EXIT_IDENTICAL, EXIT_TROUBLE
from ..results import (
    DIVERGENT,
    TROUBLE,
    BufferResult,
    GroupVerdict,
    Problem,
    Report,
    Skipped,
    StepSummary,
    Verdict,
    Work,
)
from ..schema import OTHER_GROUP, Schema

STATUS_ORDER = (
    "equal",
    "within_tolerance",
    "diverged",
    "length_mismatch",
    "only_in_a",
    "only_in_b",
    "malformed",
    "error",
)


def sort_buffers(buffers: Iterable[BufferResult], schema: Schema) -> tuple[BufferResult, ...]:
    order = schema.order
    return tuple(sorted(buffers, key=lambda b: (b.step, order.get(b.group, len(order)), b.name)))


def _group_verdicts(at_step: list[BufferResult], schema: Schema) -> tuple[GroupVerdict, ...]:
    groups = list(schema.groups)
    if any(b.group == OTHER_GROUP.key for b in at_step):
        groups.append(OTHER_GROUP)
    out = []
    for g in groups:
        members = [b for b in at_step if b.group == g.key]
        diverged = tuple(b.name for b in members if b.status in DIVERGENT)
        if diverged:
            status = "diverged"
        elif any(b.status in TROUBLE for b in members):
            status = "error"
        elif members:
            status = "equal"
        else:
            status = "absent"
        out.append(GroupVerdict(g.key, g.title, status, diverged, g.hint))  # type: ignore[arg-type]
    return tuple(out)


def _steps(buffers: tuple[BufferResult, ...], schema: Schema) -> tuple[StepSummary, ...]:
    order = schema.order
    out = []
    for step in sorted({b.step for b in buffers}):
        at = [b for b in buffers if b.step == step]
        counts = Counter(b.status for b in at)
        diverged = sorted({b.group for b in at if b.status in DIVERGENT}, key=order.__getitem__)
        out.append(
            StepSummary(
                step,
                tuple((s, counts[s]) for s in STATUS_ORDER if counts[s]),
                tuple(diverged),
            )
        )
    return tuple(out)


def build_report(
    run_a: str,
    run_b: str,
    schema: Schema,
    buffers: Iterable[BufferResult],
    skipped: Iterable[Skipped],
    errors: Iterable[Problem],
    tolerance: dict[str, object] | None = None,
    work: Work | None = None,
) -> Report:
    ordered = sort_buffers(buffers, schema)
    problems = tuple(sorted(set(errors), key=lambda p: (p.path, p.message)))
    divergent = [b for b in ordered if b.status in DIVERGENT]
    first_step = min((b.step for b in divergent), default=None)
    groups: tuple[GroupVerdict, ...] = ()
    first_groups: tuple[str, ...] = ()
    if first_step is not None:
        at = [b for b in ordered if b.step == first_step]
        groups = _group_verdicts(at, schema)
        first_groups = tuple(g.key for g in groups if g.status == "diverged")
    verdict: Verdict = "error" if problems else "diverged" if divergent else "identical"
    return Report(
        run_a=run_a,
        run_b=run_b,
        schema=schema.name,
        verdict=verdict,
        first_divergent_step=first_step,
        first_divergent_groups=first_groups,
        groups=groups,
        steps=_steps(ordered, schema),
        buffers=ordered,
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        errors=problems,
        tolerance=tolerance or {},
        work=work or Work(),
    )


def exit_code(report: Report) -> int:
    return {"identical": EXIT_IDENTICAL, "diverged": EXIT_DIVERGED}.get(
        report.verdict, EXIT_TROUBLE
    )
