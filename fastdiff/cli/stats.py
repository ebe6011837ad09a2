"""``fastdiff stats RUN``: how big a run's dumps are, from their sizes alone."""

from __future__ import annotations

from ..errors import EXIT_TROUBLE
from .common import given_schema, non_negative_int, schema_options
from .output import print_note, print_problems, write_stdout
from .spec import Arg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

DESCRIPTION = (
    "How big a run's dumps are, from their sizes alone (nothing is read): per step and group "
    "the files, elements, bytes and dtypes; totals; the largest buffers; buffers missing at "
    "some steps; malformed sizes. RUN is a run folder or a manifest from 'fastdiff hash'. "
    "Exit status: 0, or 2 on trouble (missing run, no dumps, an unreadable entry)."
)

ARGUMENTS = (
    Arg("run", metavar="RUN", help="run folder (or manifest)"),
    Arg(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: tables for people (default); json: one JSON object",
    ),
    Arg(
        "--top",
        type=non_negative_int,
        default=10,
        metavar="N",
        help="list the N largest buffers (default: 10)",
    ),
    *schema_options(),
)


def run(args: Namespace) -> int:
    from ..model.results import Problem
    from ..render.stats import render_stats_json, render_stats_text
    from ..stats import stats_for

    stats = stats_for(args.run, given_schema(args), args.top)
    for note in stats.notes:
        print_note(note)
    # A malformed file is trouble, as compare and hash say: one line each, exit 2.
    bad = [Problem(m.path or m.name, m.message, kind="malformed") for m in stats.malformed]
    print_problems([*stats.errors, *bad])
    write_stdout(render_stats_json(stats) if args.format == "json" else render_stats_text(stats))
    return EXIT_TROUBLE if stats.errors or stats.malformed else 0
