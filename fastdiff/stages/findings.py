"""Stage 6c: what a report finds beyond its buffers, as data.

Where a divergence was born (``born``: the first step with an origin, its
origins and receivers, what stays undetermined, the later origins), the
pattern of the ranks' first origins (``rank_pattern``) and what each
timeline cell shows (``cell``). The renderers word them (``render.text``,
``render.json``); every one of them reads the same findings.
"""

from __future__ import annotations

from ..model.findings import Born, BufferKey, Cell, PatternKind, RankPattern
from ..model.statuses import Role, Status, Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..model.results import BufferResult, Origin, RankReport

__all__ = ["born", "buffer_key", "cell", "rank_pattern"]


buffer_key = BufferKey.of


def born(
    buffers: Iterable[BufferResult], first_divergent_step: int | None, declared: bool
) -> Born | None:
    """Where the divergence was born, from the buffers' roles: None without
    declared inputs (``declared``) or a divergence."""
    if not declared or first_divergent_step is None:
        return None
    roles = [b for b in buffers if b.role is not None]
    if not roles:
        return Born(None, declared=False)  # no buffer that diverged declares its inputs
    origins = [b for b in roles if b.role.kind == Role.ORIGIN]  # type: ignore[union-attr]
    if origins:
        at = origins[0].step
        here = tuple(buffer_key(b) for b in origins if b.step == at)
        received = tuple(dict.fromkeys(
            b.name for b in roles if b.step == at and b.role.kind == Role.RECEIVER  # type: ignore[union-attr]
        ))  # fmt: skip
        step: int | None = at
    else:
        at, here, received, step = first_divergent_step, (), (), None
    undetermined = tuple(
        buffer_key(b)
        for b in roles
        if b.step <= at and b.role.kind == Role.UNDETERMINED  # type: ignore[union-attr]
    )
    later = tuple(buffer_key(b) for b in origins if b.step > at)
    return Born(step, here, received, undetermined, later)


def rank_pattern(ranks: tuple[RankReport, ...], declared: bool) -> RankPattern | None:
    """What the ranks' first origins point at, where the schema declares
    inputs and a rank diverged (else None). A kernel, nondeterministic
    wherever it runs: every rank (two or more) diverged, with the same first
    origin. Some ranks only (what sets them apart: their data, their place
    in the topology, the order of cross-rank reductions): a rank compared
    without divergence, or first origins that differ. None with one rank
    (nothing to set it against). Not known yet otherwise: a rank that could
    not be compared, or a diverging rank whose first origin was not found."""
    diverging = [rr for rr in ranks if rr.report.first_divergent_step is not None]
    if not declared or not diverging:
        return None
    firsts: dict[tuple[int, str, str], list[int]] = {}
    shown: dict[tuple[int, str, str], Origin] = {}
    unfound: list[int] = []  # diverging ranks whose first origin is not known
    for rr in diverging:
        o = rr.first_origin
        if o is None:
            unfound.append(rr.rank)
            continue
        key = (o.step, o.group, o.name)
        firsts.setdefault(key, []).append(rr.rank)
        shown.setdefault(key, o)
    undiverged = [rr for rr in ranks if rr.report.first_divergent_step is None]
    quiet = tuple(rr.rank for rr in undiverged if rr.report.verdict != Verdict.ERROR)
    uncompared = tuple(rr.rank for rr in undiverged if rr.report.verdict == Verdict.ERROR)
    if quiet or len(firsts) > 1:
        kind = PatternKind.SOME_RANKS
    elif len(ranks) == 1:
        kind = PatternKind.ONE_RANK
    elif not unfound and not uncompared:
        kind = PatternKind.KERNEL
    else:
        kind = PatternKind.NOT_KNOWN
    listed = tuple(
        (BufferKey(o.step, o.group, o.name, o.rank), tuple(firsts[k])) for k, o in shown.items()
    )
    return RankPattern(kind, listed, tuple(unfound), quiet, uncompared)


def cell(
    statuses: set[str],
    magnitude: str | None,
    max_ulp: int | None,
    max_abs_delta: int | float | None,
    n_diff: int | None,
    rounding_ulp: int,
) -> Cell:
    """What the timeline cell of a group at a step shows, from its buffers that
    are not equal (their ``statuses``) and its row's figures: a buffer in one
    run only makes it ``missing``, whatever the others show."""
    if Status.ONLY_IN_A in statuses or Status.ONLY_IN_B in statuses:
        return Cell.MISSING  # a buffer absent from a run outweighs any value shown beside it
    if magnitude == "rounding":
        return Cell.ROUNDING
    if magnitude == "large" and max_ulp is not None and max_ulp <= rounding_ulp:
        return Cell.NAN_INF  # large through a NaN or infinity, not through its |A-B|
    if max_abs_delta is not None:
        return Cell.DELTA
    if magnitude == "large":
        return Cell.NAN_INF
    if n_diff is not None:
        return Cell.LENGTH
    # No element was compared: missing from a run, or known to differ by
    # digests only (a manifest holds no data).
    kinds = {_FACTLESS.get(s, Cell.DIFFERS) for s in statuses}
    return kinds.pop() if len(kinds) == 1 else Cell.DIFFERS


#: A timeline cell without element facts, by the statuses of its buffers.
_FACTLESS = {
    Status.LENGTH_MISMATCH: Cell.LENGTH,
    Status.MALFORMED: Cell.MALFORMED,
}
