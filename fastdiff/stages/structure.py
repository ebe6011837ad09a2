"""Stage 6c: where two traces part: the first step whose sequences of
records differ, and the first place they differ in it.

Each trace names its records by what made them (``tracenames``: the
module path, the op and an occurrence counter per path), so two traces are
aligned by name and order: at a step, the records both ran in the same
order, from the start, are the common part; the first record after it
where they differ is where they part: "step 3, after
fwd.layers.2.mlp.aten.mm#1: A runs aten.add, B runs aten.mul" (a control
flow that differs, or another op). Records after it are still compared by
name, as every record is: this stage only says where the sequences part,
which no buffer's status says when both runs ran the same records in
another order. Its cost is linear in the records of the steps compared;
steps whose sequences are equal cost a comparison of two tuples.
"""

from __future__ import annotations

from ..model.results import Structure
from ..tracenames import op_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..sources.traced import Sequences

__all__ = ["first_parting", "parting_at"]


def parting_at(
    step: int, a: Sequence[str], b: Sequence[str], level: str, rank: int | None = None
) -> Structure | None:
    """Where sequences ``a`` and ``b`` of step ``step`` part (None: they do not)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    if i == len(a) == len(b):
        return None
    ra = a[i] if i < len(a) else None
    rb = b[i] if i < len(b) else None
    return Structure(
        step,
        a[i - 1] if i else None,
        None if ra is None else op_of(ra, level),
        None if rb is None else op_of(rb, level),
        ra,
        rb,
        rank,
    )


def first_parting(a: Sequences, b: Sequences, rank: int | None = None) -> Structure:
    """How two traces' sequences compare, over the steps both hold: where
    they first part, or a ``Structure`` whose ``step`` is None."""
    level = a.level or b.level or "op"
    steps_b = b.steps
    for step in sorted(a.steps.keys() & steps_b.keys()):
        found = parting_at(step, a.steps[step], steps_b[step], level, rank)
        if found is not None:
            return found
    return Structure(rank=rank)
