"""``fastdiff compare RUN_A RUN_B``: two runs, one report."""

from __future__ import annotations

from ..options import EXECUTORS
from .common import (
    PLOT,
    VERBOSE,
    common_options,
    compare_options,
    digest_cache,
    options_of,
    selection_of,
    selection_options,
)
from .output import print_note, print_problems, write_plot, write_stdout
from .spec import Arg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

DESCRIPTION = (
    "Compare the dumps of two runs: folders of step_<N>_<name>.bin (or .npy) dumps or "
    "step_<N>.<safetensors|npz|pt> files, checkpoint files and folders, or manifests from "
    "'fastdiff hash'. Exit status: 0 identical, 1 diverged, 2 trouble (missing folder, "
    "malformed or unreadable file, nothing to compare)."
)

ARGUMENTS = (
    Arg("run_a", metavar="RUN_A", help="folder (or manifest) of the first run"),
    Arg("run_b", metavar="RUN_B", help="folder (or manifest) of the second run"),
    Arg(
        "--format",
        choices=("text", "json", "html"),
        default="text",
        help="text: the report for people (default); json: one JSON object; html: one "
        "self-contained page (to stdout: redirect it to a file)",
    ),
    VERBOSE,
    PLOT,
    *selection_options(),
    *common_options(EXECUTORS),
    *compare_options(default_cache=False),
)


def run(args: Namespace) -> int:
    from ..compare import compare_runs
    from ..stages.verdict import exit_code

    if args.plot is not None:
        from .output import check_plot_path

        check_plot_path(args.plot, [args.run_a, args.run_b])
    if args.format == "html":
        from .output import check_page_stdout

        check_page_stdout([args.run_a, args.run_b])
    options = options_of(args)
    cache = digest_cache(args, [args.run_a, args.run_b])
    try:
        report = compare_runs(
            args.run_a, args.run_b, options, cache=cache, on_note=print_note,
            select=selection_of(args),
        )  # fmt: skip
    finally:
        if cache is not None:
            cache.close()
    print_problems(report.errors)
    if args.format == "json":  # each format loads only its own renderer (text: no json)
        from ..render.json import render_json

        text = render_json(report, first=args.first)
    elif args.format == "html":
        from .. import __version__
        from ..render.html import render_html

        text = render_html(report, args.verbose, first=args.first, version=__version__)
    else:
        from ..render.text import render_text

        text = render_text(report, args.verbose, first=args.first)
    write_stdout(text)  # the report first: a plot that fails loses nothing of it
    code = exit_code(report)
    if args.plot is not None:
        return write_plot(report, args.plot, code)
    return code
