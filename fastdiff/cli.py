"""The command line: parse arguments, call the library, print, exit.

Nothing heavy is imported here: numpy and numba load only when a pair
differs (``kernel``). Library errors become one ``fastdiff: error: ...``
line on stderr and exit code 2; a closed pipe (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence

from . import __version__
from .errors import EXIT_INTERRUPTED, EXIT_TROUBLE, FastdiffError
from .pool import EXECUTORS

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastdiff",
        description="Compare the binary state dumps of two training runs, bitwise and fast.",
    )
    parser.add_argument("--version", action="version", version=f"fastdiff {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    cmp = sub.add_parser(
        "compare",
        help="compare two run folders (exit 0 identical, 1 diverged, 2 trouble)",
        description="Compare the step_<N>_<name>.bin dumps of two runs. Exit status: "
        "0 identical, 1 diverged, 2 trouble (missing folder, malformed or unreadable file, "
        "nothing to compare).",
    )
    cmp.add_argument("run_a", metavar="RUN_A", help="folder of the first run")
    cmp.add_argument("run_b", metavar="RUN_B", help="folder of the second run")
    schema = cmp.add_argument_group("schema")
    schema.add_argument(
        "--schema",
        default="rl-state",
        metavar="NAME|FILE.toml",
        help="a preset (rl-state, raw) or a TOML schema file (default: rl-state); "
        "'fastdiff schema' prints one to start from",
    )
    schema.add_argument(
        "--default-dtype",
        metavar="DTYPE",
        help="element type of buffers in no group (default: the schema's, u8)",
    )
    tol = cmp.add_argument_group("tolerance (default: exact, every bit counts)")
    tol.add_argument(
        "--atol",
        type=_non_negative_float,
        metavar="X",
        help="absolute tolerance: |a-b| <= atol + rtol*|b| is within",
    )
    tol.add_argument("--rtol", type=_non_negative_float, metavar="X", help="relative tolerance")
    tol.add_argument(
        "--ulp",
        type=_non_negative_int,
        metavar="N",
        help="within N units in the last place (integers: |a-b| <= N)",
    )
    tol.add_argument(
        "--nan-equal", action="store_true", help="any NaN equals any NaN, whatever the payload"
    )
    out = cmp.add_argument_group("output")
    out.add_argument("--format", choices=("text", "json"), default="text")
    out.add_argument("-v", "--verbose", action="store_true", help="list every buffer")
    perf = cmp.add_argument_group("performance")
    perf.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="auto",
        help="auto (default): in-process for small totals, else threads",
    )
    perf.add_argument(
        "--jobs",
        type=_positive_int,
        metavar="N",
        help="workers (default: the cores this process may use)",
    )
    perf.add_argument(
        "--chunk-size",
        type=parse_size,
        default=None,
        metavar="BYTES",
        help="hash chunk size, a multiple of 8 (default: 4M)",
    )
    perf.add_argument(
        "--engine",
        choices=("auto", "numba", "numpy"),
        default="auto",
        help="kernel for differing chunks (auto: numpy for small differences, else numba)",
    )

    sch = sub.add_parser("schema", help="print a schema as TOML (a start for your own)")
    sch.add_argument("name", nargs="?", default="rl-state", metavar="NAME|FILE.toml")
    return parser


def write_stdout(text: str) -> None:
    """Write and flush; a reader that went away (``| head``) is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _run_compare(args: argparse.Namespace) -> int:
    from .compare import CompareOptions, compare_runs
    from .hash import DEFAULT_CHUNK_SIZE
    from .kernel import Tolerance
    from .render import render_json, render_text
    from .schema import resolve_schema
    from .verdict import exit_code

    try:
        options = CompareOptions(
            schema=resolve_schema(args.schema, args.default_dtype),
            tolerance=Tolerance(args.atol, args.rtol, args.ulp, args.nan_equal),
            chunk_size=DEFAULT_CHUNK_SIZE if args.chunk_size is None else args.chunk_size,
            engine=args.engine,
            executor=args.executor,
            jobs=args.jobs,
        )
    except ValueError as exc:
        raise FastdiffError(str(exc)) from exc
    report = compare_runs(args.run_a, args.run_b, options)
    for e in report.errors:
        print(f"fastdiff: error: {e.path}: {e.message}", file=sys.stderr)
    text = render_json(report) if args.format == "json" else render_text(report, args.verbose)
    write_stdout(text)
    return exit_code(report)


def _run_schema(args: argparse.Namespace) -> int:
    from .schema import resolve_schema, schema_to_toml

    write_stdout(schema_to_toml(resolve_schema(args.name)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "compare":
            return _run_compare(args)
        return _run_schema(args)
    except FastdiffError as exc:
        print(f"fastdiff: error: {exc}", file=sys.stderr)
        return EXIT_TROUBLE
    except KeyboardInterrupt:
        print("fastdiff: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
