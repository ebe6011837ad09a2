"""``fastdiff schema [NAME|FILE.toml] [--from RUN]``: a schema as TOML, a start for your own."""

from __future__ import annotations

from .output import print_note, write_stdout
from .spec import Arg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

    from ..schema import Schema

DESCRIPTION = (
    "Print a schema as TOML: a preset, or a schema file read and checked as compare would read "
    "it. A start for your own: fastdiff schema > my.toml, edit, then --schema my.toml. With "
    "--from RUN: only the members the run has, and its other buffers in a group of their own "
    "to give dtypes to."
)

ARGUMENTS = (
    Arg(
        "name",
        nargs="?",
        default="rl-state",
        metavar="NAME|FILE.toml",
        help="a preset (rl-state, raw) or a TOML schema file (default: rl-state)",
    ),
    Arg(
        "--from",
        dest="run",
        metavar="RUN",
        help="a run folder (or manifest): keep the members it has, and list its buffers in no "
        "group, with the default dtype, in a group 'new'",
    ),
    Arg(
        "--default-dtype",
        metavar="DTYPE",
        help="the schema's default dtype, given to the buffers in no group (default: the "
        "schema's, u8); numpy's names (float32, <f4) are written as fastdiff's (f32)",
    ),
)


def run(args: Namespace) -> int:
    from ..schemafile import resolve_schema, schema_to_toml

    warnings: list[str] = []
    schema = resolve_schema(args.name, args.default_dtype, "fastdiff schema", warnings)
    for warning in warnings:
        print_note(warning)
    if args.run is not None:
        schema = _for_run(schema, args.run)
    write_stdout(schema_to_toml(schema))
    return 0


def _for_run(schema: Schema, run: str) -> Schema:
    import os

    from ..errors import FastdiffError
    from ..schemafile import schema_for_run
    from ..sources import open_run

    listing = open_run(run).listing
    if listing.errors and not listing.files:
        raise FastdiffError(f"--from {listing.errors[0].path}: {listing.errors[0].message}")
    if not listing.files:
        raise FastdiffError(
            f"--from {run}: no step_<N>_<name>.bin dumps in it; give the folder that holds them"
        )
    name = os.path.basename(os.path.abspath(run)) or "run"
    return schema_for_run(schema, (f.name for f in listing.files), f"{name}-schema")
