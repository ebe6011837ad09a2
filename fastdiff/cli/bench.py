"""``fastdiff bench``: how fast this machine compares dumps (``fastdiff.bench``)."""

from __future__ import annotations

import sys

from ..options import EXECUTORS
from .common import (
    non_negative_int,
    parse_size,
    performance_options,
    positive_int,
    scale,
    schema_options,
)
from .output import write_stdout
from .spec import STORE_FALSE, STORE_TRUE, Arg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

DESCRIPTION = (
    "Time fastdiff on synthetic dumps written to a temporary folder: a ladder of buffer sizes "
    "from 4 KiB up to --max-size, identical and with one difference near the end, for --jobs "
    "1, 2, 4, ... up to the cores, against the floor of reading both files once (the faster "
    "of a readinto loop and xxh3 over a memory map). fastdiff is timed in-process (a library "
    "call per sample: no interpreter start-up or imports). Progress goes to stderr when it "
    "is a terminal."
)

ARGUMENTS = (
    Arg(
        "--max-size",
        type=parse_size,
        default=1 << 30,
        metavar="BYTES",
        help="largest buffer of the ladder (default: 1G; lowered to what free memory and "
        "disk allow)",
    ),
    Arg(
        "--no-ladder",
        dest="ladder",
        action=STORE_FALSE,
        help="skip the ladder (with --like: measure the like run only)",
    ),
    Arg("--like", metavar="RUN", help="also a run shaped like RUN (folder or manifest)"),
    Arg(
        "--checkpoint",
        type=parse_size,
        default=0,
        metavar="BYTES",
        help="also a synthetic safetensors checkpoint pair of about BYTES (e.g. 1G): "
        "transformer-shaped float32 tensors in one model.safetensors per run",
    ),
    Arg(
        "--scale",
        type=scale,
        default=1.0,
        metavar="X",
        help="with --like: file sizes times X (default: 1)",
    ),
    Arg(
        "--repeat",
        type=positive_int,
        default=5,
        metavar="N",
        help="timed samples per case (default: 5; the median is reported)",
    ),
    Arg(
        "--warmup",
        type=non_negative_int,
        default=1,
        metavar="N",
        help="untimed rounds after the check run and calibration (default: 1)",
    ),
    Arg(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: the method and a table (default); json: one object with every sample",
    ),
    Arg("--plot", metavar="FILE.png", help="also draw GB/s against size (needs matplotlib)"),
    Arg("--workdir", metavar="DIR", help="make the temporary folder here"),
    Arg("--keep", action=STORE_TRUE, help="keep the dumps and say where"),
    *schema_options(),
    *performance_options(
        EXECUTORS,
        jobs_help="measure jobs 1, 2, 4, ... up to N (default: the cores this process may use)",
    ),
)


def run(args: Namespace) -> int:
    from ..bench.run import plan_bench, run_bench
    from ..engine.progress import StatusLine
    from ..render.bench import note_text, render_bench_json, render_bench_text
    from .common import given_schema

    if args.plot is not None:  # checked before a long benchmark, as compare checks it
        from .output import check_plot_path

        check_plot_path(args.plot, (args.like,) if args.like is not None else ())
    plan, schema = plan_bench(
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
        schema=given_schema(args),  # None: a --like manifest's own schema, else rl-state
        checkpoint=args.checkpoint,
    )
    for note in plan.notes:
        print(f"fastdiff: {note_text(note)}", file=sys.stderr)
    status = StatusLine() if sys.stderr.isatty() else None
    try:
        result = run_bench(plan, schema, status.show if status else None)
    finally:
        if status is not None:
            status.close()
    if result.kept:
        print(f"fastdiff: dumps kept in {result.folder}", file=sys.stderr)
    if args.format == "json":
        write_stdout(render_bench_json(result))
    else:
        # The notes went to stderr at the start; on one terminal, not twice.
        same_screen = sys.stdout.isatty() and sys.stderr.isatty()
        write_stdout(render_bench_text(result, notes=not same_screen))
    if args.plot:
        from ..bench.plot import write_plot

        write_plot(result, args.plot)
        print(f"fastdiff: plot written to {args.plot}", file=sys.stderr)
    return 0
