"""``fastdiff hash RUN``: write a run's manifest (file list and chunk digests)."""

from __future__ import annotations

import sys

from ..options import EXECUTORS
from .common import (
    RECORDS_IN_MANIFEST,
    cache_options,
    common_options,
    digest_cache,
    options_of,
)
from .output import print_problems, write_stdout
from .spec import Arg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

DESCRIPTION = (
    "Hash every dump of a run and write a manifest that compare and sweep accept in place "
    "of the run folder."
)

ARGUMENTS = (
    Arg("run", metavar="RUN", help="run folder"),
    Arg("-o", "--output", metavar="FILE", help="manifest to write (default: stdout)"),
    *common_options(EXECUTORS, RECORDS_IN_MANIFEST),
    *cache_options(default_cache=True),
)


def run(args: Namespace) -> int:
    from ..hashrun import hash_manifest

    options = options_of(args)
    cache = digest_cache(args, [args.run])
    try:
        result = hash_manifest(args.run, options, cache=cache, output=args.output)
    finally:
        if cache is not None:
            cache.close()
    text, problems = result.text, result.problems
    print_problems(problems)
    if not result.written:
        print("fastdiff: error: no manifest written: fix the errors above", file=sys.stderr)
        return result.exit_code
    if args.output is None:
        write_stdout(text)
    if problems:  # malformed files: hashed and recorded, and trouble, as compare says
        where = "written" if args.output is None else f"written to {args.output}"
        print(
            f"fastdiff: error: the manifest was {where} with {len(problems)} malformed "
            f"{'file' if len(problems) == 1 else 'files'} recorded in it (key 'malformed'); "
            "compare and stats report them as malformed too",
            file=sys.stderr,
        )
    return result.exit_code
