"""``fastdiff watch RUN_A RUN_B``: compare two runs while they are written."""

from __future__ import annotations

import sys
import time

from ..errors import FastdiffError
from ..options import EXECUTORS
from .common import (
    IGNORE,
    PLOT,
    VERBOSE,
    common_options,
    compare_options,
    digest_cache,
    non_negative_float,
    non_negative_int,
    options_of,
)
from .output import print_note, print_problems, write_plot, write_stdout
from .spec import STORE_FALSE, STORE_TRUE, Arg, BadValue, Exclusive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

    from ..model.findings import Note
    from ..model.results import Problem
    from ..watch import StepReport

DESCRIPTION = (
    "Compare two runs while they are written: each step as soon as both runs have it, "
    "stopping at the first divergent step. RUN_A and RUN_B are run folders (which may not "
    "exist yet) or manifests. Every option of compare applies but --steps and --names and "
    "--first (watch compares every step and buffer as written, and stops at the first "
    "divergent step); -v lists every buffer of each step; --plot draws the timeline at the "
    "end; --format is text, jsonl or html (one page once the watch ends). "
    "Exit status: 0 all equal once both runs were idle for "
    "--idle-timeout, 1 diverged, 2 trouble (a folder that stayed missing or empty for "
    "--start-timeout, vanished or cannot be read; a buffer that cannot be compared), "
    "130 interrupted."
)

WATCHING = "watching"

#: The longest wait accepted (about 31 years): beyond it, a float sleep overflows.
MAX_WAIT = 1e9


def positive_seconds(text: str) -> float:
    """--poll, --idle-timeout, --start-timeout: seconds, > 0 and at most MAX_WAIT."""
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"not a number: {text!r}") from None
    if not 0 < value <= MAX_WAIT:
        raise BadValue(f"must be a number of seconds > 0 and at most {MAX_WAIT:.0e}, got {text!r}")
    return value


def wait_seconds(text: str) -> float:
    """--settle: seconds, >= 0 and at most MAX_WAIT."""
    value = non_negative_float(text)
    if value > MAX_WAIT:
        raise BadValue(f"must be at most {MAX_WAIT:.0e} seconds, got {text!r}")
    return value


_PROGRESS = Exclusive()

ARGUMENTS = (
    Arg("run_a", metavar="RUN_A", help="folder (or manifest) of the first run"),
    Arg("run_b", metavar="RUN_B", help="folder (or manifest) of the second run"),
    Arg(
        "--poll",
        type=positive_seconds,
        default=0.2,
        metavar="SECONDS",
        help="how often the run folders are looked at (default 0.2)",
        group=WATCHING,
    ),
    Arg(
        "--settle",
        type=wait_seconds,
        default=2.0,
        metavar="SECONDS",
        help="a run's newest step is complete once nothing in its folder changed for this "
        "long (default 2); earlier steps are complete once a later step appears",
        group=WATCHING,
    ),
    Arg(
        "--lag",
        type=non_negative_int,
        default=None,
        metavar="STEPS",
        help="a step is complete once a run holds a step more than STEPS later, for writers "
        "that begin a step before finishing the one before (default: any later step, and a "
        "buffer that a run still writing lacks or holds shorter is waited for, never a "
        "divergence: an error naming --lag if the run writes other files first; --lag 0 "
        "makes it a divergence)",
        group=WATCHING,
    ),
    Arg(
        "--idle-timeout",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="once both runs wrote nothing for this long, compare what is left and stop "
        "(default 60)",
        group=WATCHING,
    ),
    Arg(
        "--start-timeout",
        type=positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="how long a run folder that is missing or holds no dump yet is waited for, "
        "from the start (default 600: jobs may take minutes to import torch or load data)",
        group=WATCHING,
    ),
    Arg(
        "--keep-going",
        action=STORE_TRUE,
        help="after the first divergent step, go on and report every later step",
        group=WATCHING,
    ),
    Arg(
        "--format",
        choices=("text", "jsonl", "html"),
        help="text: a line per step, then the verdict (default when stdout is a terminal); "
        "jsonl: a JSON record per step, then a summary; html: one self-contained page "
        "once the watch ends (to stdout: redirect it to a file)",
    ),
    Arg(
        "--progress",
        dest="progress",
        action=STORE_TRUE,
        default=None,
        help="a status line on stderr (default: when stderr is a terminal)",
        exclusive=_PROGRESS,
    ),
    Arg(
        "--no-progress",
        dest="progress",
        action=STORE_FALSE,
        help="no status line, even when stderr is a terminal",
        exclusive=_PROGRESS,
    ),
    VERBOSE,
    PLOT,
    IGNORE,
    *common_options(EXECUTORS),
    *compare_options(default_cache=False),
)

