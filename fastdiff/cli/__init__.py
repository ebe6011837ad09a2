"""The command line: parse arguments, call the library, print, exit.

Nothing heavy is imported here: numpy and numba load only when a pair
differs (``kernel``). Library errors become one ``fastdiff: error: ...``
line on stderr and exit code 2; so does any unexpected exception (a bug:
the line says so, the traceback only with --debug or FASTDIFF_DEBUG=1), as
exit 1 means "diverged" to every script. A closed pipe (``| head``) ends
quietly; Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import traceback
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

from .. import __version__
from ..errors import EXIT_INTERRUPTED, EXIT_TROUBLE, FastdiffError
from ..options import EXECUTORS

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from ..engine.cache import DigestCache
    from ..options import CompareOptions
    from ..results import Problem, Report
    from ..schema import Schema

#: The longest --cache-min-age: digests of no file are kept beyond it anyway.
MAX_SECONDS = 1e9
#: The largest bench --scale: a 1-byte file becomes 1 GB (sizes are lowered to
#: what memory and disk allow anyway); beyond it sizes overflow a float.
MAX_SCALE = 1e9
#: Where unexpected errors (bugs) are to be reported.
BUG_REPORTS = "the fastdiff maintainers"

_SIZE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)(i?[bB])?\s*$")


def parse_size(text: str) -> int:
    """'4194304', '64K', '4M', '1GiB' -> bytes (binary multiples)."""
    m = _SIZE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 65536, 64K, 4M)")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _seconds(text: str) -> float:
    """A duration for --cache-min-age: finite, >= 0, at most MAX_SECONDS."""
    value = _non_negative_float(text)
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is more than {MAX_SECONDS:.0e} seconds (about 31 years); give a "
            "smaller number, or --no-cache for no cache at all"
        )
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one ``fastdiff: error:`` line and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_TROUBLE, f"fastdiff: error: {message} (see '{self.prog} --help')\n")


def _add_common(p: argparse.ArgumentParser, executors: Sequence[str]) -> None:
    """Options shared by compare, sweep and hash."""
    _add_schema_options(p)
    _add_performance_options(p, executors)


def _add_schema_options(p: argparse.ArgumentParser) -> None:
    schema = p.add_argument_group("schema")
    schema.add_argument(
        "--schema",
        default=None,
        metavar="NAME|FILE.toml",
        help="a preset (rl-state, raw) or a TOML schema file (default: rl-state; a manifest "
        "is read with the schema it records); 'fastdiff schema' prints one to start from",
    )
    schema.add_argument(
        "--default-dtype",
        metavar="DTYPE",
        help="element type of buffers in no group (default: the schema's, u8)",
    )


def _add_performance_options(
    p: argparse.ArgumentParser,
    executors: Sequence[str],
    jobs_help: str = "workers (default: the cores this process may use)",
) -> None:
    perf = p.add_argument_group("performance")
    perf.add_argument(
        "--executor",
        choices=executors,
        default="auto",
        help="auto (default): in-process for small totals, else threads"
        + ("; dask: a Dask cluster, see --scheduler" if "dask" in executors else ""),
    )
    if "dask" in executors:
        perf.add_argument(
            "--scheduler", metavar="tcp://HOST:PORT", help="Dask scheduler for --executor dask"
        )
    perf.add_argument("--jobs", type=_positive_int, metavar="N", help=jobs_help)
    perf.add_argument(
        "--chunk-size", type=parse_size, default=None, metavar="BYTES",
        help="hash chunk size, a multiple of 8 (default: 4M)",
    )  # fmt: skip


def _add_compare_options(p: argparse.ArgumentParser, default_cache: bool) -> None:
    tol = p.add_argument_group("tolerance (default: exact, every bit counts)")
    tol.add_argument(
        "--atol", type=_non_negative_float, metavar="X",
        help="absolute tolerance: |a-b| <= atol + rtol*|b| is within",
    )  # fmt: skip
    tol.add_argument("--rtol", type=_non_negative_float, metavar="X", help="relative tolerance")
    tol.add_argument(
        "--ulp", type=_non_negative_int, metavar="N",
        help="within N units in the last place (integers: |a-b| <= N)",
    )  # fmt: skip
    tol.add_argument(
        "--nan-equal", action="store_true", help="any NaN equals any NaN, whatever the payload"
    )
    p.add_argument(
        "--engine",
        choices=("auto", "numba", "numpy", "python"),
        default="auto",
        help="kernel for differing chunks (auto: python for a few differing 4 KiB blocks, "
        "numpy up to 64 MiB, else numba)",
    )
    _add_cache_options(p, default_cache)


def _fraction(text: str) -> float:
    value = _non_negative_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be a fraction from 0 to 1, got {text!r}")
    return value


def _add_cache_options(p: argparse.ArgumentParser, default_cache: bool) -> None:
    cache = p.add_argument_group("digest cache ($XDG_CACHE_HOME/fastdiff, else ~/.cache/fastdiff)")
    cache.add_argument(
        "--cache",
        dest="cache",
        action="store_true",
        default=default_cache,
        help="look digests up in the cache and store new ones"
        + (" (default)" if default_cache else ""),
    )
    cache.add_argument(
        "--no-cache",
        dest="cache",
        action="store_false",
        help="neither read nor write the cache" + ("" if default_cache else " (default)"),
    )
    cache.add_argument("--cache-dir", metavar="DIR", help="use this folder for the cache")
    cache.add_argument(
        "--cache-min-age",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="cache only digests of files unchanged for this long (default 60): a file still "
        "being written through a memory map can change without its times moving",
    )
    cache.add_argument(
        "--cache-verify",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help="re-hash this share (0..1) of the files found in the cache, at least one, before "
        "using any; a digest that does not match sets the whole cache aside (default 0)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fastdiff",
        description="Compare the binary state dumps of two training runs, bitwise and fast.",
    )
    parser.add_argument("--version", action="version", version=f"fastdiff {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    cmp = sub.add_parser(
        "compare",
        help="compare two runs (exit 0 identical, 1 diverged, 2 trouble)",
        description="Compare the step_<N>_<name>.bin dumps of two runs (folders, or manifests "
        "from 'fastdiff hash'). Exit status: 0 identical, 1 diverged, 2 trouble (missing "
        "folder, malformed or unreadable file, nothing to compare).",
    )
    cmp.add_argument("run_a", metavar="RUN_A", help="folder (or manifest) of the first run")
    cmp.add_argument("run_b", metavar="RUN_B", help="folder (or manifest) of the second run")
    cmp.add_argument("--format", choices=("text", "json"), default="text")
    cmp.add_argument("-v", "--verbose", action="store_true", help="list every buffer")
    _add_common(cmp, EXECUTORS)
    _add_compare_options(cmp, default_cache=False)

    swp = sub.add_parser(
        "sweep",
        help="compare many run pairs, hashing each file once (JSON Lines)",
        description="Compare many run pairs: one baseline against candidates (--baseline), "
        "every pair of a set (--all), or pairs listed in a file (--pairs). Each file is hashed "
        "once. Exit status: 2 if any pair had trouble, else 1 if any pair differs, else 0.",
    )
    mode = swp.add_mutually_exclusive_group(required=True)
    mode.add_argument("--baseline", metavar="RUN", help="compare RUN against every run given")
    mode.add_argument("--all", action="store_true", help="compare every pair of the runs given")
    mode.add_argument("--pairs", metavar="FILE", help="two run paths per line; # comments")
    swp.add_argument("runs", nargs="*", metavar="RUN", help="runs (folders or manifests)")
    swp.add_argument(
        "--format",
        choices=("jsonl", "text"),
        default=None,
        help="jsonl: a record per pair as it finishes, then a summary "
        "(default when stdout is not a terminal); text: a row per pair",
    )
    prog = swp.add_mutually_exclusive_group()
    prog.add_argument("--progress", dest="progress", action="store_true", default=None,
                      help="progress on stderr (default: when stderr is a terminal)")  # fmt: skip
    prog.add_argument("--no-progress", dest="progress", action="store_false")
    _add_common(swp, (*EXECUTORS, "dask"))
    _add_compare_options(swp, default_cache=True)

    hsh = sub.add_parser(
        "hash",
        help="write a run's manifest (file list and chunk digests)",
        description="Hash every dump of a run and write a manifest that compare and sweep "
        "accept in place of the run folder.",
    )
    hsh.add_argument("run", metavar="RUN", help="run folder")
    hsh.add_argument("-o", "--output", metavar="FILE", help="manifest to write (default: stdout)")
    _add_common(hsh, EXECUTORS)
    _add_cache_options(hsh, default_cache=True)

    _add_stats_parser(sub)
    _add_bench_parser(sub)

    sch = sub.add_parser("schema", help="print a schema as TOML (a start for your own)")
    sch.add_argument("name", nargs="?", default="rl-state", metavar="NAME|FILE.toml")

    debug_help = "on an unexpected error (a bug), print the traceback (also: FASTDIFF_DEBUG=1)"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    for command in sub.choices.values():
        # SUPPRESS: a subcommand without --debug leaves the top level's value alone.
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help
        )
    return parser


def write_stdout(text: str) -> None:
    """Write and flush; a reader that went away (``| head``) is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (stdout replaced in-process)
        pass


