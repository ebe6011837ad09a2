"""``fastdiff sweep``: many run pairs, each file hashed once (JSON Lines)."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

from ..errors import EXIT_INTERRUPTED, FastdiffError
from ..options import EXECUTORS
from .common import (
    common_options,
    compare_options,
    digest_cache,
    options_of,
    selection_of,
    selection_options,
)
from .output import print_note, print_problems, write_stdout
from .spec import STORE_FALSE, STORE_TRUE, Arg, Exclusive

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Iterator
    from concurrent.futures import Executor

    from ..model.results import Report
    from ..sweep import SweepSummary

#: compare's options that sweep does not take, and why (``tests/test_cli_help.py``
#: checks this against the declarations; the description says it).
NOT_FROM_COMPARE = {
    "-v": "a sweep's text is a row per pair, not a list of buffers",
    "--verbose": "a sweep's text is a row per pair, not a list of buffers",
    "--plot": "a timeline is of one pair: compare that pair",
    "--first": "a sweep's text is a row per pair, not a list of buffers",
}

DESCRIPTION = (
    "Compare many run pairs: one baseline against candidates (--baseline), every pair of a "
    "set (--all), or pairs listed in a file (--pairs). Each file is hashed once. Every "
    "option of compare applies but -v and --first and --plot (a row per pair; compare one "
    "pair for its buffers or its plot); --steps and --names select what every pair compares; "
    "--format is jsonl, text or html (one page at the end). Exit status: 2 if any pair had "
    "trouble, else 1 if any pair differs, else 0."
)

_MODE = Exclusive(required=True)
_PROGRESS = Exclusive()

ARGUMENTS = (
    Arg("--baseline", metavar="RUN", help="compare RUN against every run given", exclusive=_MODE),
    Arg("--all", action=STORE_TRUE, help="compare every pair of the runs given", exclusive=_MODE),
    Arg("--pairs", metavar="FILE", help="two run paths per line; # comments", exclusive=_MODE),
    Arg("runs", nargs="*", metavar="RUN", help="runs (folders or manifests)"),
    Arg(
        "--format",
        choices=("jsonl", "text", "html"),
        help="jsonl: a record per pair as it finishes, then a summary "
        "(default when stdout is not a terminal); text: a row per pair; html: one "
        "self-contained page at the end (to stdout: redirect it to a file)",
    ),
    Arg(
        "--progress",
        dest="progress",
        action=STORE_TRUE,
        default=None,
        help="progress on stderr (default: when stderr is a terminal)",
        exclusive=_PROGRESS,
    ),
    Arg(
        "--no-progress",
        dest="progress",
        action=STORE_FALSE,
        help="no progress, even when stderr is a terminal",
        exclusive=_PROGRESS,
    ),
    *selection_options(first=False),
    *common_options((*EXECUTORS, "dask")),
    *compare_options(default_cache=True),
)


def run(args: Namespace) -> int:
    from ..engine.progress import Progress
    from ..render.sweep import (
        format_sweep_row,
        render_sweep_record,
        render_sweep_summary_record,
        render_sweep_summary_text,
    )
    from ..sweep import all_pairs, baseline_pairs, read_pairs_file, summarize, sweep

    # ``is not None``: an empty value (--pairs "") is still the mode it names.
    if args.pairs is not None:
        if args.runs:
            raise FastdiffError("--pairs FILE takes no run arguments; list the pairs in FILE")
        pairs = read_pairs_file(args.pairs)
    elif args.all:
        pairs = all_pairs(args.runs)
    else:
        pairs = baseline_pairs(args.baseline, args.runs)
    fmt = args.format or ("text" if sys.stdout.isatty() else "jsonl")
    if fmt == "html":
        from .output import check_page_stdout

        check_page_stdout([run for pair in pairs for run in pair])
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    options = options_of(args)

    finished: list[Report] = []
    by_index: dict[int, Report] = {}  # the page lists the pairs in their order
    t0 = time.perf_counter()

    printed: set[tuple[str, str]] = set()

    def emit(index: int, report: Report) -> None:
        finished.append(report)
        by_index[index] = report
        # Each error once on stderr, however many pairs share it (a broken
        # baseline); every pair's record still holds it.
        new = [e for e in report.errors if (e.path, e.message) not in printed]
        printed.update((e.path, e.message) for e in new)
        print_problems(new)
        if fmt == "html":
            return  # one page, once the sweep ends
        write_stdout(render_sweep_record(index, report) if fmt == "jsonl" else
                     format_sweep_row(report) + "\n")  # fmt: skip

    def render(summary: SweepSummary) -> str:
        if fmt == "html":
            from .. import __version__
            from ..render.html import render_sweep_html

            done = [by_index[i] for i in sorted(by_index)]
            ran = [pairs[i] for i in sorted(by_index)]
            return render_sweep_html(done, summary, ran, version=__version__)
        if fmt == "jsonl":
            return render_sweep_summary_record(summary)
        return render_sweep_summary_text(summary, pairs)  # the pairs name those that disagree

    cache = digest_cache(args, [run for pair in pairs for run in pair])
    try:
        with _dask_executor(args) as executor:
            _, summary = sweep(
                pairs,
                options,
                executor=executor,
                cache=cache,
                on_report=emit,
                progress=Progress() if show_progress else None,
                classes_of=list(dict.fromkeys(args.runs)) if args.all else None,
                on_note=print_note,
                select=selection_of(args),
            )
    except KeyboardInterrupt:
        # Every finished pair is out already; close with what finished.
        elapsed = time.perf_counter() - t0
        write_stdout(render(summarize(finished, elapsed_s=elapsed, interrupted=True)))
        print("fastdiff: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if cache is not None:
            cache.close()
    write_stdout(render(summary))
    return summary.exit_code


@contextmanager
def _dask_executor(args: Namespace) -> Iterator[Executor | None]:
    if args.executor != "dask":
        yield None
        return
    if not args.scheduler:
        raise FastdiffError("--executor dask needs --scheduler tcp://HOST:PORT")
    try:
        from distributed import Client
    except ImportError:
        raise FastdiffError(
            "--executor dask needs the optional extra 'dask': pip install 'fastdiff-dumps[dask]' "
            "(in a checkout of fastdiff: pip install '.[dask]')"
        ) from None
    try:
        client = Client(args.scheduler, timeout="10s")
    except ValueError as exc:  # distributed's word for an address it cannot parse
        raise FastdiffError(
            f"--scheduler {args.scheduler}: not a scheduler address ({exc}); "
            "give tcp://HOST:PORT, as printed by dask scheduler"
        ) from exc
    except (OSError, TimeoutError) as exc:
        raise FastdiffError(f"--scheduler {args.scheduler}: cannot connect ({exc})") from exc
    try:
        yield client.get_executor(pure=False)
    finally:
        client.close()
