"""Stage 6b: where a divergence was born, from the inputs a schema declares.

The rule of the per-op tracers that diff two runs' fingerprint streams,
applied to dumps: a buffer that diverged (``statuses.DIVERGENT``) while
every input it declares was dumped and matched (``equal`` or
``within_tolerance``) at the step it names is an **origin**: the kernel to
fix. One with an input that differs (``diverged``, ``length_mismatch``) is a
**receiver**: noise for whoever is debugging. One with neither, where an
input could not be compared (not dumped at that step, in one run only,
unreadable or malformed), is **undetermined**: born there or upstream, the
dumps cannot tell.

``name@prev`` is ``name`` at the latest earlier step both runs hold (a
step one run lacks is passed over; a ``prev_step`` that is not the step
before means a gap in which the divergence could have been born). At step
0 it is no input (there is no earlier state); at a first step held that is
not 0 it counts as not dumped.

``assign_roles`` is a pure function of the buffer results (one run pair,
one rank, sorted as ``build_report`` sorts them) and the schema; its cost
is linear in buffers x declared inputs. A buffer that did not diverge, or
whose member declares no inputs, keeps no role.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from ..model.results import Origin, Role
from ..model.statuses import DIFFERING, DIVERGENT, MATCHING
from ..schema import split_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..model.results import BufferResult
    from ..schema import Schema

__all__ = ["assign_roles", "role_of"]

#: A declared input: (as written, buffer name, at the previous step?).
Input = tuple[str, str, bool]


def role_of(
    step: int,
    inputs: Sequence[Input],
    status_at: dict[tuple[int, str], str],
    prev_step: int | None,
    complete: bool = False,
) -> Role:
    """The role of a buffer that diverged at ``step`` and declares ``inputs``;
    ``status_at``: the status of every buffer held, by (step, name);
    ``prev_step``: the latest earlier step held (None: none); ``complete``:
    the inputs are known complete (``Schema.inputs_complete``): one that
    neither run holds at the step it names was not read, and does not count."""
    differing: list[str] = []
    unknown: list[str] = []
    counted: list[str] = []
    used_prev = None
    for written, name, prev in inputs:
        if prev and prev_step is None and step == 0:
            continue  # at step 0 there is no earlier state: no input
        if prev:
            if prev_step is None:  # the first step held: what came before is not dumped
                counted.append(written)
                unknown.append(written)
                continue
            status = status_at.get((prev_step, name))
        else:
            status = status_at.get((step, name))
        if status is None and complete:
            continue  # read at other steps, not at this one
        counted.append(written)
        if prev:
            used_prev = prev_step
        if status in MATCHING:
            continue
        if status in DIFFERING:
            differing.append(written)
        else:  # not dumped, in one run only, unreadable or malformed
            unknown.append(written)
    kind = "receiver" if differing else "undetermined" if unknown else "origin"
    return Role(kind, tuple(differing), tuple(unknown), used_prev, tuple(counted))


def assign_roles(
    buffers: tuple[BufferResult, ...], steps: Sequence[int], schema: Schema
) -> tuple[tuple[BufferResult, ...], tuple[Origin, ...]]:
    """``buffers`` with a role on each that diverged and declares inputs, and
    the origins among them, in the buffers' order (step, then pipeline
    order). ``steps``: the steps both runs hold, ascending (``@prev`` reads
    the latest of them before a buffer's step)."""
    parsed: dict[str, tuple[Input, ...] | None] = {}

    def inputs_of(name: str) -> tuple[Input, ...] | None:
        declared = schema.inputs_of(name)
        found = parsed[name] = (
            None if declared is None else tuple((w, *split_input(w)) for w in declared)
        )
        return found

    todo: list[tuple[int, tuple[Input, ...]]] = []
    for i, b in enumerate(buffers):
        if b.status in DIVERGENT:
            inputs = parsed[b.name] if b.name in parsed else inputs_of(b.name)
            if inputs is not None:
                todo.append((i, inputs))
    if not todo:
        return buffers, ()
    prev_of = _latest_before(steps, {buffers[i].step for i, _ in todo})
    status_at = _statuses(buffers, todo, prev_of)
    out = list(buffers)
    origins = []
    for i, inputs in todo:
        b = buffers[i]
        role = role_of(b.step, inputs, status_at, prev_of.get(b.step), schema.inputs_complete)
        out[i] = b.with_role(role)
        if role.kind == "origin":
            origins.append(Origin(b.step, b.name, b.group, b.rank))
    return tuple(out), tuple(origins)


def _latest_before(steps: Sequence[int], wanted: set[int]) -> dict[int, int]:
    """For each step of ``wanted``, the latest of ``steps`` (ascending) before
    it, where there is one."""
    out = {}
    for step in wanted:
        k = bisect_left(steps, step)
        if k:
            out[step] = steps[k - 1]
    return out


def _statuses(
    buffers: tuple[BufferResult, ...],
    todo: list[tuple[int, tuple[Input, ...]]],
    prev_of: dict[int, int],
) -> dict[tuple[int, str], str]:
    """The status of every buffer at the steps the roles read (those of the
    buffers that diverged, and the steps before them), by (step, name). The
    buffers are sorted by step: each step's are found by bisection."""
    wanted = set()
    for i, _ in todo:
        step = buffers[i].step
        wanted.add(step)
        if step in prev_of:
            wanted.add(prev_of[step])
    at = [b.step for b in buffers]
    status_at: dict[tuple[int, str], str] = {}
    for step in wanted:
        for b in buffers[bisect_left(at, step) : bisect_right(at, step)]:
            status_at[(step, b.name)] = b.status
    return status_at
