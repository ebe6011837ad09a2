"""Stage 6c: what a report finds beyond its buffers, as data.

Where a divergence was born (``born``: the first step with an origin, its
origins and receivers, what stays undetermined, the later origins), the
pattern of the ranks' first origins (``rank_pattern``); what each timeline
cell shows is ``model.findings.cell_of``, the verdict stage's rule. The
renderers word them (``render.text``, ``render.json``); every one of them
reads the same findings.
"""

from __future__ import annotations

from ..model.findings import Born, BufferKey, PatternKind, RankPattern
from ..model.statuses import Role, Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..model.results import BufferResult, Origin, RankReport

__all__ = ["born", "buffer_key", "rank_pattern"]


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
