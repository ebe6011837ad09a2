"""The argparse parsers, built from the commands' declarations (``spec.Arg``).

Imported only when argparse is needed: ``-h``, abbreviations and other
cases ``spec.fast_parse`` leaves to it, and every usage error, which argparse
words and which ends as one ``fastdiff: error: ...`` line with exit code 2.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__
from ..errors import EXIT_TROUBLE
from .commands import COMMANDS, DESCRIPTION, command_module
from .spec import APPEND, DEBUG, STORE, SUPPRESS, VERSION, BadValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

    from .spec import Arg, Exclusive


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one ``fastdiff: error:`` line and exit 2.

    An unknown option is named first, whatever argparse stumbled on (the
    runs it swallowed as a value, say), with the closest known one
    (``hints``), and the help pointed at is the command's own.
    """

    def __init__(self, *, declared: Sequence[Arg] = (), command: str = "", **kw: Any) -> None:
        super().__init__(**kw)
        self.declared = tuple(declared)  # what ``hints`` checks the words against
        self.command = command  # the command's name; "" at the top level
        self.commands: dict[str, _Parser] = {}  # at the top of the tree: each command's
        self.words: list[str] | None = None  # the words being parsed

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # Also how the tree hands a command its words: they are kept for ``error``.
        self.words = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self.words, namespace)

    def error(self, message: str) -> NoReturn:
        prog, unknown = self._unknown()
        if unknown is not None:
            message = unknown
        self.exit(EXIT_TROUBLE, f"fastdiff: error: {message} (see '{prog} --help')\n")

    def _unknown(self) -> tuple[str, str | None]:
        """(the program whose help to point at, the error for the first unknown
        option of the words parsed, or None)."""
        from .hints import describe, unknown_options

        words = self.words or []
        at = len(words)
        if self.commands:  # the top level: its options (none takes a value), the command
            starts = (i for i, word in enumerate(words) if word == "--" or word[:1] != "-")
            at = next(starts, at)
        unknown = unknown_options(self.declared, words[:at])
        if unknown:
            owners = [
                name
                for name, parser in self.commands.items()
                if any(unknown[0] in arg.names for arg in parser.declared)
            ]
            if owners:  # "fastdiff --format json compare ...": in the wrong place
                return self.prog, (
                    f"unknown option {unknown[0]!r} before the command; it is an option of "
                    f"{', '.join(owners)}: give it after the command's name"
                )
            return self.prog, describe(unknown, self.declared, self.command)
        command = self.commands.get(words[at]) if at < len(words) else None
        if command is not None:
            return command._unknown()
        return self.prog, None


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


#: The options before the command (``-h`` aside), as ``hints`` checks them.
TOP_LEVEL = (VERSION, DEBUG)


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
        if arg.action in (STORE, APPEND):
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
    declared = (*module.ARGUMENTS, DEBUG)
    parser = _Parser(
        prog=f"fastdiff {name}", description=module.DESCRIPTION, declared=declared, command=name
    )
    add_arguments(parser, declared)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The whole tree: ``fastdiff`` and every command (each module imported)."""
    parser = _Parser(prog="fastdiff", description=DESCRIPTION, declared=TOP_LEVEL)
    parser.add_argument(
        *VERSION.names, action="version", version=f"fastdiff {__version__}", help=VERSION.help
    )
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="what to do (each has --help)"
    )
    for name, (_, summary) in COMMANDS.items():
        module = command_module(name)
        declared = (*module.ARGUMENTS, DEBUG)
        command = sub.add_parser(
            name, help=summary, description=module.DESCRIPTION, declared=declared, command=name
        )
        add_arguments(command, declared)
        parser.commands[name] = command
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
