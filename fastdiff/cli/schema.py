"""``fastdiff schema [NAME|FILE.toml]``: a schema as TOML, a start for your own."""

from __future__ import annotations

from .output import write_stdout
from .spec import Arg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

DESCRIPTION = (
    "Print a schema as TOML: a preset, or a schema file read and checked as compare would read "
    "it. A start for your own: fastdiff schema > my.toml, edit, then --schema my.toml."
)

ARGUMENTS = (
    Arg(
        "name",
        nargs="?",
        default="rl-state",
        metavar="NAME|FILE.toml",
        help="a preset (rl-state, raw) or a TOML schema file (default: rl-state)",
    ),
)


def run(args: Namespace) -> int:
    from ..schema import resolve_schema, schema_to_toml

    write_stdout(schema_to_toml(resolve_schema(args.name, what="fastdiff schema")))
    return 0
