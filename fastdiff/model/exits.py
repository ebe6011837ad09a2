"""Exit codes, as in cmp and diff: what a verdict exits with (``errors``
re-exports them, and the command line exits with them). A module of its
own, so that ``fastdiff --help`` loads no more of the model than this."""

from __future__ import annotations

__all__ = ["EXIT_DIVERGED", "EXIT_IDENTICAL", "EXIT_INTERRUPTED", "EXIT_TROUBLE", "verdict_exit"]

EXIT_IDENTICAL = 0
EXIT_DIVERGED = 1
EXIT_TROUBLE = 2
EXIT_INTERRUPTED = 130


def verdict_exit(verdict: str) -> int:
    """The exit code of a run pair's (or a sweep's) verdict
    (``statuses.Verdict``, equal to its value): 0 identical, 1 diverged, 2
    anything else."""
    return {"identical": EXIT_IDENTICAL, "diverged": EXIT_DIVERGED}.get(verdict, EXIT_TROUBLE)
