"""The library API for one run pair: ``compare_runs``.

discover -> pair -> size -> hash -> scan (kernel) -> verdict, driven by the
scheduler (``engine.scheduler``); each stage drops what it has decided, so
the cheap tests (stat, then digests) settle almost everything and only
differing chunks reach the kernel.
"""

from __future__ import annotations

from .engine.scheduler import compare_pairs
from .model.selection import Selection
from .options import CompareOptions, tolerance_dict

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from concurrent.futures import Executor

    from .engine.cache import DigestCache
    from .model.findings import Note
    from .model.results import Report

__all__ = ["CompareOptions", "Selection", "compare_runs", "tolerance_dict"]


def compare_runs(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    options: CompareOptions | None = None,
    executor: Executor | None = None,
    cache: DigestCache | None = None,
    on_note: Callable[[Note], None] | None = None,
    select: Selection | None = None,
) -> Report:
    """Compare two runs (folders or manifests); the Report holds every buffer
    and every error.

    ``executor``: any concurrent.futures executor the caller owns (only
    ``submit`` is called); without one, fastdiff picks serial or a pool of
    its own per ``options.executor`` and ``options.jobs``. ``cache``: a
    DigestCache to look digests up in and store them to (default: none).
    ``on_note``: called with each remark on how the runs are read (the
    schema a manifest records, and what disagrees with it), which the
    report's ``notes`` hold too. ``select``: compare only the steps and
    buffers it takes (``Selection``), which the report's ``selection`` says.
    """
    (report,) = compare_pairs(
        [(run_a, run_b)], options, executor=executor, cache=cache, on_note=on_note,
        select=select,
    )  # fmt: skip
    return report