#: compare's options that watch does not take, and why (``tests/test_cli_help.py``
#: checks this against the declarations; the description says it). Its
#: --format is text|jsonl|html.
NOT_FROM_COMPARE: dict[str, str] = {
    "--steps": "watch compares every step as it is written",
    "--names": "watch compares every buffer of a step",
    "--first": "watch stops at the first divergent step (--keep-going goes on)",
}


class _StatusLine:
    """The progress line, redrawn at most five times a second."""

    __slots__ = ("_last", "line")

    def __init__(self) -> None:
        from ..engine.progress import StatusLine

        self.line = StatusLine()
        self._last = 0.0

    def show(self, text: str) -> None:
        now = time.monotonic()
        if now - self._last >= 0.2:
            self._last = now
            self.line.show(text)

    def clear(self) -> None:
        self.line.close()
        self._last = 0.0


def run(args: Namespace) -> int:
    from ..model.statuses import StopReason
    from ..render.watch import (
        render_step_record,
        render_step_text,
        render_summary_record,
        render_summary_text,
    )
    from ..watch import Watch

    if args.plot is not None:
        from .output import check_plot_path

        check_plot_path(args.plot, [args.run_a, args.run_b])
    options = options_of(args)
    fmt = args.format or ("text" if sys.stdout.isatty() else "jsonl")
    if fmt == "html":
        from .output import check_page_stdout

        check_page_stdout([args.run_a, args.run_b])
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    status = _StatusLine() if show_progress else None
    jsonl = fmt == "jsonl"

    def on_step(step: StepReport) -> None:
        if status is not None:
            status.clear()
        print_problems(step.errors)
        if fmt == "html":
            return  # one page, once the watch ends
        write_stdout(render_step_record(step) if jsonl else render_step_text(step, args.verbose))

    def on_problem(problem: Problem) -> None:
        if status is not None:
            status.clear()
        print_problems([problem])

    def on_note(note: Note) -> None:
        if status is not None:
            status.clear()
        print_note(note)

    cache = digest_cache(args, [args.run_a, args.run_b])
    try:
        watch = Watch(
            args.run_a,
            args.run_b,
            options,
            poll=args.poll,
            settle=args.settle,
            idle_timeout=args.idle_timeout,
            start_timeout=args.start_timeout,
            keep_going=args.keep_going,
            lag=args.lag,
            cache=cache,
            on_step=on_step,
            on_problem=on_problem,
            on_note=on_note,
            on_status=status.show if status is not None else None,
        )
    except ValueError as exc:
        raise FastdiffError(str(exc)) from exc
    try:
        summary = watch.run()
    finally:
        if status is not None:
            status.clear()
        if cache is not None:
            cache.close()
    if fmt == "html":
        from .. import __version__
        from ..render.html import render_watch_html

        write_stdout(render_watch_html(summary, version=__version__))
    else:
        write_stdout(render_summary_record(summary) if jsonl else render_summary_text(summary))
    code = summary.exit_code
    if summary.stopped is StopReason.INTERRUPTED:
        print("fastdiff: interrupted", file=sys.stderr)
        return code
    if args.plot is not None:
        return write_plot(summary.report, args.plot, code)
    return code