def _given_schema(args: argparse.Namespace) -> Schema | None:
    """The schema the options choose; None when neither --schema nor
    --default-dtype is given (a manifest's own schema, else rl-state)."""
    from ..schema import resolve_schema

    if args.schema is None and args.default_dtype is None:
        return None
    return resolve_schema(args.schema, args.default_dtype)


def _options(args: argparse.Namespace) -> CompareOptions:
    from ..kernels import Tolerance
    from ..options import DEFAULT_CHUNK_SIZE, CompareOptions

    executor = "auto" if args.executor == "dask" else args.executor
    try:
        return CompareOptions(
            schema=_given_schema(args),
            tolerance=Tolerance(
                getattr(args, "atol", None),
                getattr(args, "rtol", None),
                getattr(args, "ulp", None),
                getattr(args, "nan_equal", False),
            ),
            chunk_size=DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size,
            engine=getattr(args, "engine", "auto"),
            executor=executor,
            jobs=args.jobs,
        )
    except ValueError as exc:
        raise FastdiffError(str(exc)) from exc


def _cache(args: argparse.Namespace, runs: Sequence[str]) -> DigestCache | None:
    """The digest cache, unless off; never inside one of the ``runs`` folders."""
    if not args.cache:
        return None
    from ..engine.cache import DigestCache, default_cache_dir
    from ..stages.discover import is_inside

    folder = args.cache_dir or str(default_cache_dir())
    for run in runs:
        if os.path.isdir(run) and is_inside(folder, run):
            raise FastdiffError(
                f"digest cache folder {folder} is inside the run folder {run}, and fastdiff "
                "never writes into a run folder; choose another --cache-dir, or --no-cache"
            )
    return DigestCache(folder, min_age_s=args.cache_min_age, verify=args.cache_verify)


