"""Sweeps: many run pairs at once, each file hashed once.

The pair lists (one baseline against candidates, every pair of a set, or
pairs read from a file), the summary, the classes of runs that are
bit-identical to each other (never merely within tolerance), and whether
the diverging pairs share their first origin (a reproducible origin). The work
itself is ``compare.compare_pairs``.
"""

from __future__ import annotations

import os
import time
from itertools import combinations

from .compare import compare_pairs, holding, list_runs
from .errors import FastdiffError
from .model.findings import Note, NoteKind, Unclassified
from .model.statuses import Verdict
from .model.sweep import FirstOrigins, SweepSummary, UnclassifiedRun

__all__ = [
    "FirstOrigins",
    "SweepSummary",
    "UnclassifiedRun",
    "all_pairs",
    "baseline_pairs",
    "first_origins",
    "identity_classes",
    "read_pairs_file",
    "summarize",
    "sweep",
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from concurrent.futures import Executor

    from .engine.cache import DigestCache
    from .engine.progress import Progress
    from .model.results import Origin, Report
    from .model.selection import Selection
    from .options import CompareOptions
    from .sources import RunSource
    from .sources.ranks import RankedRun

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


def split_words(line: str) -> list[str]:
    """A line split into words by the POSIX shell's rules for quotes and comments.

    Blanks (space, tab) separate words; ``'...'`` keeps everything literally;
    inside ``"..."`` a backslash escapes only a backslash, ``"``, ``$`` and a
    backquote; outside quotes it escapes any character. ``#`` starts a
    comment only where a word would start (at the line start or after a
    blank), never inside a word or quotes: ``a#b`` and ``"a"#b`` are one word
    each (``shlex.split(..., comments=True)`` cuts ``a#b`` after ``a``, which
    the shell does not). Raises ValueError for an unclosed quote or a
    trailing backslash.
    """
    words: list[str] = []
    word: list[str] | None = None  # None: between words
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c in " \t":
            if word is not None:
                words.append("".join(word))
                word = None
            i += 1
            continue
        if word is None:
            if c == "#":
                break  # a comment, to the end of the line
            word = []
        if c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ValueError("no closing single quote")
            word.append(line[i + 1 : end])
            i = end + 1
        elif c == '"':
            i += 1
            while True:
                if i >= n:
                    raise ValueError("no closing double quote")
                c = line[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and line[i + 1] in '\\"$`':
                    word.append(line[i + 1])
                    i += 2
                else:
                    word.append(c)
                    i += 1
        elif c == "\\":
            if i + 1 >= n:
                raise ValueError("a backslash at the end of the line escapes nothing")
            word.append(line[i + 1])
            i += 2
        else:
            word.append(c)
            i += 1
    if word is not None:
        words.append("".join(word))
    return words


def read_pairs_file(path: str) -> list[RunPair]:
    """Two paths per line, quoted as in a shell; blank lines and # comments skipped."""
    if not path:
        raise FastdiffError("--pairs: empty file name; give the file that lists the pairs")
    try:
        # Paths that are not UTF-8 pass through as the OS gave them.
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            # Universal newlines: \n, \r\n and \r all end a line; nothing else does.
            lines = fh.read().split("\n")
    except OSError as exc:
        raise FastdiffError(f"--pairs {path}: cannot read ({exc})") from exc
    pairs: list[RunPair] = []
    for lineno, line in enumerate(lines, 1):
        try:
            words = split_words(line)
        except ValueError as exc:
            raise FastdiffError(
                f"{path}:{lineno}: cannot parse the line ({exc}); quote paths as in a shell"
            ) from None
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


def bit_identical(report: Report) -> bool:
    """True when every buffer of the pair is bitwise equal: an ``identical``
    verdict reached through a tolerance (a ``within_tolerance`` buffer) is not."""
    return report.bit_identical


def _unknown(report: Report) -> bool:
    """Whether the pair ended in error before anything told its runs apart: a
    pair that also diverged is known to differ, whatever else went wrong."""
    return report.verdict == Verdict.ERROR and report.first_divergent_step is None


def identity_classes(
    runs: Sequence[str], reports: Sequence[Report]
) -> tuple[list[list[str]], list[UnclassifiedRun]]:
    """The runs grouped into classes of bit-identical runs, and the runs left out.

    Only pairs whose every buffer is bitwise equal join runs: a pair that is
    merely within tolerance never does (tolerance is not transitive). A run
    joins a class only if it is bit-identical to every member, so nothing
    chains. A class claims that its runs are equal to each other and differ
    from every other class, so a run is classified only if it was compared
    cleanly with every other classified run, or found to differ from it: a
    run whose pairs all ended in error before a divergence was found, or one
    whose pair with an otherwise sound run did, is listed apart with the
    reason instead. Classes keep first-seen order.
    """
    wanted = list(dict.fromkeys(runs))
    pairs_of: dict[str, list[Report]] = {r: [] for r in wanted}
    equal: set[frozenset[str]] = set()
    for rep in reports:
        a, b = rep.run_a, rep.run_b
        if a == b or a not in pairs_of or b not in pairs_of:
            continue
        pairs_of[a].append(rep)
        pairs_of[b].append(rep)
        if bit_identical(rep):
            equal.add(frozenset((a, b)))

    unclassified: dict[str, UnclassifiedRun] = {}
    broken: set[str] = set()
    for r in wanted:
        if not pairs_of[r]:
            unclassified[r] = UnclassifiedRun(r, Unclassified.NO_PAIR)
        elif all(_unknown(rep) for rep in pairs_of[r]):
            broken.add(r)
            unclassified[r] = UnclassifiedRun(r, Unclassified.EVERY_PAIR_ERROR)
    for r in wanted:
        if r in unclassified:
            continue
        failed = [
            rep.run_b if rep.run_a == r else rep.run_a for rep in pairs_of[r] if _unknown(rep)
        ]
        failed = [other for other in failed if other not in broken]
        if failed:
            unclassified[r] = UnclassifiedRun(r, Unclassified.PAIR_ERROR, tuple(failed))

    classes: list[list[str]] = []
    for r in wanted:
        if r in unclassified:
            continue
        for members in classes:
            if all(frozenset((r, m)) in equal for m in members):
                members.append(r)
                break
        else:
            classes.append([r])
    return classes, [unclassified[r] for r in wanted if r in unclassified]


def first_origins(reports: Sequence[Report]) -> FirstOrigins | None:
    """The first origin of every diverging pair (index: its place in
    ``reports``), grouped: None when no report knows origins (no schema
    declared inputs)."""
    if all(r.origins is None for r in reports):
        return None
    groups: dict[tuple[object, ...] | None, tuple[Origin | None, list[int]]] = {}
    for i, r in enumerate(reports):
        if r.first_divergent_step is None:
            continue
        o = r.origins[0] if r.origins else None
        key = None if o is None else (o.rank, o.step, o.name)
        groups.setdefault(key, (o, []))[1].append(i)
    return FirstOrigins(tuple((o, tuple(pairs)) for o, pairs in groups.values()))


def one_schema(
    pairs: Sequence[RunPair],
    options: CompareOptions | None = None,
    select: Selection | None = None,
    listed: dict[str, tuple[RunSource, RankedRun | None]] | None = None,
) -> tuple[CompareOptions, tuple[Note, ...]]:
    """The options every pair of a sweep is compared with, and what to tell
    the user about its schema: one schema for the whole sweep, so that a
    divergence has the same groups in every row and the first origins of
    two pairs can be compared. The schema given (``--schema``) wins; without
    one, the rule of a pair (``sources.schemas.choose_schema``) is applied
    to every run of the sweep at once: the schema the first manifest records
    (in the order the runs come), else groups from the buffer names when
    every run's files give their dtypes, else ``rl-state``. Where every
    pair alone would be read with it, the options are left as they are (each
    pair says what compare would); else that schema is given to every pair,
    and a note (a warning, when manifests record different schemas) says
    which schema it is, where it comes from, and which pairs it changes.
    ``select``: the runs are read as the pairs are, at the steps and names
    it takes; ``listed``: the runs as ``compare.list_runs`` listed
    them (with the same ``select``; else listed here), which the comparison
    then takes as they are."""
    from .options import CompareOptions
    from .sources.schemas import BY_NAME, choose_schema

    opts = options or CompareOptions()
    if opts.schema is not None:
        return opts, ()
    if listed is None:
        listed = list_runs(pairs, select)
    sources = {spec: src for spec, (src, _) in listed.items()}
    chosen, _ = choose_schema(list(sources.values()), None, holding(listed, sources))
    recorded = {src.spec: src.schema for src in sources.values()
                if src.is_manifest and src.schema is not None}  # fmt: skip
    traced = {src.spec: src.dataflow for src in sources.values() if src.dataflow is not None}
    source = next((spec for spec, sc in {**recorded, **traced}.items() if sc == chosen), None)
    apart = [
        (i, natural.name)
        for i, (a, b) in enumerate(pairs)
        for natural in [
            choose_schema(
                (sources[os.fspath(a)], sources[os.fspath(b)]), None, holding(listed, (a, b))
            )[0]
        ]
        # by-name over a pair's buffers or over every run's: the same rule
        if natural != chosen and not (natural.name == chosen.name == BY_NAME)
    ]
    if not apart:
        return opts, ()  # each pair's own choice is the sweep's: compare's notes, per pair
    alone: dict[str, list[int]] = {}
    for i, name in apart:
        alone.setdefault(name, []).append(i)
    # The pairs then say what differs from it as from a schema given.
    said = [
        Note.of(
            NoteKind.SWEEP_SCHEMA,
            schema=chosen.name,
            recorded_in=source,
            alone=[
                (
                    name,
                    [(os.fspath(pairs[i][0]), os.fspath(pairs[i][1])) for i in idx[:3]],
                    len(idx),
                )
                for name, idx in alone.items()
            ],
            recorded=[(spec, sc.name) for spec, sc in recorded.items()],
            warning=any(sc != chosen for sc in recorded.values()),
        )
    ]
    said += [
        Note.of(NoteKind.NO_RECORDED_SCHEMA, spec=src.spec, schema=chosen.name, sweep=True)
        for src in sources.values()
        if src.is_manifest and src.schema is None
    ]
    return opts.replace(schema=chosen), tuple(said)


def sweep(
    pairs: Sequence[RunPair],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
    cache: DigestCache | None = None,
    on_report: Callable[[int, Report], None] | None = None,
    progress: Progress | None = None,
    classes_of: Sequence[str] | None = None,
    on_note: Callable[[Note], None] | None = None,
    select: Selection | None = None,
) -> tuple[list[Report], SweepSummary]:
    """Compare every pair with one schema (``one_schema``); ``classes_of``:
    runs to group into identity classes; ``on_note``: as for
    ``compare_pairs``, and given ``one_schema``'s notes first (the summary
    holds them too); ``select``: compare only the steps and buffers it takes,
    in every pair (``compare_pairs``)."""
    t0 = time.perf_counter()
    hits_before = cache.hits if cache is not None else 0
    listed = list_runs(pairs, select)  # once each: to choose the schema, then to compare
    opts, notes = one_schema(pairs, options, select, listed)
    if on_note is not None:
        for note in notes:
            on_note(note)
    reports = compare_pairs(
        pairs, opts, executor, cache, on_report, progress, on_note, select, listed
    )
    hits = (cache.hits - hits_before) if cache is not None else 0
    summary = summarize(reports, classes_of, hits, time.perf_counter() - t0, notes=notes)
    return reports, summary


def summarize(
    reports: Sequence[Report],
    classes_of: Sequence[str] | None = None,
    cache_hits: int = 0,
    elapsed_s: float = 0.0,
    interrupted: bool = False,
    notes: Sequence[str] = (),
) -> SweepSummary:
    """The summary of the pairs in ``reports`` (all of them, or those that
    finished before an interrupt); ``notes``: the sweep's own (its schema)."""
    verdicts = [r.verdict for r in reports]
    classes = unclassified = None
    if classes_of is not None and not interrupted:
        grouped, left_out = identity_classes([os.fspath(r) for r in classes_of], reports)
        classes = tuple(tuple(c) for c in grouped)
        unclassified = tuple(left_out)
    return SweepSummary(
        pairs=len(reports),
        identical=verdicts.count(Verdict.IDENTICAL),
        diverged=verdicts.count(Verdict.DIVERGED),
        error=verdicts.count(Verdict.ERROR),
        classes=classes,
        cache_hits=cache_hits,
        elapsed_s=elapsed_s,
        interrupted=interrupted,
        unclassified=unclassified,
        error_and_diverged=sum(
            r.verdict == Verdict.ERROR and r.first_divergent_step is not None for r in reports
        ),
        first_origins=first_origins(reports),
        notes=tuple(notes),
    )
