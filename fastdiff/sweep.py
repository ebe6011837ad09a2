"""Sweeps: many run pairs at once, each file hashed once.

The pair lists (one baseline against candidates, every pair of a set, or
pairs read from a file), the summary, and the classes of runs that are
bit-identical to each other. The work itself is ``pipeline.compare_pairs``.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from itertools import combinations

from .cache import DigestCache
from .errors import FastdiffError
from .pipeline import CompareOptions, compare_pairs
from .progress import Progress
from .results import Report

RunPair = tuple[str, str]


def baseline_pairs(baseline: str, candidates: Sequence[str]) -> list[RunPair]:
    if not candidates:
        raise FastdiffError("--baseline needs at least one candidate run after the baseline")
    return [(baseline, c) for c in candidates]


def all_pairs(runs: Sequence[str]) -> list[RunPair]:
    unique = list(dict.fromkeys(runs))
    if len(unique) < 2:
        raise FastdiffError("--all needs at least two different runs")
    return list(combinations(unique, 2))


def read_pairs_file(path: str) -> list[RunPair]:
    """Two paths per line (shell quoting for spaces); blank lines and # comments skipped."""
    try:
        # Paths that are not UTF-8 pass through as the OS gave them.
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise FastdiffError(f"--pairs {path}: cannot read ({exc})") from exc
    pairs: list[RunPair] = []
    for lineno, line in enumerate(lines, 1):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as exc:
            raise FastdiffError(f"{path}:{lineno}: cannot parse line ({exc})") from None
        if not words:
            continue
        if any("\0" in w for w in words):
            raise FastdiffError(f"{path}:{lineno}: a path cannot contain a NUL character")
        if len(words) != 2:
            raise FastdiffError(
                f"{path}:{lineno}: expected two run paths, found {len(words)} "
                "(quote paths that contain spaces)"
            )
        pairs.append((words[0], words[1]))
    if not pairs:
        raise FastdiffError(f"--pairs {path}: no pairs in the file")
    return pairs


def identical_classes(runs: Sequence[str], reports: Sequence[Report]) -> list[list[str]]:
    """Runs grouped by bit-identity (from the identical pairs), in first-seen order."""
    parent = {r: r for r in runs}

    def root(r: str) -> str:
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    for rep in reports:
        if rep.verdict == "identical" and rep.run_a in parent and rep.run_b in parent:
            ra, rb = root(rep.run_a), root(rep.run_b)
            if ra != rb:
                parent[rb] = ra
    classes: dict[str, list[str]] = {}
    for r in runs:
        classes.setdefault(root(r), []).append(r)
    return list(classes.values())


@dataclass(frozen=True)
class SweepSummary:
    pairs: int
    identical: int
    diverged: int
    error: int
    classes: tuple[tuple[str, ...], ...] | None
    cache_hits: int
    elapsed_s: float
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        return 2 if self.error else 1 if self.diverged else 0


def sweep(
    pairs: Sequence[RunPair],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
    cache: DigestCache | None = None,
    on_report: Callable[[int, Report], None] | None = None,
    progress: Progress | None = None,
    classes_of: Sequence[str] | None = None,
) -> tuple[list[Report], SweepSummary]:
    """Compare every pair; ``classes_of``: runs to group into identity classes."""
    t0 = time.perf_counter()
    hits_before = cache.hits if cache is not None else 0
    reports = compare_pairs(pairs, options, executor, cache, on_report, progress)
    hits = (cache.hits - hits_before) if cache is not None else 0
    return reports, summarize(reports, classes_of, hits, time.perf_counter() - t0)


def summarize(
    reports: Sequence[Report],
    classes_of: Sequence[str] | None = None,
    cache_hits: int = 0,
    elapsed_s: float = 0.0,
    interrupted: bool = False,
) -> SweepSummary:
    """The summary of the pairs in ``reports`` (all of them, or those that
    finished before an interrupt)."""
    verdicts = [r.verdict for r in reports]
    classes = None
    if classes_of is not None and not interrupted:
        runs = [os.fspath(r) for r in classes_of]
        classes = tuple(tuple(c) for c in identical_classes(runs, reports))
    return SweepSummary(
        pairs=len(reports),
        identical=verdicts.count("identical"),
        diverged=verdicts.count("diverged"),
        error=verdicts.count("error"),
        classes=classes,
        cache_hits=cache_hits,
        elapsed_s=elapsed_s,
        interrupted=interrupted,
    )
