"""Writing to the terminal: stdout that tolerates a closed pipe, problems as
one line each on stderr."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..results import Problem


def write_stdout(text: str) -> None:
    """Write and flush; a reader that went away (``| head``) is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (stdout replaced in-process)
        pass


def print_problems(problems: Iterable[Problem]) -> None:
    """One line on stderr per problem, its path and message escaped as in the reports."""
    from ..render.escape import display_path

    for e in problems:
        print(
            f"fastdiff: error: {display_path(e.path)}: {display_path(e.message)}", file=sys.stderr
        )


def print_note(note: str) -> None:
    """A remark on how the runs are read (``note: ...`` / ``warning: ...``), on stderr."""
    from ..render.escape import display_path

    print(f"fastdiff: {display_path(note)}", file=sys.stderr)
