"""Stages 2 and 3 for one run pair: pair the buffers, decide what sizes decide,
and choose the chunk size each side is hashed at.

What is left (``Prepared.to_hash``) needs digests: stage 4.
"""

from __future__ import annotations

from ..model.findings import Note, NoteKind
from .pair import pair_runs
from .size import size_stage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..model.results import BufferResult, Problem
    from ..options import CompareOptions
    from ..schema import Schema
    from ..sources import RunSource
    from .pair import Pair


def pair_chunk_size(src_a: RunSource, src_b: RunSource, opts: CompareOptions) -> int:
    """The chunk size a pair's buffers are hashed at: that of the digests a
    side knows in advance (a manifest's, a recorder's digest log; run A's
    when both know some), else the options'. The same for the pair in a sweep as for it alone."""
    for src in (src_a, src_b):
        if src.chunk_size is not None:
            return src.chunk_size
    return opts.chunk_size


class Prepared:
    """A run pair after stages 2 and 3: the chunk size of each side
    (``cs_a``, ``cs_b``: a side's known digests keep theirs), the results
    sizes decided and their problems, the pairs to hash, and ``notes``:
    where a file's header overrules the dtype the schema gives a member."""

    __slots__ = ("cs_a", "cs_b", "decided", "notes", "problems", "to_hash")

    def __init__(
        self,
        cs_a: int,
        cs_b: int,
        decided: list[BufferResult],
        problems: list[Problem],
        to_hash: list[Pair],
        notes: tuple[Note, ...] = (),
    ) -> None:
        self.cs_a = cs_a
        self.cs_b = cs_b
        self.decided = decided
        self.problems = problems
        self.to_hash = to_hash
        self.notes = notes


def prepare(
    src_a: RunSource,
    src_b: RunSource,
    schema: Schema,
    opts: CompareOptions,
    paired: bool = True,
    rank: int | None = None,
) -> Prepared:
    """Pair and size a run pair. An unreadable run's buffers are unknown, not
    absent: nothing is paired against it (else every buffer of the other
    would diverge); with ``paired`` False nothing is paired either.
    ``rank``: the rank both runs are of (a run of several), on every result."""
    pair_cs = pair_chunk_size(src_a, src_b, opts)
    both = paired and src_a.listing.readable and src_b.listing.readable
    pairs = pair_runs(src_a.listing, src_b.listing, schema, rank) if both else ()
    notes: tuple[Note, ...] = ()
    patterns = (*schema.ignore, *(p for p in opts.ignore if p not in schema.ignore))
    if patterns and pairs:
        pairs, notes = _ignoring(pairs, patterns)
    decided, problems, to_hash = size_stage(pairs)
    # A manifest's digests are all it has: they keep their chunk size. A
    # folder's (a recorder's digest log) are used at the pair's, else hashed.
    return Prepared(
        _side_chunk_size(src_a, pair_cs), _side_chunk_size(src_b, pair_cs), decided, problems,
        to_hash, notes + header_notes(pairs, schema),
    )  # fmt: skip


def _ignoring(
    pairs: tuple[Pair, ...], patterns: tuple[str, ...]
) -> tuple[tuple[Pair, ...], tuple[Note, ...]]:
    """The pairs whose names match none of ``patterns`` (globs, as
    ``--names`` takes them), and a note of how many were left out (none
    when no pair was): they are neither read nor judged."""
    from fnmatch import fnmatchcase

    kept = tuple(p for p in pairs if not any(fnmatchcase(p.name, g) for g in patterns))
    n = len(pairs) - len(kept)
    if not n:
        return pairs, ()
    return kept, (Note.of(NoteKind.IGNORED, n=n, patterns=list(patterns)),)


def _side_chunk_size(src: RunSource, pair_cs: int) -> int:
    return src.chunk_size if src.is_manifest and src.chunk_size is not None else pair_cs


def header_notes(pairs: tuple[Pair, ...], schema: Schema) -> tuple[Note, ...]:
    """One note per buffer whose file's header gives another dtype than the
    member of the schema that names it (the header's is used)."""
    from ..schema import OTHER
    from ..sources.schemas import BY_NAME

    if schema.name == BY_NAME:
        return ()  # its members are the names' own groups: it gives no dtype
    seen: dict[str, tuple[str, str]] = {}
    for p in pairs:
        head = p.a if p.a is not None and p.a.dtype is not None else p.b
        if head is None or head.dtype is None or p.name in seen:
            continue
        group, dtype = schema.classify(p.name)
        if group != OTHER and dtype != head.dtype:
            seen[p.name] = (dtype, head.dtype)
    if not seen:
        return ()
    buffers = [(name, said, found) for name, (said, found) in sorted(seen.items())]
    return (Note.of(NoteKind.HEADER_DTYPE, schema=schema.name, buffers=buffers, warning=True),)
