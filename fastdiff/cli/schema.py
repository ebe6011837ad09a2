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
    "to give dtypes to (the dtype its files' headers give, where they do: .npy dumps, a "
    "recorder's run)."
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
        "group in a group 'new', each with the dtype its files' headers give (.npy), else the "
        "default dtype, marked not set ('u8?')",
    ),
    Arg(
        "--default-dtype",
        metavar="DTYPE",
        help="the schema's default dtype, given to the buffers in no group whose files give "
        "none (default: the schema's, u8); numpy's names (float32, <f4) are written as "
        "fastdiff's (f32)",
    ),
)


def run(args: Namespace) -> int:
    from ..presets import FILES, path_of, resolve_schema
    from ..schemafile import schema_to_toml

    if args.name in FILES and args.run is None and args.default_dtype is None:
        # A preset as it is packaged, with the comments that explain it.
        with open(path_of(args.name), encoding="utf-8") as fh:
            write_stdout(fh.read())
        return 0
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
    # The dtype the files' headers give a buffer (compare reads it so), where
    # every file of it gives the same one.
    headers: dict[str, set[str | None]] = {}
    for f in listing.files:
        headers.setdefault(f.name, set()).add(f.dtype)
    dtypes = {n: d for n, (d, *more) in headers.items() if d is not None and not more}
    return schema_for_run(schema, headers, f"{name}-schema", dtypes)
