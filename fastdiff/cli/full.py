"""The argparse parsers, built from the commands' declarations (``spec.Arg``).

Imported only when argparse is needed: ``-h``, abbreviations and other
cases ``spec.fast_parse`` leaves to it, and every usage error, which argparse
words and which ends as one ``fastdiff: error: ...`` line with exit code 2.
"""

from __future__ import annotations

import argparse

from .. import __version__
from ..errors import EXIT_TROUBLE
from .commands import COMMANDS, DESCRIPTION, command_module
from .spec import DEBUG, STORE, SUPPRESS, BadValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import NoReturn

    from .spec import Arg, Exclusive


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one ``fastdiff: error:`` line and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_TROUBLE, f"fastdiff: error: {message} (see '{self.prog} --help')\n")


def _argparse_type(convert: Callable[[str], object]) -> Callable[[str], object]:
    """A converter whose ``BadValue`` becomes argparse's ``ArgumentTypeError``,
    so that argparse shows its message."""

    def checked(text: str) -> object:
        try:
            return convert(text)
        except BadValue as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    checked.__name__ = convert.__name__
    return checked


def add_arguments(parser: argparse.ArgumentParser, arguments: Sequence[Arg]) -> None:
    """Declare ``arguments`` to ``parser``, in their order, with their help
    sections and mutually exclusive sets."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    exclusives: dict[Exclusive, argparse._MutuallyExclusiveGroup] = {}
    for arg in arguments:
        container: argparse._ActionsContainer = parser
        if arg.group is not None:
            if arg.group not in groups:
                groups[arg.group] = parser.add_argument_group(arg.group)
            container = groups[arg.group]
        if arg.exclusive is not None:
            if arg.exclusive not in exclusives:
                exclusives[arg.exclusive] = container.add_mutually_exclusive_group(
                    required=arg.exclusive.required
                )
            container = exclusives[arg.exclusive]
        keywords: dict[str, object] = {"action": arg.action, "help": arg.help}
        if arg.names:
            keywords["dest"] = arg.dest
        keywords["default"] = argparse.SUPPRESS if arg.default is SUPPRESS else arg.default
        if arg.action == STORE:
            if arg.type is not None:
                keywords["type"] = _argparse_type(arg.type)
            if arg.choices is not None:
                keywords["choices"] = arg.choices
            if arg.metavar is not None:
                keywords["metavar"] = arg.metavar
            if arg.nargs is not None:
                keywords["nargs"] = arg.nargs
        container.add_argument(*(arg.names or (arg.dest,)), **keywords)


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one command, as ``fastdiff NAME`` shows it in ``--help``."""
    module = command_module(name)
    parser = _Parser(prog=f"fastdiff {name}", description=module.DESCRIPTION)
    add_arguments(parser, (*module.ARGUMENTS, DEBUG))
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The whole tree: ``fastdiff`` and every command (each module imported)."""
    parser = _Parser(prog="fastdiff", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"fastdiff {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, summary) in COMMANDS.items():
        module = command_module(name)
        command = sub.add_parser(name, help=summary, description=module.DESCRIPTION)
        add_arguments(command, (*module.ARGUMENTS, DEBUG))
    parser.add_argument("--debug", action="store_true", help=DEBUG.help)
    return parser


def parse_command(name: str, words: Sequence[str]) -> argparse.Namespace:
    """argparse's reading of ``fastdiff NAME WORDS``: the namespace, or help
    or a usage error and SystemExit."""
    return command_parser(name).parse_args(words)


def parse_all(words: Sequence[str]) -> argparse.Namespace:
    """argparse's reading of a whole command line (top-level options it alone
    understands, such as abbreviations)."""
    return build_parser().parse_args(words)