@contextmanager
def _dask_executor(args: argparse.Namespace) -> Iterator[Executor | None]:
    if args.executor != "dask":
        yield None
        return
    if not args.scheduler:
        raise FastdiffError("--executor dask needs --scheduler tcp://HOST:PORT")
    try:
        from distributed import Client
    except ImportError:
        raise FastdiffError(
            "--executor dask needs the optional extra: pip install 'fastdiff[dask]'"
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


def print_problems(problems: Iterable[Problem]) -> None:
    """One line on stderr per problem, its path and message escaped as in the reports."""
    from ..stages.discover import display_path

    for e in problems:
        print(
            f"fastdiff: error: {display_path(e.path)}: {display_path(e.message)}", file=sys.stderr
        )


def _print_errors(report: Report) -> None:
    print_problems(report.errors)


def _run_compare(args: argparse.Namespace) -> int:
    from ..compare import compare_runs
    from ..render import render_json, render_text
    from ..stages.verdict import exit_code

    options = _options(args)
    cache = _cache(args, [args.run_a, args.run_b])
    try:
        report = compare_runs(args.run_a, args.run_b, options, cache=cache)
    finally:
        if cache is not None:
            cache.close()
    _print_errors(report)
    text = render_json(report) if args.format == "json" else render_text(report, args.verbose)
    write_stdout(text)
    return exit_code(report)


def _run_sweep(args: argparse.Namespace) -> int:
    from ..engine.progress import Progress
    from ..render import (
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
    show_progress = sys.stderr.isatty() if args.progress is None else args.progress
    options = _options(args)

    finished: list[Report] = []
    t0 = time.perf_counter()

    def emit(index: int, report: Report) -> None:
        finished.append(report)
        _print_errors(report)
        write_stdout(render_sweep_record(index, report) if fmt == "jsonl" else
                     format_sweep_row(report) + "\n")  # fmt: skip

    render = render_sweep_summary_record if fmt == "jsonl" else render_sweep_summary_text
    cache = _cache(args, [run for pair in pairs for run in pair])
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


def _run_hash(args: argparse.Namespace) -> int:
    from ..hashrun import write_manifest

    options = _options(args)
    cache = _cache(args, [args.run])
    try:
        text, problems = write_manifest(args.run, options, cache=cache, output=args.output)
    finally:
        if cache is not None:
            cache.close()
    print_problems(problems)
    if problems:
        print("fastdiff: error: no manifest written: fix the errors above", file=sys.stderr)
        return EXIT_TROUBLE
    if args.output is None:
        write_stdout(text)
    return 0


def _scale(text: str) -> float:
    """bench --scale: a number > 0, at most MAX_SCALE."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    if value > MAX_SCALE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is more than {MAX_SCALE:.0e}; give a smaller factor (sizes are lowered "
            "to what memory and disk allow anyway)"
        )
    return value


def _add_stats_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    st = sub.add_parser(
        "stats",
        help="sizes of a run's dumps: per step and group, largest buffers, gaps",
        description="How big a run's dumps are, from their sizes alone (nothing is read): per "
        "step and group the files, elements, bytes and dtypes; totals; the largest buffers; "
        "buffers missing at some steps; malformed sizes. RUN is a run folder or a manifest "
        "from 'fastdiff hash'. Exit status: 0, or 2 on trouble (missing run, no dumps, an "
        "unreadable entry).",
    )
    st.add_argument("run", metavar="RUN", help="run folder (or manifest)")
    st.add_argument("--format", choices=("text", "json"), default="text")
    st.add_argument(
        "--top", type=_non_negative_int, default=10, metavar="N",
        help="list the N largest buffers (default: 10)",
    )  # fmt: skip
    _add_schema_options(st)


def _add_bench_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..options import EXECUTORS

    bn = sub.add_parser(
        "bench",
        help="measure how fast this machine compares dumps (sizes, jobs, a real run's shape)",
        description="Time fastdiff on synthetic dumps written to a temporary folder: a ladder "
        "of buffer sizes from 4 KiB up to --max-size, identical and with one difference near "
        "the end, for --jobs 1, 2, 4, ... up to the cores, against the floor of reading both "
        "files once (the faster of a readinto loop and xxh3 over a memory map). fastdiff is "
        "timed in-process (a library call per sample: no interpreter "
        "start-up or imports). Progress goes to stderr when it is a terminal.",
    )
    bn.add_argument(
        "--max-size", type=parse_size, default=1 << 30, metavar="BYTES",
        help="largest buffer of the ladder (default: 1G; lowered to what free memory "
        "and disk allow)",
    )  # fmt: skip
    bn.add_argument(
        "--no-ladder", dest="ladder", action="store_false",
        help="skip the ladder (with --like: measure the like run only)",
    )  # fmt: skip
    bn.add_argument("--like", metavar="RUN", help="also a run shaped like RUN (folder or manifest)")
    bn.add_argument(
        "--scale", type=_scale, default=1.0, metavar="X",
        help="with --like: file sizes times X (default: 1)",
    )  # fmt: skip
    bn.add_argument(
        "--repeat", type=_positive_int, default=5, metavar="N",
        help="timed samples per case (default: 5; the median is reported)",
    )  # fmt: skip
    bn.add_argument(
        "--warmup", type=_non_negative_int, default=1, metavar="N",
        help="untimed rounds after the check run and calibration (default: 1)",
    )  # fmt: skip
    bn.add_argument("--format", choices=("text", "json"), default="text")
    bn.add_argument("--plot", metavar="FILE.png",
                    help="also draw GB/s against size (needs fastdiff[plot])")  # fmt: skip
    bn.add_argument("--workdir", metavar="DIR", help="make the temporary folder here")
    bn.add_argument("--keep", action="store_true", help="keep the dumps and say where")
    _add_schema_options(bn)
    _add_performance_options(
        bn,
        EXECUTORS,
        jobs_help="measure jobs 1, 2, 4, ... up to N (default: the cores this process may use)",
    )


def _run_stats(args: argparse.Namespace) -> int:
    from ..stats import render_stats_json, render_stats_text, stats_for

    stats = stats_for(args.run, _given_schema(args), args.top)
    for note in stats.notes:
        print(f"fastdiff: {note}", file=sys.stderr)
    print_problems(stats.errors)
    write_stdout(render_stats_json(stats) if args.format == "json" else render_stats_text(stats))
    return EXIT_TROUBLE if stats.errors else 0


def _run_bench(args: argparse.Namespace) -> int:
    from ..bench.run import plan_bench, render_bench_json, render_bench_text, run_bench
    from ..engine.progress import StatusLine
    from ..schema import resolve_schema

    if args.plot == "":
        raise FastdiffError("--plot: empty file name; give the PNG file to write")
    if args.plot and args.like is not None:
        from ..stages.discover import is_inside

        if is_inside(args.plot, args.like):
            raise FastdiffError(
                f"--plot {args.plot} is inside the run folder {args.like}, and fastdiff never "
                "writes into a run folder; write the plot elsewhere"
            )
    if args.plot:
        from ..bench.plot import require_matplotlib

        require_matplotlib(args.plot)
    plan = plan_bench(
        max_size=args.max_size,
        jobs=args.jobs,
        executor=args.executor,
        chunk_size=args.chunk_size,
        repeat=args.repeat,
        warmup=args.warmup,
        workdir=args.workdir,
        keep=args.keep,
        like=args.like,
        scale=args.scale,
        ladder_on=args.ladder,
        schema=resolve_schema(args.schema, args.default_dtype),
    )
    for note in plan.notes:
        print(f"fastdiff: {note}", file=sys.stderr)
    status = StatusLine() if sys.stderr.isatty() else None
    try:
        result = run_bench(plan, status.show if status else None)
    finally:
        if status is not None:
            status.close()
    if result.kept:
        print(f"fastdiff: dumps kept in {result.folder}", file=sys.stderr)
    write_stdout(render_bench_json(result) if args.format == "json" else render_bench_text(result))
    if args.plot:
        from ..bench.plot import write_plot

        write_plot(result, args.plot)
        print(f"fastdiff: plot written to {args.plot}", file=sys.stderr)
    return 0


def _run_schema(args: argparse.Namespace) -> int:
    from ..schema import resolve_schema, schema_to_toml

    write_stdout(schema_to_toml(resolve_schema(args.name)))
    return 0


_COMMANDS = {
    "compare": _run_compare,
    "sweep": _run_sweep,
    "hash": _run_hash,
    "stats": _run_stats,
    "bench": _run_bench,
    "schema": _run_schema,
}


def _debug_requested(argv: Sequence[str]) -> bool:
    """--debug on the command line (before any ``--``), or FASTDIFF_DEBUG set and not 0."""
    if os.environ.get("FASTDIFF_DEBUG", "") not in ("", "0"):
        return True
    words = list(argv)
    return "--debug" in (words[: words.index("--")] if "--" in words else words)


def _unexpected(exc: Exception, command: str, debug: bool) -> int:
    """An exception fastdiff did not foresee: a bug. Say so briefly; exit 2, never 1."""
    if debug:
        traceback.print_exception(exc)
    detail = str(exc).splitlines()[0] if str(exc).strip() else ""
    what = type(exc).__name__ + (f": {detail}" if detail else "")
    print(
        f"fastdiff: error: {command} failed unexpectedly ({what}). This is a bug in fastdiff: "
        f"please report it, with the command line, to {BUG_REPORTS}"
        + (" and the traceback above" if debug else
           "; run with --debug or FASTDIFF_DEBUG=1 for the traceback"),
        file=sys.stderr,
    )  # fmt: skip
    return EXIT_TROUBLE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (0 identical, 1 diverged, 2 trouble,
    130 interrupted). Whatever goes wrong, the code is never 1 unless runs differ:
    an unexpected exception is reported in one line as a bug, with exit 2."""
    words = sys.argv[1:] if argv is None else list(argv)
    debug = _debug_requested(words)
    command = "fastdiff"
    try:
        args = build_parser().parse_args(words)
        command = f"fastdiff {args.command}"
        debug = debug or args.debug
        return _COMMANDS[args.command](args)
    except FastdiffError as exc:
        print(f"fastdiff: error: {exc}", file=sys.stderr)
        return EXIT_TROUBLE
    except KeyboardInterrupt:
        print("fastdiff: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # A reader that went away: nothing more can be said there, and nothing
        # needs saying here (write_stdout already handles the usual case).
        _silence_stdout()
        return EXIT_TROUBLE
    except Exception as exc:
        return _unexpected(exc, command, debug)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
