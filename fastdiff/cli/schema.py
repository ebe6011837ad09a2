"""``fastdiff schema [NAME|FILE.toml]``: a schema as TOML, a start for your own."""

from __future__ import annotations

from .output import write_stdout
from .spec import Arg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace

DESCRIPTION = None

ARGUMENTS = (Arg("name", nargs="?", default="rl-state", metavar="NAME|FILE.toml"),)


def run(args: Namespace) -> int:
    from ..schema import resolve_schema, schema_to_toml

    write_stdout(schema_to_toml(resolve_schema(args.name, what="fastdiff schema")))
    return 0
