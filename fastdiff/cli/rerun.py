"""``fastdiff rerun -n N -- CMD ...``: is the job deterministic, and if not, where?"""

from __future__ import annotations

import sys

from ..options import EXECUTORS
from .common import CACHE, common_options, compare_options, options_of, positive_int
from .output import print_note, print_problems, write_stdout
from .spec import APPEND, STORE_TRUE, Arg, BadValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

DESCRIPTION = (
    "Run a job N times (arms), each with FASTDIFF_RUN set to a run folder of its own (where "
    "fastdiff.Recorder() writes) and FASTDIFF_ARM to its number, one after another; then "
    "compare every arm against the first. Prints whether the job is deterministic and, if "
    "not, the first divergence and whether it shows in every arm. Exit status: 0 "
    "deterministic, 1 not, 2 trouble (an arm failed: its exit status and the end of its "
    "stderr), 130 interrupted (the runs are kept)."
)


def arm_count(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise BadValue(f"must be >= 2 (arm 1 and one to compare with it), got {text!r}")
    return value


ARGUMENTS = (
    Arg("job", nargs="*", metavar="CMD", help="the job to run, after --"),
    Arg("-n", "--arms", type=arm_count, default=2, metavar="N", help="runs of the job (default 2)"),
    Arg(
        "--out",
        metavar="DIR",
        help="make the arms' run folders here, as arm-1 ... arm-N (default: a new temporary "
        "folder)",
    ),
    Arg(
        "--keep",
        action=STORE_TRUE,
        help="keep the runs at the end (they are kept anyway after trouble or Ctrl-C)",
    ),
    Arg(
        "--format",
        choices=("text", "html"),
        default="text",
        help="text: the arms, the verdict and the first divergence (default); html: one "
        "self-contained page of them (to stdout: redirect it to a file)",
    ),
    Arg(
        "--env",
        action=APPEND,
        metavar="[ARM:]K=V",
        help="set K=V for every arm, or with ARM: for arm ARM (1..N) only; repeatable",
    ),
    *common_options(EXECUTORS),
    *(arg for arg in compare_options(default_cache=False) if arg.group != CACHE),
)


def run(args: Namespace) -> int:
    from ..render.rerun import format_arm, format_arm_start, render_rerun_text
    from ..rerun import rerun
    from ..textkit.escape import display_path

    options = options_of(args)
    arms = args.arms
    if args.format == "html":
        from .output import check_page_stdout

        check_page_stdout([args.out] if args.out else [])

    def started(index: int, folder: str) -> None:
        print(format_arm_start(index, arms, folder), file=sys.stderr, flush=True)

    def ended(arm: object) -> None:
        print(f"fastdiff rerun: {format_arm(arm)}", file=sys.stderr, flush=True)  # type: ignore[arg-type]

    result = rerun(
        args.job,
        arms,
        out=args.out,
        env=args.env or (),
        keep=args.keep,
        options=options,
        on_arm=ended,
        on_start=started,
        on_note=print_note,
    )
    for report in result.reports:
        print_problems(report.errors)
    if args.format == "html":
        from .. import __version__
        from ..render.html import render_rerun_html

        write_stdout(render_rerun_html(result, version=__version__))
    else:
        write_stdout(render_rerun_text(result))
    if result.interrupted:
        print(f"fastdiff: interrupted; the runs are kept in {display_path(result.out)}",
              file=sys.stderr)  # fmt: skip
    return result.exit_code
