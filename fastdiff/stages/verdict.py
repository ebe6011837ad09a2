"""Stage 6: from per-buffer results to the verdict.

The earliest step with a divergent buffer wins; the groups diverging at that
step, in pipeline order, are the suspects, and the upstream one is listed
first. Errors make the verdict ``error`` but never hide what was compared.

Every pass over the buffers is one pass: the cost is linear in steps x buffers.
"""

from __future__ import annotations

from itertools import groupby
from operator import attrgetter

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
    Work,
)
from ..schema import OTHER_GROUP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..results import Verdict
    from ..schema import Schema

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
    """One summary per step, in one pass over buffers sorted by step."""
    order = schema.order
    out = []
    for step, at in groupby(buffers, key=attrgetter("step")):
        counts = dict.fromkeys(STATUS_ORDER, 0)
        diverged: set[str] = set()
        for b in at:
            counts[b.status] += 1
            if b.status in DIVERGENT:
                diverged.add(b.group)
        out.append(
            StepSummary(
                step,
                tuple((s, n) for s, n in counts.items() if n),
                tuple(sorted(diverged, key=order.__getitem__)),
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
