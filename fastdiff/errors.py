"""Exceptions and exit codes.

Every exception fastdiff raises for bad input subclasses ``FastdiffError``
and carries a one-line message that says which file or option is wrong, what
is wrong with it and what to do; the CLI prints it as ``fastdiff: error: ...``
and exits with ``EXIT_TROUBLE``.
"""

from __future__ import annotations

EXIT_IDENTICAL = 0
EXIT_DIVERGED = 1
EXIT_TROUBLE = 2
EXIT_INTERRUPTED = 130


class FastdiffError(Exception):
    """Bad input or an environment problem, explained in one line."""


class SchemaError(FastdiffError, ValueError):
    """A schema file or option that cannot be used."""
