"""Runs written by several ranks: a run whose dumps lie in ``rank_<R>/``.

A run folder that holds subfolders ``rank_<R>`` (R in ASCII decimal digits)
and no dumps of its own is a multi-rank run: each subfolder is one rank's
run folder. A manifest of such a run (``fastdiff hash``) names its files
``rank_<R>/step_<N>_<name>.bin``. ``split_ranks`` makes one ``RunSource``
per rank of either; ``pair_ranks`` pairs two runs' ranks by R.

Only names are read here: the listing discovery made, and for a folder that
holds rank subfolders one more listing of its names (``os.scandir``; a
subfolder is told by its directory entry). A run of one rank (dumps in the
folder itself, the usual case) is recognised from its listing alone.
"""

from __future__ import annotations

import os

from ..model.results import Problem, Skipped
from .names import DUMPS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from .buffers import BufferRef, StepFilter
    from .run import RunSource

    OpenRun = Callable[[str, StepFilter | None], RunSource]

__all__ = [
    "RANK_PREFIX",
    "RankedRun",
    "pair_ranks",
    "parse_rank",
    "rank_folders",
    "rank_name",
    "skipped_beside",
    "split_ranks",
]

RANK_PREFIX = "rank_"
#: Rank numbers of more digits are not ranks (no job has 10**9 ranks).
_MAX_DIGITS = 9


def parse_rank(name: str) -> int | None:
    """R for a name ``rank_<R>`` (ASCII digits), else None."""
    digits = name[len(RANK_PREFIX) :]
    if not name.startswith(RANK_PREFIX) or not digits or len(digits) > _MAX_DIGITS:
        return None
    if not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits)


def rank_name(rank: int) -> str:
    return f"{RANK_PREFIX}{rank}"


class RankedRun:
    """A run of several ranks: ``ranks``, (R, that rank's source) in rank
    order, and ``problems``: what makes some of it unusable (two folders of
    one rank, dumps beside the rank folders). An immutable value."""

    __slots__ = ("problems", "ranks", "spec")

    spec: str
    ranks: tuple[tuple[int, RunSource], ...]
    problems: tuple[Problem, ...]

    def __init__(
        self, spec: str, ranks: tuple[tuple[int, RunSource], ...], problems: tuple[Problem, ...]
    ) -> None:
        self.spec = spec
        self.ranks = ranks
        self.problems = problems

    def __repr__(self) -> str:
        return f"RankedRun({self.spec!r}, ranks={[r for r, _ in self.ranks]})"


def _may_hold_ranks(src: RunSource) -> bool:
    """Whether the listing leaves room for rank folders (names only): it holds
    no dumps, or it skipped an entry named like a rank folder."""
    listing = src.listing
    if not listing.readable:
        return False
    if src.is_manifest:  # its files are all of ranks, or none is
        return bool(listing.buffers) and listing.buffers[0].path.startswith(
            listing.root + ":" + RANK_PREFIX
        )
    if not listing.buffers and not listing.errors:
        return True
    return any(parse_rank(os.path.basename(s.path)) is not None for s in listing.skipped)


def _folder_ranks(root: str) -> tuple[list[tuple[int, str]], list[Problem]]:
    """The rank subfolders of ``root`` (R, path), in rank order, and two
    folders of one rank (``rank_1`` and ``rank_01``) as problems."""
    try:
        with os.scandir(root) as it:
            found = sorted(
                (rank, e.name)
                for e in it
                if (rank := parse_rank(e.name)) is not None and e.is_dir()
            )
    except OSError:
        return [], []  # discovery has said why already
    ranks: list[tuple[int, str]] = []
    problems = []
    for rank, name in found:
        if ranks and ranks[-1][0] == rank:
            first = os.path.basename(ranks[-1][1])
            problems.append(
                Problem(
                    os.path.join(root, name),
                    f"a second folder of rank {rank} (beside {first}); rename or remove one",
                    kind="name",
                )
            )
            continue
        ranks.append((rank, os.path.join(root, name)))
    return ranks, problems


def _manifest_ranks(src: RunSource) -> RankedRun:
    """A manifest's buffers split by the ``rank_<R>/`` their files' names start with."""
    from .buffers import RunListing
    from .run import RunSource

    root = src.listing.root
    by_rank: dict[int, list[BufferRef]] = {}
    for f in src.listing.buffers:
        entry = f.path[len(root) + 1 :]  # the manifest's name of the file: rank_<R>/step_...
        rank = parse_rank(entry.split("/", 1)[0])
        assert rank is not None  # the manifest parser refuses a mix
        by_rank.setdefault(rank, []).append(f)
    ranks = []
    for rank in sorted(by_rank):
        spec = f"{src.spec}:{rank_name(rank)}"
        listing = RunListing(spec, tuple(by_rank[rank]), (), ())
        rank_src = RunSource(spec, listing, src.chunk_size, src.schema, src.dtypes, kind=src.kind)
        ranks.append((rank, rank_src))
    return RankedRun(src.spec, tuple(ranks), ())


def split_ranks(src: RunSource, open_rank: OpenRun | None = None) -> RankedRun | None:
    """The ranks of a run of several, each as a source (listed now); None for
    a run of one rank (the listing alone tells, in the usual case).
    ``open_rank(path, steps)`` opens a rank's folder (``sources.open_run``,
    which knows every format: a recorder's folder, a checkpoint folder);
    needed for a folder of ranks, not for a manifest."""
    if not _may_hold_ranks(src):
        return None
    if src.is_manifest:
        return _manifest_ranks(src)
    found, problems = _folder_ranks(src.spec)
    if not found:
        return None
    if open_rank is None:
        raise ValueError("split_ranks: a folder of ranks needs open_rank to open each rank")

    if src.listing.buffers:
        problems.append(
            Problem(
                src.spec,
                f"holds both {DUMPS} and rank folders "
                f"({', '.join(os.path.basename(p) for _, p in found[:3])}); a run of several "
                "ranks keeps each rank's dumps in its rank_<R> folder: move these dumps into "
                "theirs, or compare one rank's folder",
                kind="name",
            )
        )
    ranks = tuple((rank, open_rank(path, src.steps)) for rank, path in found)
    return RankedRun(src.spec, ranks, tuple(problems))


def skipped_beside(ranked: RankedRun, src: RunSource) -> list[Skipped]:
    """What the run folder itself holds besides its rank folders (skipped)."""
    folders = {rank_src.spec for _, rank_src in ranked.ranks}
    folders.update(p.path for p in ranked.problems)
    return [s for s in src.listing.skipped if s.path not in folders]


def rank_folders(root: str) -> list[str]:
    """The names of the ``rank_<R>`` subfolders of ``root``, in rank order
    (none: a run of one rank, or not a folder). Names only."""
    return [os.path.basename(path) for _, path in _folder_ranks(root)[0]]


def pair_ranks(a: RankedRun, b: RankedRun) -> list[tuple[int, RunSource | None, RunSource | None]]:
    """The ranks of two runs paired by R, in rank order: (R, A's, B's), None
    where a run has no such rank."""
    in_a, in_b = dict(a.ranks), dict(b.ranks)
    return [(r, in_a.get(r), in_b.get(r)) for r in sorted(in_a.keys() | in_b.keys())]
