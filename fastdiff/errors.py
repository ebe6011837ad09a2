"""Exceptions, exit codes, and the kinds of problems.

Every exception fastdiff raises for bad input subclasses ``FastdiffError``
and carries a one-line message that says which file or option is wrong, what
is wrong with it and what to do; the CLI prints it as ``fastdiff: error: ...``
and exits with ``EXIT_TROUBLE``.

A problem met while comparing is not raised but reported (``results.Problem``),
with a kind from ``results.PROBLEM_KINDS`` so that a caller can act on it
without parsing its message; ``problem_kind`` names the kind of an exception.
"""

from __future__ import annotations

# The exit codes are the result model's (what a verdict exits with).
from .model.exits import EXIT_DIVERGED as EXIT_DIVERGED
from .model.exits import EXIT_IDENTICAL as EXIT_IDENTICAL
from .model.exits import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from .model.exits import EXIT_TROUBLE as EXIT_TROUBLE


class FastdiffError(Exception):
    """Bad input or an environment problem, explained in one line."""


class SchemaError(FastdiffError, ValueError):
    """A schema file or option that cannot be used."""


def problem_kind(exc: BaseException) -> str:
    """The ``Problem.kind`` for an exception met while reading a run.

    An exception may say its own kind (a ``kind`` attribute: the reader's
    ``FileChanged`` says ``changed``); a file that vanished changed too; any
    other OSError (permission, I/O error) makes the file ``unreadable``.
    """
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str):
        return kind
    if isinstance(exc, FileNotFoundError):
        return "changed"
    if isinstance(exc, OSError):
        return "unreadable"
    return "error"
