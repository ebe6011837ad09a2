"""Writing to the terminal: stdout that tolerates a closed pipe, problems as
one line each on stderr."""

from __future__ import annotations

import os
import sys

from ..errors import FastdiffError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from ..model.findings import Note
    from ..model.results import Problem, Report


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
    from ..textkit.escape import display_path

    for e in problems:
        print(
            f"fastdiff: error: {display_path(e.path)}: {display_path(e.message)}", file=sys.stderr
        )


def print_note(note: Note | str) -> None:
    """A remark on how the runs are read (a ``Note``, or a schema file's
    warning as written), on stderr: ``fastdiff: note: ...``."""
    from ..textkit.escape import display_path

    if not isinstance(note, str):
        from ..render.notes import note_text

        note = note_text(note)
    print(f"fastdiff: {display_path(note)}", file=sys.stderr)


def check_plot_path(path: str, runs: Sequence[str]) -> None:
    """Fail before comparing if the plot cannot be written: no name, inside a
    run folder (one of ``runs``, the folder a manifest among them was hashed
    from, or any folder holding dumps: fastdiff never writes there), no such
    folder or not writable, a target that is not a regular file (a FIFO
    would take the picture and lose it), a name that does not end in .png
    (the picture is a PNG, whatever the name says), no matplotlib."""
    if path == "":
        raise FastdiffError("--plot: empty file name; give the PNG file to write")
    if not path.lower().endswith(".png"):
        raise FastdiffError(
            f"--plot {path}: the plot is a PNG image; give a file name ending in .png"
        )
    from ..render.plot import MISSING
    from ..sources import refuse_run_folder

    refuse_run_folder(path, f"--plot {path}", tuple(runs), "write the plot elsewhere")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FastdiffError(f"--plot {path}: folder {folder} does not exist")
    if os.path.exists(path) and not os.path.isfile(path):
        raise FastdiffError(f"--plot {path}: not a regular file; give a .png file to write")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise FastdiffError(f"--plot {path}: cannot write there (permission denied)")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise FastdiffError(MISSING) from None


def check_page_stdout(runs: Sequence[str]) -> None:
    """``--format html`` writes its page to stdout, as the other formats write
    theirs: fail before comparing when stdout is a terminal (a page is for a
    browser: redirect it to a file), or a file inside a run folder (one of
    ``runs``, or any folder holding dumps: fastdiff never writes there)."""
    if sys.stdout.isatty():
        raise FastdiffError(
            "--format html writes a whole page to stdout; redirect it to a file "
            "(> report.html) and open that in a browser"
        )
    path = _stdout_file()
    if path is not None:
        from ..sources import refuse_run_folder

        refuse_run_folder(
            path,
            f"--format html: stdout ({path})",
            tuple(runs),
            "redirect the page to a file elsewhere (the shell made an empty one there)",
        )


def _stdout_file() -> str | None:
    """The path of the regular file stdout writes to, where the OS says it
    (Linux: /proc/self/fd/1); None for a pipe, or where it cannot tell."""
    import stat

    try:
        if not stat.S_ISREG(os.fstat(sys.stdout.fileno()).st_mode):
            return None
        path = os.readlink("/proc/self/fd/1")
    except (OSError, ValueError, AttributeError):  # no fd (replaced in-process), no /proc
        return None
    return path if os.path.isabs(path) and os.path.exists(path) else None


def write_plot(report: Report, path: str, code: int) -> int:
    """``--plot``: draw the report's timeline to ``path``, after the report;
    the exit code (``code``, or trouble when the plot cannot be written)."""
    from ..errors import EXIT_TROUBLE
    from ..render.plot import write_timeline_plot

    try:
        write_timeline_plot(report, path)
    except (OSError, ImportError, FastdiffError) as exc:
        from ..textkit.escape import display_path

        # Said once: the option and the file, then why (an OSError's strerror,
        # which names neither: write_timeline_plot does not word it).
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(
            f"fastdiff: error: --plot {display_path(path)}: cannot write the timeline "
            f"plot ({display_path(why)}); the report above is complete",
            file=sys.stderr,
        )
        return max(code, EXIT_TROUBLE)
    print(f"fastdiff: timeline plot written to {path}", file=sys.stderr)
    return code
